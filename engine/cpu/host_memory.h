// The CPU backend's device memory: host memory, 64-byte aligned. The one non-obvious
// choice: buffers of 2 MiB or more are their own 2 MiB-aligned mappings marked for
// transparent huge pages (madvise, before the first touch), because batch-1 decode reads
// every weight as a few long streams and 16-bit rows of 2 KiB cross a 4 KiB page every
// second row: with 4 KiB pages each stream takes a TLB miss there. Measured on the Zen 3
// VM (THP in madvise mode), lab-small's step of fp16 matvecs, the same weights in both
// kinds of memory, rounds interleaved in one process: 2 threads 1.10-1.14x (medians of
// 30-100 rounds), 1 thread 1.10x; fp32 (4 KiB rows) 1.02x. Where the kernel gives no huge
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
