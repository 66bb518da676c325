// Page-locked host memory for the stream's host transfers. upload_async copies the
// caller's bytes into a pinned block at enqueue (the caller may reuse its buffer at
// once) and the block stays busy until the stream passes an event recorded after the
// copy; copy_to_host reads through one reusable pinned block.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

namespace decodelab::cuda {

class PinnedStaging {
 public:
  PinnedStaging() = default;
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // A pinned copy of host_source, to be the source of one cudaMemcpyAsync on `stream`;
  // call release_after(stream) right after enqueueing that copy.
  const void* stage(const void* host_source, size_t bytes);
  void release_after(cudaStream_t stream);

  // A pinned buffer of at least `bytes` for a blocking device-to-host read.
  void* read_buffer(size_t bytes);

 private:
  struct Block {
    void* data = nullptr;
    size_t bytes = 0;
    cudaEvent_t done = nullptr;  // recorded after the copy that reads the block
    bool busy = false;
  };
  bool still_busy(Block& block);

  std::vector<Block> blocks_;
  int last_staged_ = -1;
  void* read_block_ = nullptr;
  size_t read_bytes_ = 0;
};

}  // namespace decodelab::cuda
