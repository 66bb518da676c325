// Choosing the CPU kernel variant by measurement (profiling/measure/kernel_variant_choice.h):
// the rule on given timings, a CPU backend made with a variant running it, and the
// measurement on this machine naming every variant it runs.
#include <catch2/catch.hpp>

#include "engine/backend.h"
#include "engine/cpu/kernel_variant.h"
#include "profiling/measure/kernel_variant_choice.h"

using namespace decodelab;

namespace {

KernelVariantTiming timing(const char* variant, double decode, double prefill, double spread) {
  return {variant, decode, prefill, spread};
}

}  // namespace

TEST_CASE("kernel variant choice: the widest unless another is faster beyond the spread", "[kernel_variant_choice]") {
  SECTION("another variant faster by more than the spread is chosen") {
    const KernelVariantChoice choice =
        choose_kernel_variant({timing("avx512", 1.0, 1.0, 0.02), timing("avx2", 0.9, 0.8, 0.03)});
    CHECK(choice.chosen == "avx2");
    CHECK(choice.reason.find("faster") != std::string::npos);
  }
  SECTION("within the spread the widest stays") {
    const KernelVariantChoice choice =
        choose_kernel_variant({timing("avx512", 1.0, 1.0, 0.10), timing("avx2", 0.95, 0.97, 0.02)});
    CHECK(choice.chosen == "avx512");
    CHECK(choice.reason.find("within") != std::string::npos);
  }
  SECTION("a variant faster at one op but slower at the other is judged on both") {
    const KernelVariantChoice choice =
        choose_kernel_variant({timing("avx512", 1.0, 1.0, 0.01), timing("avx2", 0.9, 1.3, 0.01)});
    CHECK(choice.chosen == "avx512");
  }
  SECTION("the fastest of several, widest first") {
    const KernelVariantChoice choice = choose_kernel_variant(
        {timing("avx512", 1.0, 1.0, 0.01), timing("avx2", 0.8, 0.8, 0.01), timing("portable", 0.7, 0.7, 0.01)});
    CHECK(choice.chosen == "portable");
    CHECK(to_json(choice)["timings"].size() == 3);
  }
  CHECK(choose_kernel_variant({}).chosen.empty());
}

TEST_CASE("a CPU backend made with a kernel variant runs it, and one made without runs the widest",
          "[kernel_variant_choice][cpu]") {
  if (cpu::kernel_variant_from_environment()) return;  // the variable decides: nothing to prefer
  BackendOptions options;
  const std::unique_ptr<Backend> plain = make_backend(BackendKind::Cpu, options);
  const std::vector<std::string> variants = plain->kernel_variants();
  REQUIRE_FALSE(variants.empty());
  CHECK(variants.back() == "portable");
  CHECK(cpu::kernel_variant() == variants.front());
  options.cpu_kernels = "portable";
  {
    const std::unique_ptr<Backend> narrow = make_backend(BackendKind::Cpu, options);
    CHECK(cpu::kernel_variant() == "portable");
    CHECK(narrow->device_description().find("portable") != std::string::npos);
  }
  options.cpu_kernels = "";
  (void)make_backend(BackendKind::Cpu, options);
  CHECK(cpu::kernel_variant() == variants.front());
  options.cpu_kernels = "no-such-variant";
  CHECK_THROWS(make_backend(BackendKind::Cpu, options));
  cpu::prefer_kernel_variant("");
}

TEST_CASE("the kernel variants measured on this machine: each it runs, timed, one chosen, the kernels restored",
          "[kernel_variant_choice][cpu]") {
  KernelVariantOptions options;
  options.threads = 1;
  options.repeats = 3;
  options.width = 256;
  options.decode_bytes = size_t{8} << 20;
  options.prefill_rows = 16;
  const std::string before = cpu::kernel_variant();
  const KernelVariantChoice choice = measure_kernel_variants(options);
  BackendOptions plain;
  REQUIRE(choice.timings.size() == make_backend(BackendKind::Cpu, plain)->kernel_variants().size());
  for (const KernelVariantTiming& timing : choice.timings) {
    INFO(timing.variant);
    CHECK(timing.decode_matvec_seconds > 0);
    CHECK(timing.prefill_panel_seconds > 0);
  }
  CHECK(cpu::kernel_variant_supported(choice.chosen));
  CHECK_FALSE(choice.reason.empty());
  CHECK(cpu::kernel_variant() == before);
}
