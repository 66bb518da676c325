// simd.h's batched reduction: vsum16 gives each of sixteen vectors exactly vsum's result
// (same pairing tree), so a matmul tile may reduce sixteen accumulators at once without
// changing a bit of any output. NaN results only need to stay NaN (which payload survives
// an add is the compiler's choice in both).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "engine/cpu/kernels/simd.h"

using namespace decodelab::cpu;

#if defined(DECODELAB_SIMD_AVX512)
TEST_CASE("vsum16 equals sixteen vsums bit for bit", "[cpu][simd]") {
  std::mt19937 generator(5);
  std::uniform_real_distribution<float> uniform(-1e3f, 1e3f);
  const float specials[] = {0.0f, -0.0f, 1e-42f, -1e-42f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 3.4e38f, -3.4e38f};
  for (int trial = 0; trial < 20000; ++trial) {
    VFloat in[16];
    for (VFloat& vector : in) {
      alignas(64) float lanes[kLanes];
      for (float& lane : lanes) {
        const unsigned pick = generator() % 40;
        lane = pick < 8 ? specials[pick] : uniform(generator) * (pick % 5 == 0 ? 1e-30f : 1.0f);
      }
      vector = vload(lanes);
    }
    float batched[16];
    vsum16(in, batched);
    for (int i = 0; i < 16; ++i) {
      const float single = vsum(in[i]);
      if (std::isnan(single)) {
        REQUIRE(std::isnan(batched[i]));
      } else {
        INFO("trial " << trial << " vector " << i << ": " << batched[i] << " vs " << single);
        REQUIRE(std::memcmp(&batched[i], &single, sizeof(float)) == 0);
      }
    }
  }
}
#endif
