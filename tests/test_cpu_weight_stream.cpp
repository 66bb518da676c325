// The CPU matmul's two weight-stream variants (engine/cpu/weight_stream.h): the variable
// that picks one, and the same bits from both — the variant decides how W is read from
// memory, never the arithmetic.
#include <catch2/catch.hpp>

#include "engine/cpu/weight_stream.h"
#include "engine/base/errors.h"
#include "tests/cpu_test_support.h"

using namespace decodelab;
using namespace decodelab::testing;

TEST_CASE("DECODELAB_WEIGHT_STREAM takes hardware or non-temporal, and nothing else", "[cpu][weight_stream]") {
  CHECK(cpu::parse_weight_stream(nullptr) == cpu::WeightStream::kHardware);
  CHECK(cpu::parse_weight_stream("") == cpu::WeightStream::kHardware);
  CHECK(cpu::parse_weight_stream("hardware") == cpu::WeightStream::kHardware);
  CHECK(cpu::parse_weight_stream("non-temporal") == cpu::WeightStream::kNonTemporal);
  CHECK(std::string(cpu::weight_stream_name(cpu::WeightStream::kNonTemporal)) == "non-temporal");
  try {
    cpu::parse_weight_stream("nta");
    FAIL("'nta' was accepted");
  } catch (const InputError& error) {
    const std::string message = error.what();
    CHECK(message.find("DECODELAB_WEIGHT_STREAM") != std::string::npos);
    CHECK(message.find("hardware or non-temporal") != std::string::npos);
    CHECK(message.find("'nta'") != std::string::npos);
  }
}

TEST_CASE("both weight streams give the same bits, one row, a few rows and panels", "[cpu][weight_stream][invariants]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  const int threads = GENERATE(1, 2);
  const int64_t k = GENERATE(203, 1029);
  CpuFixture fixture;
  BackendOptions options;
  options.threads = threads;
  fixture.backend = make_cpu_backend(options);
  const int64_t n = 389;  // past a multiple of six streams and of four-row blocks
  const Tensor w = fixture.upload(dtype, {n, k}, random_values(static_cast<size_t>(n * k), dtype, 131));
  for (int64_t m : {1, 4, 9}) {  // the streams or blocks, the blocks, the panels
    const Tensor x = fixture.upload(dtype, {m, k}, random_values(static_cast<size_t>(m * k), dtype, 132));
    const Tensor out = fixture.tensor(DType::F32, {m, n});
    std::vector<float> by_variant[2];
    for (cpu::WeightStream variant : {cpu::WeightStream::kHardware, cpu::WeightStream::kNonTemporal}) {
      cpu::ScopedWeightStream scoped(variant);
      REQUIRE(cpu::weight_stream() == variant);
      fixture.backend->matmul(x, w, out, fixture.id());
      by_variant[static_cast<int>(variant)] = fixture.read(out);  // read synchronises the stream
    }
    const std::string report = compare_bitwise(by_variant[1], by_variant[0],
                                               std::string("matmul ") + dtype_name(dtype) + " K=" + std::to_string(k) +
                                                   " M=" + std::to_string(m) + " threads " + std::to_string(threads));
    INFO(report);
    REQUIRE(report.empty());
  }
}

TEST_CASE("the CPU backend names its weight stream in its device description", "[cpu][weight_stream]") {
  CpuFixture fixture;
  cpu::ScopedWeightStream scoped(cpu::WeightStream::kNonTemporal);
  CHECK_THAT(fixture.backend->device_description(), Catch::Contains("non-temporal weight stream"));
}
