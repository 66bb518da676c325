// engine/cuda/timing/cupti_records.inc: the CUPTI record structs are chosen by CUPTI_API_VERSION,
// and the choice compiles against each toolkit's definitions. Each namespace below stands
// in for one toolkit's cupti.h: it declares only the record structs that toolkit names
// (with the fields the timer reads), so a selection naming a struct the toolkit lacks
// does not compile. Where this build has CUPTI, the installed headers are checked too;
// scripts/cuda12-build.sh compiles this file against a real CUDA 12.x cupti.h, so the
// table below is not only checked against itself.
#include <catch2/catch.hpp>

#include <cstdint>
#include <type_traits>

// The stand-ins come before <cupti.h>: were the real structs visible, a wrong name could
// still resolve to them.
namespace cuda_12_4 {  // CUPTI_API_VERSION 22: GraphTrace (no 2 yet), no per-API switches
#define CUPTI_API_VERSION 22
struct CUpti_ActivityKernel9 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityMemcpy5 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityMemset4 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityGraphTrace { uint64_t start, end; uint32_t correlationId; };
#include "engine/cuda/timing/cupti_records.inc"
constexpr bool kPerApiSwitches = DECODELAB_CUPTI_PER_API_SWITCHES;
#undef CUPTI_API_VERSION
}  // namespace cuda_12_4

namespace cuda_12_6 {  // CUPTI_API_VERSION 24: Kernel9, Memcpy5, Memset4, GraphTrace2
#define CUPTI_API_VERSION 24
struct CUpti_ActivityKernel9 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityMemcpy5 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityMemset4 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityGraphTrace2 { uint64_t start, end; uint32_t correlationId; };
#include "engine/cuda/timing/cupti_records.inc"
constexpr bool kPerApiSwitches = DECODELAB_CUPTI_PER_API_SWITCHES;
#undef CUPTI_API_VERSION
}  // namespace cuda_12_6

namespace cuda_12_8 {  // 26: Memcpy6 arrives
#define CUPTI_API_VERSION 26
struct CUpti_ActivityKernel9 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityMemcpy6 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityMemset4 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityGraphTrace2 { uint64_t start, end; uint32_t correlationId; };
#include "engine/cuda/timing/cupti_records.inc"
constexpr bool kPerApiSwitches = DECODELAB_CUPTI_PER_API_SWITCHES;
#undef CUPTI_API_VERSION
}  // namespace cuda_12_8

namespace cuda_13_0 {  // 130001 (CUDA 13.0 Update 1): Kernel10
#define CUPTI_API_VERSION 130001
struct CUpti_ActivityKernel10 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityMemcpy6 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityMemset4 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityGraphTrace2 { uint64_t start, end; uint32_t correlationId; };
#include "engine/cuda/timing/cupti_records.inc"
constexpr bool kPerApiSwitches = DECODELAB_CUPTI_PER_API_SWITCHES;
#undef CUPTI_API_VERSION
}  // namespace cuda_13_0

namespace cuda_13_1 {  // 130100: Kernel11 (Kernel10 deprecated)
#define CUPTI_API_VERSION 130100
struct CUpti_ActivityKernel11 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityMemcpy6 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityMemset4 { uint64_t start, end; uint32_t correlationId; };
struct CUpti_ActivityGraphTrace2 { uint64_t start, end; uint32_t correlationId; };
#include "engine/cuda/timing/cupti_records.inc"
constexpr bool kPerApiSwitches = DECODELAB_CUPTI_PER_API_SWITCHES;
#undef CUPTI_API_VERSION
}  // namespace cuda_13_1

static_assert(std::is_same_v<cuda_12_6::CuptiKernelRecord, cuda_12_6::CUpti_ActivityKernel9>);
static_assert(std::is_same_v<cuda_12_6::CuptiMemcpyRecord, cuda_12_6::CUpti_ActivityMemcpy5>);
static_assert(std::is_same_v<cuda_12_8::CuptiKernelRecord, cuda_12_8::CUpti_ActivityKernel9>);
static_assert(std::is_same_v<cuda_12_8::CuptiMemcpyRecord, cuda_12_8::CUpti_ActivityMemcpy6>);
static_assert(std::is_same_v<cuda_13_0::CuptiKernelRecord, cuda_13_0::CUpti_ActivityKernel10>);
static_assert(std::is_same_v<cuda_13_0::CuptiMemcpyRecord, cuda_13_0::CUpti_ActivityMemcpy6>);
static_assert(std::is_same_v<cuda_13_1::CuptiKernelRecord, cuda_13_1::CUpti_ActivityKernel11>);
static_assert(std::is_same_v<cuda_13_0::CuptiMemsetRecord, cuda_13_0::CUpti_ActivityMemset4>);
static_assert(std::is_same_v<cuda_12_4::CuptiGraphRecord, cuda_12_4::CUpti_ActivityGraphTrace>);
static_assert(std::is_same_v<cuda_12_6::CuptiGraphRecord, cuda_12_6::CUpti_ActivityGraphTrace2>);
static_assert(std::is_same_v<cuda_13_1::CuptiGraphRecord, cuda_13_1::CUpti_ActivityGraphTrace2>);
// cuptiActivityEnableRuntimeApi/DriverApi are called only where the toolkit has them.
static_assert(!cuda_12_4::kPerApiSwitches && cuda_12_6::kPerApiSwitches && cuda_13_1::kPerApiSwitches);

#if DECODELAB_HAVE_CUDA
#include <cupti.h>
namespace installed {
#include "engine/cuda/timing/cupti_records.inc"
}  // namespace installed
#endif

TEST_CASE("cupti records: each toolkit's selection reads correlation id, start and end", "[cupti_records]") {
  const cuda_12_6::CUpti_ActivityMemcpy5 copy{100, 250, 7};
  const auto read_copy = cuda_12_6::read_cupti_device_record<cuda_12_6::CuptiMemcpyRecord>(&copy);
  CHECK(read_copy.correlation == 7);
  CHECK(read_copy.start == 100);
  CHECK(read_copy.end == 250);
  const cuda_13_0::CUpti_ActivityKernel10 kernel{5, 9, 42};
  const auto read_kernel = cuda_13_0::read_cupti_device_record<cuda_13_0::CuptiKernelRecord>(&kernel);
  CHECK(read_kernel.correlation == 42);
  CHECK(read_kernel.end - read_kernel.start == 4);
  // A graph launch's record: the launch's correlation id and the whole graph's interval.
  const cuda_12_4::CUpti_ActivityGraphTrace graph{1000, 5000, 77};
  const auto read_graph = cuda_12_4::read_cupti_device_record<cuda_12_4::CuptiGraphRecord>(&graph);
  CHECK(read_graph.correlation == 77);
  CHECK(read_graph.end - read_graph.start == 4000);
#if DECODELAB_HAVE_CUDA
  INFO("installed CUPTI_API_VERSION " << CUPTI_API_VERSION);
  installed::CuptiKernelRecord record{};
  record.correlationId = 3;
  record.start = 10;
  record.end = 20;
  const auto read = installed::read_cupti_device_record<installed::CuptiKernelRecord>(&record);
  CHECK(read.correlation == 3);
  CHECK(read.end == 20);
  CHECK(sizeof(installed::CuptiMemcpyRecord) > sizeof(uint64_t) * 2);
#endif
}
