// Test support: a measured CPU spec with round numbers saved as this machine's cached roofs
// in a test's own cache folder, so that a command run with the returned environment reads
// those roofs and fixed costs instead of measuring (predict --device measured, compare, lab,
// sweep).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "profiling/device_spec.h"
#include "profiling/measure/roof_cache.h"
#include "profiling/measure/roof_measure.h"
#include "tests/support/scoped_env.h"

namespace decodelab::testing {

// 40 GB/s, 200 GFLOP/s in every precision, a 2 µs read round trip, a 32 MiB cache.
inline DeviceSpec round_measured_spec(const std::string& name) {
  DeviceSpec spec;
  spec.name = name;
  spec.description = "test CPU";
  Roofs roofs;
  roofs.bandwidth = 40e9;
  roofs.fp32_flops = roofs.fp16_flops = roofs.bf16_flops = 200e9;
  roofs.source = "test";
  spec.measured = roofs;
  spec.measured_fixed_costs = FixedCosts{0.05e-6, 1e-6, 2e-6, 0, "test stream costs"};
  spec.measured_cache = CacheLevel{32.0 * 1024 * 1024, 150e9, "test cache"};
  return spec;
}

// Saves `spec` as the cached roofs of this machine at `threads` under `cache`; returns the
// environment prefix ("DECODELAB_CACHE_DIR='...' ") that points a command at them.
inline std::string cache_roofs(DeviceSpec spec, const std::filesystem::path& cache, int threads) {
  spec.machine = this_machine(threads);
  {
    const ScopedEnv here("DECODELAB_CACHE_DIR", cache.c_str());  // restores what was set before
    save_device_spec(spec, roof_cache_path(*spec.machine));
  }
  return "DECODELAB_CACHE_DIR='" + cache.string() + "' ";
}

}  // namespace decodelab::testing
