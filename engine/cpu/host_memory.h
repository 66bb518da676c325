// The CPU backend's device memory: host memory, 64-byte aligned. The one non-obvious
// choice: buffers of 2 MiB or more are their own 2 MiB-aligned mappings marked for
// transparent huge pages (madvise, before the first touch), because batch-1 decode reads
// every weight as a few long streams and 16-bit rows of 2 KiB cross a 4 KiB page every
// second row: with 4 KiB pages each stream takes a TLB miss there (so the gain is the
// 16-bit rows'; fp32's 4 KiB rows cross a page once a row). Where the kernel gives no huge
// pages (THP off, no memory to compact) the buffer is ordinary memory.
#pragma once

#include <cstddef>

namespace decodelab::cpu {

// At least `bytes` bytes, 64-byte aligned (contents unspecified); nullptr when the host
// cannot provide them.
void* allocate_host_memory(size_t bytes);
// Frees what allocate_host_memory returned (nullptr is ignored).
void release_host_memory(void* pointer);

}  // namespace decodelab::cpu
