// The CPU backend's device memory (engine/cpu/host_memory.h): every size is 64-byte
// aligned, fully writable and readable back, and released without leaking or mixing up
// the two kinds (heap below 2 MiB, 2 MiB-aligned mappings above); the backend's allocate
// and release use it. Whether the kernel gave huge pages is the machine's choice, so it
// is not asserted.
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/host_memory.h"
#include "engine/device_buffer.h"

using namespace decodelab;

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// Fills the buffer with a pattern derived from `seed` and checks it reads back.
bool holds_a_pattern(void* pointer, size_t bytes, unsigned seed) {
  auto* data = static_cast<unsigned char*>(pointer);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<unsigned char>(i * 31 + seed);
  for (size_t i = 0; i < bytes; ++i)
    if (data[i] != static_cast<unsigned char>(i * 31 + seed)) return false;
  return true;
}

// Whether the page holding `address` is mapped in this process (mincore fails with ENOMEM
// on unmapped pages; it allocates nothing that could be placed there meanwhile).
bool is_mapped(const void* address) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  unsigned char resident = 0;
  return ::mincore(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(address) / page * page), 1, &resident) == 0;
}

}  // namespace

TEST_CASE("cpu host memory: every size is aligned and usable, large buffers start on a 2 MiB boundary",
          "[cpu][memory]") {
  const std::vector<size_t> sizes = {0, 1, 63, 64, 4097, kHugePage - 1, kHugePage, kHugePage + 1, 5 * kHugePage + 12345};
  std::vector<void*> pointers;
  unsigned seed = 1;
  for (size_t bytes : sizes) {
    INFO("bytes " << bytes);
    void* pointer = cpu::allocate_host_memory(bytes);
    REQUIRE(pointer != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(pointer) % 64 == 0);
    if (bytes >= kHugePage) CHECK(reinterpret_cast<uintptr_t>(pointer) % kHugePage == 0);
    CHECK(holds_a_pattern(pointer, bytes, seed++));
    pointers.push_back(pointer);
  }
  // Distinct buffers do not overlap: each still holds its own pattern after all were written.
  seed = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto* data = static_cast<unsigned char*>(pointers[i]);
    bool intact = true;
    for (size_t j = 0; j < sizes[i]; ++j) intact = intact && data[j] == static_cast<unsigned char>(j * 31 + seed);
    ++seed;
    CHECK(intact);
  }
  for (void* pointer : pointers) cpu::release_host_memory(pointer);
  cpu::release_host_memory(nullptr);  // ignored, as free(nullptr)
}

TEST_CASE("cpu host memory: a released large buffer is unmapped, whole", "[cpu][memory]") {
  const size_t bytes = 3 * kHugePage + 100;
  auto* pointer = static_cast<unsigned char*>(cpu::allocate_host_memory(bytes));
  REQUIRE(pointer != nullptr);
  pointer[0] = 1;
  pointer[bytes - 1] = 1;
  CHECK(is_mapped(pointer));
  CHECK(is_mapped(pointer + bytes - 1));
  cpu::release_host_memory(pointer);
  CHECK_FALSE(is_mapped(pointer));
  CHECK_FALSE(is_mapped(pointer + bytes - 1));
}

TEST_CASE("cpu backend: device buffers of both kinds hold their data through the stream", "[cpu][memory]") {
  BackendOptions options;
  options.threads = 1;
  auto backend = make_cpu_backend(options);
  for (size_t bytes : {size_t{256}, 3 * kHugePage + 8}) {
    INFO("bytes " << bytes);
    std::vector<unsigned char> source(bytes), back(bytes, 0);
    for (size_t i = 0; i < bytes; ++i) source[i] = static_cast<unsigned char>(i * 7 + 3);
    DeviceBuffer buffer(*backend, bytes);
    backend->upload(buffer.get(), source.data(), bytes);
    backend->copy_to_host(back.data(), buffer.get(), bytes, /*pinned=*/true, 1);
    CHECK(std::memcmp(source.data(), back.data(), bytes) == 0);
  }
}
