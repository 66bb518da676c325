// Roof measurement against a scripted backend whose device times follow known roofs
// (copies at 10 GB/s, streaming reads at 15 GB/s; 100, 50, 40 GFLOP/s for fp32, fp16,
// bf16): the measurement must recover them,
// flag noise, fit its buffers into the memory it is given; and a machine without a calibration
// at a thread count is calibrated first, once, into that count's file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include <unistd.h>

#include "profiling/measure/machine_check.h"
#include "profiling/measure/op_timer.h"
#include "profiling/measure/calibration.h"
#include "profiling/measure/default_roofs.h"
#include "profiling/measure/cache_level.h"
#include "profiling/measure/roof_measure.h"
#include "tests/support/cli_runner.h"
#include "tests/support/scoped_env.h"

using namespace decodelab;

namespace {

class ScriptedBackend : public Backend {
 public:
  double bandwidth = 10e9;       // copies (read + write)
  double read_bandwidth = 15e9;  // a matmul's operands
  double attention_bandwidth = 12e9;  // attention's keys, values, queries and outputs
  std::map<DType, double> peaks = {{DType::F32, 100e9}, {DType::F16, 50e9}, {DType::BF16, 40e9}};
  double output_seconds = 0;  // a matmul's cost per output element beside its FLOPs
  size_t memory = size_t{8} << 30;
  bool every_third_copy_slow = false;
  int ramp_copies = 0;  // > 0: the first this many copies ramp from 40% of `bandwidth` to all of it
  int slow_every_nth_sync = 0;  // > 0: ops enqueued after every nth synchronize run 1.5x as long
  bool drop_timings = false;
  int ops_run = 0;
  size_t largest_allocation = 0;

  std::string name() const override { return "cpu"; }
  std::string kernel_variant() const override { return "scripted"; }
  std::string device_description() const override { return "Scripted CPU (2 threads)"; }
  void* allocate(size_t bytes) override {
    largest_allocation = std::max(largest_allocation, bytes);
    return std::malloc(std::max<size_t>(bytes, 1));
  }
  void release(void* pointer) override { std::free(pointer); }
  size_t available_memory() const override { return memory; }
  void upload(void* destination, const void* source, size_t bytes) override { std::memcpy(destination, source, bytes); }
  void upload_async(void*, const void*, size_t, OpId) override {}
  void copy_to_host(void*, const void*, size_t, bool, OpId) override {}
  void synchronize() override { ++syncs_; }
  void marker(OpId) override {}
  std::vector<OpTiming> take_timings() override { return std::exchange(timings_, {}); }
  void embedding(const Tensor&, const Tensor&, const Tensor&, int, const Tensor&, OpId) override {}
  void rmsnorm(const Tensor&, const Tensor&, float, const Tensor&, OpId) override {}
  void matmul(const Tensor& x, const Tensor& weight, const Tensor&, OpId id) override {
    const double flops = 2.0 * static_cast<double>(x.shape[0]) * static_cast<double>(weight.shape[0]) * static_cast<double>(x.shape[1]);
    const double bytes = static_cast<double>(x.bytes() + weight.bytes()) +
                         static_cast<double>(x.shape[0] * weight.shape[0]) * static_cast<double>(dtype_size(x.dtype));
    const double outputs = static_cast<double>(x.shape[0] * weight.shape[0]);
    run(id, std::max(flops / peaks.at(x.dtype), bytes / read_bandwidth) + outputs * output_seconds);
  }
  void rope(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int, OpId) override {}
  void kv_store(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, int, OpId) override {}
  void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor&, int, float, const Tensor& out,
                 OpId id) override {
    ++attention_ops;
    run(id, static_cast<double>(q.bytes() + k_cache.bytes() + v_cache.bytes() + out.bytes()) / attention_bandwidth);
  }
  int attention_ops = 0;
  void swiglu(const Tensor&, const Tensor&, const Tensor&, OpId) override {}
  void add(const Tensor&, const Tensor&, const Tensor&, OpId) override {}
  void argmax(const Tensor&, const Tensor&, const Tensor&, OpId) override {}
  void cast(const Tensor&, const Tensor&, OpId) override {}
  void copy(const Tensor& source, const Tensor&, OpId id) override {
    ++copies_;
    const double slow = every_third_copy_slow && copies_ % 3 == 0 ? 1.5 : 1.0;
    const double ramp = copies_ <= ramp_copies ? 0.4 + 0.6 * (copies_ - 1) / ramp_copies : 1.0;
    run(id, 2.0 * static_cast<double>(source.bytes()) / (bandwidth * ramp) * slow);
  }
  void fill_positions(const Tensor&, int, int, OpId) override {}
  void advance_positions(const Tensor&, OpId) override {}
  double fma_probe(int64_t rounds, OpId id) override {
    if (fma_peak <= 0) return 0;
    const double flops = 1e6 * static_cast<double>(rounds);
    run(id, flops / fma_peak);
    return flops;
  }
  double fma_peak = 0;  // > 0: the backend has an FMA probe running at this rate

 private:
  void run(OpId id, double seconds) {
    ++ops_run;
    if (slow_every_nth_sync > 0 && syncs_ % slow_every_nth_sync == 0) seconds *= 1.5;
    if (drop_timings) return;
    timings_.push_back({id, clock_, clock_ + static_cast<int64_t>(seconds * 1e9)});
    clock_ += static_cast<int64_t>(seconds * 1e9) + 1000;
  }
  std::vector<OpTiming> timings_;
  int64_t clock_ = 1'000'000;
  int copies_ = 0;
  int syncs_ = 0;
};

RoofMeasureOptions small_options() {
  RoofMeasureOptions options;
  options.copy_bytes = size_t{4} << 20;
  options.matmul_size = 128;
  options.repeats = 3;
  options.min_warmup_seconds = 0;  // one warm-up: the scripted device does not ramp
  // One small layer (K = 256 and 512: two depth buckets), two row counts, two contexts.
  options.layer_shapes = {LayerShape{"test", 256, 512, 4, 4, 64}};
  options.efficiency_rows = {1, 4};
  options.efficiency_contexts = {32, 128};
  options.efficiency_repeats = 3;
  return options;
}

// Points the calibrations at a fresh directory for the test's lifetime.
struct TemporaryCache {
  std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("decodelab-roofs-" + std::to_string(::getpid()));
  decodelab::testing::ScopedEnv variable{"DECODELAB_CACHE_DIR", directory.c_str()};
  ~TemporaryCache() { std::filesystem::remove_all(directory); }
};

}  // namespace

TEST_CASE("median and spread of repeated timings", "[roof_measure]") {
  const TimedSamples odd = TimedSamples::of({3, 1, 2}, 0.1);
  CHECK(odd.median == 2);
  CHECK(odd.best == 1);
  CHECK(odd.spread == Approx(1.0));
  CHECK(odd.noisy);
  const TimedSamples even = TimedSamples::of({1.0, 1.02, 1.04, 1.06}, 0.1);
  CHECK(even.median == Approx(1.03));
  CHECK_FALSE(even.noisy);
  CHECK(TimedSamples::of({}, 0.1).median == 0);
  // From five samples on, one held-up repeat at either end is not noise (the best and the
  // median stand); a spread through the middle is.
  const TimedSamples held_up = TimedSamples::of({1.0, 1.01, 3.0, 1.02, 1.03}, 0.1);
  CHECK(held_up.spread == Approx(0.02 / 1.02));
  CHECK_FALSE(held_up.noisy);
  const TimedSamples spread = TimedSamples::of({1.0, 1.1, 1.2, 1.3, 1.4}, 0.1);
  CHECK(spread.spread == Approx(0.2 / 1.2));
  CHECK(spread.noisy);
  // Of ten, two at either end.
  const TimedSamples ten = TimedSamples::of({5.0, 1.0, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 0.5, 1.07}, 0.1);
  CHECK(ten.spread == Approx((1.06 - 1.01) / 1.035));
  CHECK(ten.best == 0.5);
}

TEST_CASE("a memory path that ramps up is warmed up before it is timed", "[roof_measure]") {
  // 4 MiB copies (0.84 ms at 10 GB/s) ramping over their first 10: timed after one warm-up,
  // the ramp reads as noise; after 60 ms of warm-ups, the repeats find the steady rate.
  const size_t bytes = size_t{4} << 20;
  RoofMeasureOptions options;
  options.repeats = 5;
  options.min_warmup_seconds = 0;
  ScriptedBackend cold;
  cold.ramp_copies = 10;
  const CopyMeasurement cold_copy = measure_copy(cold, bytes, options);
  CHECK(cold_copy.timing.warmups == 1);
  CHECK(cold_copy.timing.noisy);
  CHECK(cold_copy.bandwidth < 0.75 * 10e9);

  options.min_warmup_seconds = 0.06;
  ScriptedBackend warmed;
  warmed.ramp_copies = 10;
  const CopyMeasurement warm_copy = measure_copy(warmed, bytes, options);
  CHECK(warm_copy.timing.warmups > 10);
  CHECK(warm_copy.timing.warmup_seconds >= 0.06);
  CHECK(warm_copy.timing.first_warmup == Approx(2.0 * bytes / 4e9).epsilon(1e-3));  // the ramp's 40%
  CHECK_FALSE(warm_copy.timing.noisy);
  CHECK(warm_copy.bandwidth == Approx(10e9).epsilon(1e-3));
}

TEST_CASE("measurement recovers the device's roofs from its own op timings", "[roof_measure]") {
  ScriptedBackend backend;
  const RoofMeasurement measurement = measure_roofs(backend, small_options());

  CHECK(measurement.copy_bandwidth == Approx(10e9).epsilon(1e-4));
  CHECK(measurement.read_bandwidth == Approx(15e9).epsilon(1e-4));
  CHECK(measurement.bandwidth == Approx(15e9).epsilon(1e-4));  // the faster of the two
  CHECK(measurement.copy_bytes_moved == 2.0 * (4 << 20));
  REQUIRE(measurement.matmuls.size() == 3);
  const Roofs roofs = measurement.roofs();
  CHECK(roofs.fp32_flops == Approx(100e9).epsilon(1e-4));
  CHECK(roofs.fp16_flops == Approx(50e9).epsilon(1e-4));
  CHECK(roofs.bf16_flops == Approx(40e9).epsilon(1e-4));
  CHECK_FALSE(measurement.copy.noisy);
  CHECK(roofs.source.find("bytes read + written") != std::string::npos);
  // The efficiency table's timings: the layer's projections by depth bucket (q/k/v, o and
  // gate/up at K = 256, down at K = 512) × 2 row counts × 3 dtypes, and decode attention at
  // 2 contexts × 3 dtypes.
  int matmuls = 0, attentions = 0, attention_ops = 0;
  for (const RoofMeasurement::KernelTiming& kernel : measurement.kernels) {
    CAPTURE(kernel.what);
    if (kernel.category == OpCategory::Matmul) {
      ++matmuls;
      CHECK((kernel.bucket.size_log2 == 8 || kernel.bucket.size_log2 == 9));
    } else {
      REQUIRE(kernel.category == OpCategory::Attention);
      ++attentions;
      attention_ops += kernel.ops;
      CHECK(kernel.bucket.rows_from == 1);
    }
    CHECK(kernel.timing.seconds.size() == 3);
  }
  CHECK(matmuls == 2 * 2 * 3);
  CHECK(attentions == 2 * 3);
  // Each attention op once in the warm-up round and in each of 3 rounds, and the round's
  // first sequence (fp32 at 32 positions) once more before each timed round.
  const RoofMeasurement::KernelTiming* first_attention = nullptr;
  for (const RoofMeasurement::KernelTiming& kernel : measurement.kernels)
    if (kernel.category == OpCategory::Attention && !first_attention) first_attention = &kernel;
  REQUIRE(first_attention);
  CHECK(backend.attention_ops == attention_ops * (1 + 3) + 3 * first_attention->ops);
  // The scripted matmul runs at exactly its roofs, and the roofs are its own: η = 1. Its
  // attention reads its bytes at 12 GB/s against the 15 GB/s roof: η = 0.8.
  REQUIRE(roofs.efficiency.size() == 2 * 2 * 3 + 2 * 3);
  for (const Efficiency& row : roofs.efficiency) {
    CAPTURE(row.category, precision_name(row.precision), row.rows_from, row.size_log2, row.timed);
    CHECK(row.flops == row.bytes);
    CHECK(row.bytes == Approx(row.category == "matmul" ? 1.0 : 0.8).epsilon(1e-3));
    CHECK_FALSE(row.timed.empty());
  }
  CHECK(to_json(measurement)["efficiency_timings"].size() == measurement.kernels.size());
  CHECK(roofs.source.find("efficiency table") != std::string::npos);
  CHECK(measurement.describe().find("matmul fp16 rows 2-8, K ~ 2^9") != std::string::npos);
  CHECK_FALSE(measurement.cache());
  // The stream's fixed costs are measured with the roofs and add up as the model needs.
  const FixedCosts costs = measurement.fixed_costs();
  CHECK(costs.sync_round_trip >= costs.host_launch + costs.op_overhead);
  CHECK(costs.source.find("4-byte device-to-host read") != std::string::npos);
}

TEST_CASE("an FMA probe sets every dtype's compute roof, the matmuls are reported against it", "[roof_measure]") {
  ScriptedBackend backend;
  backend.fma_peak = 400e9;
  const RoofMeasurement measurement = measure_roofs(backend, small_options());
  CHECK(measurement.fma_flops_per_s == Approx(400e9).epsilon(1e-4));
  const Roofs roofs = measurement.roofs();
  CHECK(roofs.fp32_flops == Approx(400e9).epsilon(1e-4));
  CHECK(roofs.fp16_flops == Approx(400e9).epsilon(1e-4));
  CHECK(roofs.bf16_flops == Approx(400e9).epsilon(1e-4));
  CHECK(roofs.bandwidth == Approx(15e9).epsilon(1e-4));
  REQUIRE(measurement.matmuls.size() == 3);  // still measured: what our matmul reaches
  CHECK(roofs.source.find("FMA peak") != std::string::npos);
  CHECK(roofs.source.find("25% of the FMA peak") != std::string::npos);  // fp32 matmul at 100 of 400
  CHECK(measurement.describe().find("FMA peak") != std::string::npos);
}

TEST_CASE("each bucket's efficiency is its time at the roofs over its median time, net of its regions", "[roof_measure]") {
  ScriptedBackend backend;
  backend.fma_peak = 400e9;
  backend.output_seconds = 2e-9;  // a cost per output element: matmuls below their roofs
  backend.slow_every_nth_sync = 2;  // slow rounds move from shape to shape: the median differs from the best
  const RoofMeasurement measurement = measure_roofs(backend, small_options());
  const Roofs roofs = measurement.roofs();
  const double region = measurement.stream.parallel_region_us() * 1e-6;
  bool some_differ = false;
  for (const RoofMeasurement::KernelTiming& kernel : measurement.kernels) {
    CAPTURE(kernel.what);
    const Precision precision = dtype_precision(kernel.dtype);
    const double at_roofs = std::max(kernel.flops / roofs.flops(precision), kernel.bytes / roofs.bandwidth);
    const double net = kernel.timing.median - kernel.regions * region;
    const std::string category = op_category_name(kernel.category);
    const auto row = std::find_if(roofs.efficiency.begin(), roofs.efficiency.end(), [&](const Efficiency& each) {
      return each.category == category && each.precision == precision && each.rows_from == kernel.bucket.rows_from &&
             each.size_log2 == kernel.bucket.size_log2;
    });
    REQUIRE(row != roofs.efficiency.end());
    CHECK(row->bytes == Approx(at_roofs / (net > 0 ? net : kernel.timing.median)));
    some_differ = some_differ || kernel.timing.best < kernel.timing.median;
  }
  CHECK(some_differ);
  // Through the YAML `roofline --measure --save` writes and back, and through JSON.
  DeviceSpec spec;
  spec.name = "scripted";
  spec.measured = roofs;
  const DeviceSpec reread = parse_device_spec(device_spec_to_yaml(spec), "scripted.yaml");
  REQUIRE(reread.measured->efficiency.size() == roofs.efficiency.size());
  CHECK(reread.measured->efficiency.front().bytes == Approx(roofs.efficiency.front().bytes).epsilon(1e-5));
  CHECK(device_spec_from_json(to_json(spec), "scripted.json").measured->efficiency == roofs.efficiency);
}

TEST_CASE("disagreeing repeats are flagged noisy, the roof is the fastest repeat", "[roof_measure]") {
  ScriptedBackend backend;
  backend.every_third_copy_slow = true;
  RoofMeasureOptions options = small_options();
  options.matmul_dtypes = {};
  const RoofMeasurement measurement = measure_roofs(backend, options);
  CHECK(measurement.copy.noisy);
  CHECK(measurement.copy_bandwidth == Approx(10e9).epsilon(1e-4));
  CHECK(measurement.roofs().source.find("NOISY") != std::string::npos);
}

TEST_CASE("sequences timed together are timed in turn, round after round", "[roof_measure]") {
  ScriptedBackend backend;
  RoofMeasureOptions options;
  options.warmups = 1;
  options.repeats = 3;
  options.min_warmup_seconds = 0;
  OpTimer timer(backend, options);
  std::vector<char> small(1 << 16), large(1 << 20);
  const Tensor small_view = Tensor::contiguous(small.data(), DType::F32, {static_cast<int64_t>(small.size() / 4)});
  const Tensor large_view = Tensor::contiguous(large.data(), DType::F32, {static_cast<int64_t>(large.size() / 4)});
  std::vector<int> order;
  const std::vector<TimedSamples> samples = timer.sample_interleaved({
      [&](const std::function<OpId()>& next) { order.push_back(0); backend.copy(small_view, small_view, next()); },
      [&](const std::function<OpId()>& next) { order.push_back(1); backend.copy(large_view, large_view, next()); },
  });
  // The warm-up round, then three timed rounds, each opened by the first sequence untimed.
  CHECK(order == std::vector<int>{0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1});
  REQUIRE(samples.size() == 2);
  CHECK(samples[0].seconds.size() == 3);
  CHECK(samples[0].median == Approx(2.0 * small.size() / 10e9).epsilon(1e-3));
  CHECK(samples[1].median == Approx(2.0 * large.size() / 10e9).epsilon(1e-3));
}

TEST_CASE("buffers shrink to fit the memory the device offers", "[roof_measure]") {
  ScriptedBackend backend;
  backend.memory = size_t{16} << 20;
  RoofMeasureOptions options = small_options();
  options.copy_bytes = size_t{64} << 20;
  options.matmul_size = 4096;
  const RoofMeasurement measurement = measure_roofs(backend, options);
  CHECK(backend.largest_allocation <= backend.memory / 4);
  CHECK(measurement.matmuls.front().size < 4096);
  CHECK(measurement.bandwidth == Approx(15e9).epsilon(1e-3));
}

TEST_CASE("a backend that reports no device time is an error, not a number", "[roof_measure]") {
  ScriptedBackend backend;
  backend.drop_timings = true;
  CHECK_THROWS_WITH(measure_roofs(backend, small_options()), Catch::Contains("no device time"));
}

TEST_CASE("an uncalibrated CPU is calibrated once into its thread count's file, then read", "[roof_measure][calibration]") {
  const TemporaryCache cache;
  ScriptedBackend backend;
  const MachineIdentity machine = this_machine(2);
  const std::filesystem::path file = calibration_path(2);
  CHECK(file.parent_path() == cache.directory);
  CHECK(file.filename().string().find(' ') == std::string::npos);
  CHECK_THAT(file.filename().string(), Catch::Matchers::EndsWith("-2threads.json"));
  const MachineState quiet;  // the check a command took before (the scripted device has no machine to probe)

  std::ostringstream said_first;
  const DeviceSpec first = default_device_spec(backend, 2, &said_first, small_options(), &quiet);
  const int ops_after_first = backend.ops_run;
  CHECK(ops_after_first > 0);
  REQUIRE(std::filesystem::exists(file));
  REQUIRE(first.machine);
  CHECK(*first.machine == machine);
  CHECK(first.measured->bandwidth == Approx(15e9).epsilon(1e-4));
  const Calibration written = load_calibration(file);
  CHECK(written.spec == first);  // the command priced with what every later one reads, to the last digit
  CHECK(written.kernel_variant == "scripted");  // the backend's running kernels, not timed
  CHECK_THAT(written.kernel_variants.at("reason").get<std::string>(), Catch::Matchers::Contains("not timed"));
  CHECK_THAT(said_first.str(), Catch::Matchers::Contains("calibrated in") &&
                                   Catch::Matchers::Contains("written to " + file.string()));

  const std::string text = decodelab::testing::read_text_file(file);
  std::ostringstream said_second;
  const DeviceSpec second = default_device_spec(backend, 2, &said_second, small_options(), &quiet);
  CHECK(backend.ops_run == ops_after_first);  // nothing measured again
  CHECK(said_second.str().empty());           // nothing said
  CHECK(second == first);
  CHECK(decodelab::testing::read_text_file(file) == text);

  // A calibration that describes another machine is never used: said, and replaced.
  Calibration foreign = written;
  foreign.machine.hostname = "someone-else";
  save_calibration(foreign, file);
  std::ostringstream said_foreign;
  default_device_spec(backend, 2, &said_foreign, small_options(), &quiet);
  CHECK(backend.ops_run > ops_after_first);
  CHECK_THAT(said_foreign.str(), Catch::Matchers::Contains("describes another machine") &&
                                     Catch::Matchers::Contains("hostname") && Catch::Matchers::Contains("someone-else"));
  CHECK(load_calibration(file).machine.hostname == machine.hostname);
  // Calibration files only: no roof cache beside them.
  for (const auto& entry : std::filesystem::directory_iterator(cache.directory))
    CHECK(entry.path().filename().string().rfind("calibration-", 0) == 0);
}

TEST_CASE("an uncalibrated machine says so, and why, before it is calibrated", "[roof_measure][calibration]") {
  const TemporaryCache cache;
  ScriptedBackend backend;
  std::ostringstream progress;
  const MachineState quiet;
  default_device_spec(backend, 2, &progress, small_options(), &quiet);
  CHECK(backend.ops_run > 0);
  const std::string said = progress.str();
  CHECK_THAT(said, Catch::Matchers::Contains("this machine is not calibrated at 2 kernel threads (no calibration file (" +
                                             calibration_path(2).string() + "))"));
  CHECK_THAT(said, Catch::Matchers::Contains("calibrating it now") &&
                       Catch::Matchers::Contains("`decodelab calibrate --threads 2` does it ahead"));
  // Said before the first figure is measured, in one line.
  CHECK(said.find("not calibrated") < said.find("measuring bandwidth"));
  CHECK(said.find('\n', said.find("not calibrated")) > said.find("does it ahead"));

  // A caller that shows no progress still has it said, on stderr.
  std::filesystem::remove_all(cache.directory);
  std::ostringstream stderr_text;
  std::streambuf* const real_stderr = std::cerr.rdbuf(stderr_text.rdbuf());
  const int ops_before = backend.ops_run;
  default_device_spec(backend, 2, nullptr, small_options());
  std::cerr.rdbuf(real_stderr);
  CHECK(backend.ops_run > ops_before);
  CHECK_THAT(stderr_text.str(), Catch::Matchers::Contains("this machine is not calibrated"));
  // No check was handed over: the calibration checked the machine itself, and recorded it.
  CHECK_FALSE(load_calibration(calibration_path(2)).machine_check.empty());

  // Read from the calibration: nothing measured, nothing said.
  std::ostringstream nothing;
  default_device_spec(backend, 2, &nothing, small_options(), &quiet);
  CHECK(nothing.str().empty());
}

TEST_CASE("a calibration at 2 threads is not used at 1 thread", "[roof_measure][calibration]") {
  const TemporaryCache cache;
  ScriptedBackend backend;
  const MachineState quiet;
  std::ostringstream calibrating;
  default_device_spec(backend, 2, &calibrating, small_options(), &quiet);
  const std::string two = decodelab::testing::read_text_file(calibration_path(2));
  const int ops_before = backend.ops_run;
  std::ostringstream said;
  const DeviceSpec one = default_device_spec(backend, 1, &said, small_options(), &quiet);
  CHECK(backend.ops_run > ops_before);
  CHECK_THAT(said.str(), Catch::Matchers::Contains("not calibrated at 1 kernel thread (no calibration file"));
  REQUIRE(one.machine);
  CHECK(one.machine->threads == 1);
  CHECK(load_calibration(calibration_path(1)).machine.threads == 1);
  CHECK(decodelab::testing::read_text_file(calibration_path(2)) == two);  // the other thread count's file untouched
}

TEST_CASE("a noisy calibration is read as it is on a quiet machine, never measured again", "[roof_measure][calibration]") {
  const TemporaryCache cache;
  ScriptedBackend backend;
  const MachineState quiet;  // the check before timing: not contended
  REQUIRE_FALSE(quiet.contended);
  std::ostringstream calibrating;
  default_device_spec(backend, 2, &calibrating, small_options(), &quiet);
  Calibration noisy = load_calibration(calibration_path(2));
  noisy.spec.measured->noisy = true;  // as if measured on a noisy machine
  noisy.spec.measured->measured_at -= 3600;  // an hour ago
  save_calibration(noisy, calibration_path(2));
  const std::string text = decodelab::testing::read_text_file(calibration_path(2));
  const int ops_before = backend.ops_run;

  const DeviceSpec read = default_device_spec(backend, 2, nullptr, small_options(), &quiet);
  CHECK(backend.ops_run == ops_before);
  CHECK(read.measured->noisy);
  CHECK(decodelab::testing::read_text_file(calibration_path(2)) == text);
}

namespace {

// A cache search over scripted reads: a weight of `weight` bytes reads at `rate(weight)`,
// the product over a weight no cache holds at `dram_rate`; weights beyond the capacity read
// up to `beyond_until` bytes.
RoofMeasurement search_cache(double reported, double dram_rate, const std::function<double(double weight)>& rate,
                             double beyond_until = 0) {
  RoofMeasurement measurement;
  find_cache_level(reported, 1e12, dram_rate, [&](double weight) {
    RoofMeasurement::CacheRead read;
    read.weight_bytes = weight;
    read.bytes = weight + 4096;
    read.bandwidth = rate(weight);
    read.timing = TimedSamples::of({read.bytes / read.bandwidth}, 0.15);
    return read;
  }, measurement, beyond_until);
  return measurement;
}

// Weights up to `resident` read at `cache_rate`, larger ones at `dram_rate`, as does the
// product over a weight no cache holds.
RoofMeasurement search_cache(double reported, double resident, double cache_rate, double dram_rate) {
  return search_cache(reported, dram_rate, [&](double weight) { return weight <= resident ? cache_rate : dram_rate; });
}

// A search as measured on a 2-vCPU Zen 5 VM whose OS reports 533 MB (508 MiB): its reads in
// GB/s from the quarter (133 MB) down, halving, and the DRAM product's (and its second
// reading's, where given).
RoofMeasurement search_measured(double dram_gbps, const std::vector<double>& reads_gbps) {
  constexpr double reported = 508.0 * 1024 * 1024;
  return search_cache(reported, dram_gbps * 1e9, [&](double weight) {
    const auto halvings = static_cast<size_t>(std::lround(std::log2(reported / 4 / weight)));
    return halvings < reads_gbps.size() ? reads_gbps[halvings] * 1e9 : reads_gbps.back() * 1e9;
  });
}

}  // namespace

TEST_CASE("the reads beyond the capacity give the share found resident at their reuse distance", "[roof_measure]") {
  constexpr double MiB = 1024.0 * 1024.0;
  // Resident up to 8 MiB at 100 GB/s, DRAM (and the bandwidth roof's product over 512 MiB)
  // 40 GB/s; beyond, a read that takes s of its bytes from the cache and the rest from DRAM.
  auto mixed = [](double share) { return 1 / (share / 100e9 + (1 - share) / 40e9); };
  RoofMeasurement measurement = search_cache(512 * MiB, 40e9, [&](double weight) {
    if (weight <= 8 * MiB) return 100e9;
    if (weight <= 16 * MiB) return mixed(0.5);
    if (weight <= 32 * MiB) return mixed(0.25);
    if (weight <= 64 * MiB) return mixed(0.3);  // above the nearer distance's: held to it
    return 40e9;
  });
  measurement.bandwidth = 40e9;
  measurement.read_bytes = 512 * MiB;
  REQUIRE(measurement.cache_bytes == 8 * MiB);
  const std::optional<CacheLevel> level = measurement.cache();
  REQUIRE(level);
  REQUIRE(level->beyond.size() == 5);
  const std::vector<std::pair<double, double>> expected{
      {16 * MiB, 0.5}, {32 * MiB, 0.25}, {64 * MiB, 0.25}, {128 * MiB, 0.0}, {512 * MiB, 0.0}};
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(level->beyond[i].reuse_bytes == expected[i].first);
    CHECK(level->beyond[i].resident == Approx(expected[i].second).margin(1e-9));
  }
  // The roof's product over 64 MiB: the points up to it, the last at 0 (a share of it
  // resident is in the roof itself).
  measurement.read_bytes = 64 * MiB;
  REQUIRE(measurement.cache()->beyond.size() == 3);
  CHECK(measurement.cache()->beyond[1].resident == Approx(0.25));
  CHECK(measurement.cache()->beyond[2].reuse_bytes == 64 * MiB);
  CHECK(measurement.cache()->beyond[2].resident == 0);
  // A roof read within the capacity (or no roof measured): the capacity alone.
  measurement.read_bytes = 8 * MiB;
  CHECK(measurement.cache()->beyond.empty());
}

TEST_CASE("the cache's capacity is what its reads show, not what the OS says", "[roof_measure]") {
  constexpr double MiB = 1024.0 * 1024.0;
  SECTION("a quarter of the reported capacity on the plateau: the capacity read, never more, then the reads beyond") {
    // A 32 MiB cache that holds 24 MiB of a weight read over and over.
    const RoofMeasurement measurement = search_cache(32 * MiB, 40e9, [&](double weight) {
      return weight <= 24 * MiB ? 100e9 : 40e9;
    }, 256 * MiB);
    // Down: 8, 4 and 2 MiB; then beyond: 16, 32, 64 and 128 MiB, kept in decreasing size.
    REQUIRE(measurement.cache_reads.size() == 7);
    CHECK(measurement.cache_reads[0].weight_bytes == 128 * MiB);
    CHECK(measurement.cache_reads[3].weight_bytes == 16 * MiB);
    CHECK(measurement.cache_reads[4].weight_bytes == 8 * MiB);
    CHECK(measurement.cache_bytes == 8 * MiB);
    REQUIRE(measurement.cache());
    CHECK(measurement.cache()->bandwidth == Approx(100e9).epsilon(1e-3));
    CHECK(measurement.cache()->source.find("the OS reports 33.6 MB") != std::string::npos);
    CHECK(measurement.cache()->source.find("capacity 8.39 MB") != std::string::npos);
    CHECK(measurement.cache()->source.find("(from DRAM 40.0 GB/s)") != std::string::npos);
    // Without a roof read to end at, nothing beyond is read.
    CHECK(search_cache(32 * MiB, 40e9, [&](double weight) { return weight <= 24 * MiB ? 100e9 : 40e9; }).cache_reads.size() == 3);
  }
  SECTION("a VM that reports its host's socket: the largest weight on the plateau") {
    const RoofMeasurement measurement = search_cache(512 * MiB, 12 * MiB, 100e9, 40e9);
    // 128, 64, 32 and 16 MiB read from DRAM; 8 MiB and the 4 and 2 MiB below it are resident.
    REQUIRE(measurement.cache_reads.size() == 7);
    CHECK(measurement.cache_bytes == 8 * MiB);
    CHECK(measurement.cache_bandwidth == Approx(100e9).epsilon(1e-3));
    const std::string note = measurement.cache_capacity_note();
    CHECK(note.find("the OS reports 537 MB") != std::string::npos);
    CHECK(note.find("capacity 8.39 MB, the largest weight") != std::string::npos);
  }
  SECTION("a large weight read twice as fast as the DRAM product is still not on the plateau") {
    // As in an accuracy run of roof method 14: 133 MB read 87.4 GB/s against DRAM's 39.3 (the
    // 2x rule took the OS's 533 MB), while the weights the L3 holds read ~120.
    const RoofMeasurement measurement = search_measured(39.3, {87.4, 96, 120, 124, 121, 112, 110, 104, 75, 50});
    CHECK(measurement.cache_bytes == Approx(133.2e6 / 4).epsilon(0.01));
    CHECK(measurement.cache_bandwidth == Approx(124e9).epsilon(1e-3));  // the fastest of 33.3, 16.6 and 8.3 MB
  }
  SECTION("the reported capacity is never claimed beyond what was read") {
    // An accuracy run's search (2026-12-03 20:29 UTC): 133 MB read 72.4 GB/s, 1.29x a DRAM
    // product held up at 56.1, and on the plateau of 66.6 and 33.3 MB (82.5, 73.0): once
    // taken for the OS's 533 MB, now the 133 MB read (the reads beyond say what is left).
    const std::vector<double> reads{72.4, 82.5, 73.0, 110, 112, 108, 100, 90, 70, 50};
    CHECK(search_measured(56.1, reads).cache_bytes == Approx(133.2e6).epsilon(0.01));
  }
  SECTION("searches measured on the Zen 5 VM") {
    // vCPUs on one CCD: 66.6 MB reads from DRAM, 33.3 MB 0.848 of 16.6's, 16.6 MB the largest on the plateau.
    CHECK(search_measured(43, {38, 58, 106, 125, 121, 108, 122, 140, 107, 75}).cache_bytes == Approx(133.2e6 / 8).epsilon(0.01));
    // On two CCDs, each with its L3: 66.6 MB held in part, at 0.88 of 33.3 MB's (and the 133 MB
    // weight at 1.37x DRAM).
    CHECK(search_measured(62, {85, 100, 110, 114, 107, 103, 89, 82, 59, 47}).cache_bytes == Approx(133.2e6 / 2).epsilon(0.01));
    // One read below held up (16.6 MB at 81 GB/s, as in one search there): the faster of the
    // two below still makes 33.3 MB's plateau.
    CHECK(search_measured(58, {70, 80, 111, 81, 109, 104, 96, 88, 63, 40}).cache_bytes == Approx(133.2e6 / 4).epsilon(0.01));
  }
  SECTION("a plateau no faster than DRAM is no cache level") {
    // Every weight at 1.2x the DRAM product (under kCacheAboveDram): beyond any cache, read a
    // little faster than the yardstick.
    const RoofMeasurement measurement = search_cache(64 * MiB, 0, 48e9, 40e9);
    CHECK(measurement.cache_bytes == 0);
    CHECK(search_cache(64 * MiB, 1e12, 48e9, 40e9).cache_bytes == 0);
    CHECK(search_cache(64 * MiB, 1e12, 52e9, 40e9).cache_bytes == 16 * MiB);
  }
  SECTION("no weight on a plateau down to 256 KiB: no cache level") {
    // Each weight 20% slower than its half down to the smallest: no plateau.
    const RoofMeasurement measurement =
        search_cache(64 * MiB, 40e9, [](double weight) { return 200e9 * std::pow(0.8, std::log2(weight / (0.25 * MiB))); });
    CHECK(measurement.cache_bytes == 0);
    CHECK(measurement.cache_reads.back().weight_bytes == Approx(0.25 * MiB));
    CHECK_FALSE(measurement.cache());
    CHECK(measurement.cache_capacity_note().find("no cache level found") != std::string::npos);
  }
  SECTION("the smallest weights: the last but one judged against its half alone") {
    const RoofMeasurement measurement = search_cache(2 * MiB, 1e12, 100e9, 40e9);
    REQUIRE(measurement.cache_reads.size() == 2);  // 512 and 256 KiB
    CHECK(measurement.cache_bytes == 512 * 1024);
    CHECK(search_cache(1.5 * MiB, 1e12, 100e9, 40e9).cache_bytes == 0);  // 384 KiB: no half to judge it by
  }
  SECTION("no capacity reported: nothing is tried") {
    CHECK(search_cache(0, 12 * MiB, 100e9, 40e9).cache_reads.empty());
  }
}
