// Scratch slots: grow by at least half again, so that a run with slowly growing shapes
// (no_kv_cache prefixes) allocates a few times, not every step.
#include "engine/cuda/memory/scratch_arena.h"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "engine/cuda/cuda_check.h"

namespace decodelab::cuda {

ScratchArena::~ScratchArena() {
  // Errors are ignored here: a destructor cannot report them, and the process may be
  // tearing down after a device fault.
  for (const Slot& slot : slots_) cudaFree(slot.data);
  for (void* block : retired_) cudaFree(block);
}

void* ScratchArena::get(int slot_index, size_t bytes, bool may_allocate) {
  if (slot_index < 0) return nullptr;
  if (static_cast<size_t>(slot_index) >= slots_.size()) slots_.resize(static_cast<size_t>(slot_index) + 1);
  Slot& slot = slots_[static_cast<size_t>(slot_index)];
  if (bytes <= slot.bytes) return slot.data;
  if (!may_allocate) return nullptr;
  const size_t grown = std::max(bytes, slot.bytes + slot.bytes / 2);
  const size_t rounded = (grown + 255) / 256 * 256;
  void* block = nullptr;
  CUDA_CHECK(cudaMalloc(&block, rounded));
  if (slot.data) retired_.push_back(slot.data);
  slot.data = block;
  slot.bytes = rounded;
  return block;
}

size_t ScratchArena::capacity(int slot_index) const {
  if (slot_index < 0 || static_cast<size_t>(slot_index) >= slots_.size()) return 0;
  return slots_[static_cast<size_t>(slot_index)].bytes;
}

}  // namespace decodelab::cuda
