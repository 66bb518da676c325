// Device scratch memory for ops that need temporary space (attention's per-split
// partial results, a mixed-dtype matmul's staged operands), one growing buffer per slot.
// The non-obvious choice: a buffer that is outgrown is retired, not freed, until the
// arena dies, because a captured CUDA graph may still hold its address; and no buffer
// is allocated while a capture is in progress (allocation is illegal then): get()
// returns nullptr and the caller adapts (smaller attention plan) or explains.
#pragma once

#include <cstddef>
#include <vector>

namespace decodelab::cuda {

class ScratchArena {
 public:
  ScratchArena() = default;
  ~ScratchArena();
  ScratchArena(const ScratchArena&) = delete;
  ScratchArena& operator=(const ScratchArena&) = delete;

  // At least `bytes` of device memory for `slot` (valid until the next get() of that
  // slot); nullptr when the slot must grow while `may_allocate` is false.
  void* get(int slot, size_t bytes, bool may_allocate);
  // Bytes the slot holds now (what a capture may use without allocating).
  size_t capacity(int slot) const;

 private:
  struct Slot {
    void* data = nullptr;
    size_t bytes = 0;
  };
  std::vector<Slot> slots_;
  std::vector<void*> retired_;
};

}  // namespace decodelab::cuda
