// Device memory of the CPU backend (see host_memory.h): small buffers from the heap,
// large ones as 2 MiB-aligned anonymous mappings advised for transparent huge pages. The
// mappings' lengths are kept here, since munmap needs them and the Backend interface
// frees by pointer alone.
#include "engine/cpu/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace decodelab::cpu {

namespace {

constexpr size_t kHugePageBytes = size_t{2} << 20;
const size_t kPageBytes = static_cast<size_t>(::sysconf(_SC_PAGESIZE));

struct Mappings {
  std::mutex mutex;
  std::unordered_map<void*, size_t> lengths;  // mapping start -> length
};

Mappings& mappings() {
  static Mappings instance;
  return instance;
}

size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// A mapping of `length` bytes (a multiple of kPageBytes) starting on a 2 MiB boundary: map
// one huge page more, then unmap the unaligned head and the tail. Only the whole 2 MiB
// ranges inside it can become huge pages; the last partial one stays in 4 KiB pages, so
// no buffer takes more memory than its own pages.
void* map_aligned(size_t length) {
  void* mapped = ::mmap(nullptr, length + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t aligned = round_up(start, kHugePageBytes);
  if (aligned > start) ::munmap(mapped, aligned - start);
  const size_t tail = start + length + kHugePageBytes - (aligned + length);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + length), tail);
  return reinterpret_cast<void*>(aligned);
}

}  // namespace

void* allocate_host_memory(size_t bytes) {
  if (bytes < kHugePageBytes) return std::aligned_alloc(64, round_up(std::max<size_t>(bytes, 1), 64));
  const size_t length = round_up(bytes, kPageBytes);
  void* pointer = map_aligned(length);
  if (!pointer) return nullptr;
#if defined(MADV_HUGEPAGE)
  ::madvise(pointer, length, MADV_HUGEPAGE);  // advice only: without THP the pages stay 4 KiB
#endif
  Mappings& all = mappings();
  std::lock_guard<std::mutex> lock(all.mutex);
  all.lengths.emplace(pointer, length);
  return pointer;
}

void release_host_memory(void* pointer) {
  if (!pointer) return;
  Mappings& all = mappings();
  {
    std::lock_guard<std::mutex> lock(all.mutex);
    const auto found = all.lengths.find(pointer);
    if (found != all.lengths.end()) {
      ::munmap(pointer, found->second);
      all.lengths.erase(found);
      return;
    }
  }
  std::free(pointer);
}

}  // namespace decodelab::cpu
