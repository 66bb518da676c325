// Pinned staging blocks, reused once their copy has run. Pinning is slow (it maps and
// locks pages), so blocks are kept for the backend's lifetime and only added when every
// block of sufficient size is still in flight.
#include "engine/cuda/memory/pinned_staging.h"

#include <algorithm>
#include <cstring>

#include "engine/cuda/cuda_check.h"

namespace decodelab::cuda {

namespace {
constexpr size_t kMinimumBlock = 64 * 1024;
constexpr size_t kMaximumBlocks = 64;
}  // namespace

PinnedStaging::~PinnedStaging() {
  // The owner synchronised its stream first; errors cannot be reported from here.
  for (Block& block : blocks_) {
    if (block.done) cudaEventDestroy(block.done);
    cudaFreeHost(block.data);
  }
  cudaFreeHost(read_block_);
}

bool PinnedStaging::still_busy(Block& block) {
  if (!block.busy) return false;
  const cudaError_t status = cudaEventQuery(block.done);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();  // "not ready" is an answer: keep it out of the next launch check
    return true;
  }
  CUDA_CHECK(status);
  block.busy = false;
  return false;
}

const void* PinnedStaging::stage(const void* host_source, size_t bytes) {
  int chosen = -1;
  for (size_t i = 0; i < blocks_.size() && chosen < 0; ++i) {
    if (blocks_[i].bytes >= bytes && !still_busy(blocks_[i])) chosen = static_cast<int>(i);
  }
  if (chosen < 0 && blocks_.size() >= kMaximumBlocks) {
    // Too many copies in flight: wait for the oldest fitting block rather than pin more.
    for (size_t i = 0; i < blocks_.size() && chosen < 0; ++i) {
      if (blocks_[i].bytes >= bytes) {
        CUDA_CHECK(cudaEventSynchronize(blocks_[i].done));
        blocks_[i].busy = false;
        chosen = static_cast<int>(i);
      }
    }
  }
  if (chosen < 0) {
    Block block;
    block.bytes = std::max(kMinimumBlock, bytes);
    CUDA_CHECK(cudaHostAlloc(&block.data, block.bytes, cudaHostAllocDefault));
    const cudaError_t status = cudaEventCreateWithFlags(&block.done, cudaEventDisableTiming);
    if (status != cudaSuccess) cudaFreeHost(block.data);
    CUDA_CHECK(status);
    blocks_.push_back(block);
    chosen = static_cast<int>(blocks_.size() - 1);
  }
  Block& block = blocks_[static_cast<size_t>(chosen)];
  if (bytes > 0) std::memcpy(block.data, host_source, bytes);
  block.busy = true;
  last_staged_ = chosen;
  return block.data;
}

void PinnedStaging::release_after(cudaStream_t stream) {
  if (last_staged_ < 0) return;
  CUDA_CHECK(cudaEventRecord(blocks_[static_cast<size_t>(last_staged_)].done, stream));
  last_staged_ = -1;
}

void* PinnedStaging::read_buffer(size_t bytes) {
  if (bytes > read_bytes_) {
    const size_t grown = std::max({bytes, kMinimumBlock, read_bytes_ * 2});
    void* block = nullptr;
    CUDA_CHECK(cudaHostAlloc(&block, grown, cudaHostAllocDefault));
    cudaFreeHost(read_block_);  // blocking reads finish before returning: nothing uses it
    read_block_ = block;
    read_bytes_ = grown;
  }
  return read_block_;
}

}  // namespace decodelab::cuda
