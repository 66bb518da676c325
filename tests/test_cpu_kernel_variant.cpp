// The CPU kernels' variants in one binary (engine/cpu/kernel_variant.h): the variable that
// picks one, the refusal of one this CPU cannot run, and every variant this CPU runs
// computing the ops within the dtype tolerance of the others — which is what lets a
// binary built here run right on a CPU with fewer instruction sets. (That it runs at all
// there is checked by tests/cpu-variants-qemu.sh under an emulated older CPU.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "engine/cpu/kernel_variant.h"
#include "engine/base/errors.h"
#include "tests/cpu_test_support.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

std::vector<std::string> supported_variants() {
  std::vector<std::string> supported;
  for (const std::string& variant : cpu::compiled_kernel_variants()) {
    if (cpu::kernel_variant_supported(variant)) supported.push_back(variant);
  }
  return supported;
}

std::string input_error_of(const char* value) {
  try {
    cpu::parse_kernel_variant(value);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("kernel variants: portable always, auto takes the widest this CPU runs", "[cpu][kernel_variant]") {
  const std::vector<std::string> compiled = cpu::compiled_kernel_variants();
  REQUIRE_FALSE(compiled.empty());
  CHECK(compiled.back() == "portable");
  CHECK(cpu::kernel_variant_supported("portable"));
  CHECK_FALSE(cpu::kernel_variant_supported("sse9"));
#if defined(__x86_64__) && defined(DECODELAB_TEST_CPU_DISPATCH)
  CHECK(compiled == std::vector<std::string>{"avx512", "avx2", "portable"});
#endif
  const std::vector<std::string> supported = supported_variants();
  REQUIRE_FALSE(supported.empty());
  CHECK(cpu::parse_kernel_variant(nullptr) == supported.front());
  CHECK(cpu::parse_kernel_variant("") == supported.front());
  CHECK(cpu::parse_kernel_variant("auto") == supported.front());
  for (const std::string& variant : supported) CHECK(cpu::parse_kernel_variant(variant.c_str()) == variant);
}

TEST_CASE("kernel variants: an unknown name or one this CPU cannot run is an input error naming the variable",
          "[cpu][kernel_variant]") {
  const std::string unknown = input_error_of("avx1024");
  CHECK_THAT(unknown, Catch::Contains("DECODELAB_CPU_KERNELS"));
  CHECK_THAT(unknown, Catch::Contains("'avx1024'"));
  CHECK_THAT(unknown, Catch::Contains("portable"));
  for (const std::string& variant : cpu::compiled_kernel_variants()) {
    if (cpu::kernel_variant_supported(variant)) continue;
    const std::string refused = input_error_of(variant.c_str());
    CHECK_THAT(refused, Catch::Contains("cannot run the " + variant));
    CHECK_THROWS_AS(cpu::ScopedKernelVariant(variant), InputError);
  }
}

TEST_CASE("kernel variants: the device description names the instruction sets of the variant in use",
          "[cpu][kernel_variant]") {
  CpuFixture fixture;
  for (const std::string& variant : supported_variants()) {
    cpu::ScopedKernelVariant scoped(variant);
    CHECK(cpu::kernel_variant() == variant);
    const std::string isa = variant == "avx512" ? "AVX-512" : variant == "avx2" ? "AVX2" : "portable";
    CHECK(cpu::kernel_variant_isa() == isa);
    CHECK_THAT(fixture.backend->device_description(), Catch::Contains(", " + isa + ", "));
  }
}

TEST_CASE("kernel variants: every variant this CPU runs gives the same matmul, attention and norm within tolerance",
          "[cpu][kernel_variant][ops]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  CpuFixture fixture;
  const int64_t k = 1029, n = 389;  // past whole vectors and the six streams of a matvec
  const Tensor w = fixture.upload(dtype, {n, k}, random_values(static_cast<size_t>(n * k), dtype, 7));
  const Tensor norm_weight = fixture.upload(dtype, {k}, random_values(static_cast<size_t>(k), dtype, 8, 0.5f, 1.5f));
  std::vector<std::vector<float>> results;  // per variant: matmul rows 1, 4, 9, then rmsnorm
  const std::vector<std::string> variants = supported_variants();
  for (const std::string& variant : variants) {
    cpu::ScopedKernelVariant scoped(variant);
    std::vector<float> all;
    for (int64_t m : {1, 4, 9}) {
      const Tensor x = fixture.upload(dtype, {m, k}, random_values(static_cast<size_t>(m * k), dtype, 9 + m));
      const Tensor out = fixture.tensor(DType::F32, {m, n});
      fixture.backend->matmul(x, w, out, fixture.id());
      const std::vector<float> values = fixture.read(out);
      all.insert(all.end(), values.begin(), values.end());
    }
    const Tensor x = fixture.upload(dtype, {3, k}, random_values(static_cast<size_t>(3 * k), dtype, 20));
    const Tensor normed = fixture.tensor(DType::F32, {3, k});
    fixture.backend->rmsnorm(x, norm_weight, 1e-5f, normed, fixture.id());
    const std::vector<float> values = fixture.read(normed);
    all.insert(all.end(), values.begin(), values.end());
    results.push_back(all);
  }
  // Sums over 1029 products of values in [-1, 1): a different lane count reorders them, so
  // they agree to a few float32 ulps of the sum's size, never bit for bit by design.
  for (size_t v = 1; v < results.size(); ++v) {
    REQUIRE(results[v].size() == results[0].size());
    double worst = 0;
    for (size_t i = 0; i < results[0].size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::abs(results[v][i] - results[0][i])));
    }
    INFO(variants[v] << " against " << variants[0] << ", " << dtype_name(dtype) << ": worst difference " << worst);
    CHECK(worst < 1e-4);
  }
}
