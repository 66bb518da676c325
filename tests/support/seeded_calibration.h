// Test support: a measured CPU spec with round numbers saved as this machine's calibration in
// a test's own cache folder, so that a command run with the returned environment reads those
// roofs and fixed costs instead of calibrating (predict --device measured, run, compare, lab,
// sweep). The file carries this machine's identity, CPU flags and the CPU backend's device
// description at the thread count, as find_calibration requires.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "engine/backend.h"
#include "profiling/device_spec.h"
#include "profiling/measure/calibration.h"
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

// A calibration of this machine at `threads` kernel threads holding `spec` (nothing measured).
inline Calibration calibration_holding(DeviceSpec spec, int threads) {
  Calibration calibration;
  calibration.machine = this_machine(threads);
  calibration.cpu_flags = cpu_flags_that_matter();
  calibration.device = make_backend(BackendKind::Cpu, BackendOptions::with_threads(threads))->device_description();
  calibration.measured_at = 1'700'000'000;
  calibration.decodelab_version = "test";
  calibration.measuring_seconds = 1;
  calibration.machine_check = "quiet (test)";
  spec.machine = calibration.machine;
  if (spec.measured) spec.measured->measured_at = calibration.measured_at;
  calibration.spec = spec;
  return calibration;
}

// Saves `spec` as this machine's calibration at `threads` under `cache`; returns the
// environment prefix ("DECODELAB_CACHE_DIR='...' ") that points a command at it.
inline std::string seed_calibration(const DeviceSpec& spec, const std::filesystem::path& cache, int threads) {
  {
    const ScopedEnv here("DECODELAB_CACHE_DIR", cache.c_str());  // restores what was set before
    save_calibration(calibration_holding(spec, threads), calibration_path(threads));
  }
  return "DECODELAB_CACHE_DIR='" + cache.string() + "' ";
}

}  // namespace decodelab::testing
