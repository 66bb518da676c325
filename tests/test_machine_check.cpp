// The machine check: its rules on the figures of any machine (quiet, contended for CPU,
// stolen by a hypervisor, a noisy or steadily slow bandwidth probe, oversubscribed), and —
// with real busy loops pinning every core — the warning and JSON of `decodelab run` and a
// `roofline --measure` that prints its busy measurement and writes no file: the calibration stays.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "profiling/device_spec.h"
#include "profiling/measure/cache_level.h"
#include "profiling/measure/machine_check.h"
#include "profiling/measure/calibration.h"
#include "tests/support/seeded_calibration.h"
#include "tests/support/cli_runner.h"
#include "tests/support/scoped_env.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

MachineState quiet_machine() {
  MachineState state;
  state.cores_available = 2;
  state.kernel_threads = 2;
  state.cpu_share = 0.99;
  state.load_average = 6.0;       // niced builds: counted by the load average ...
  state.niced_busy_cores = 1.9;   // ... but giving way to a normal-priority run
  state.probe_bandwidth = 20e9;
  state.probe_spread = 0.03;
  state.quiet_probe_bandwidth = 21e9;
  return state;
}

bool mentions(const MachineState& state, const std::string& text) {
  for (const std::string& finding : state.findings)
    if (finding.find(text) != std::string::npos) return true;
  return false;
}

// Busy loops on every core, at this process's priority, for as long as the object lives.
class BusyLoops {
 public:
  explicit BusyLoops(int count) {
    for (int i = 0; i < count; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        volatile unsigned long spin = 0;
        for (;;) spin = spin + 1;
      }
      children_.push_back(pid);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the scheduler see them
  }
  ~BusyLoops() {
    for (pid_t pid : children_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }

 private:
  std::vector<pid_t> children_;
};

}  // namespace

TEST_CASE("machine rules: niced load and a high load average alone are quiet", "[machine_check]") {
  MachineState state = quiet_machine();
  judge_machine(state);
  CHECK_FALSE(state.contended);
  CHECK(state.findings.empty());
  CHECK(state.warning().empty());
  CHECK(state.summary().rfind("quiet:", 0) == 0);
}

TEST_CASE("machine rules: each contention is found, said with numbers and advice", "[machine_check]") {
  SECTION("the kernels' threads get half their cores") {
    MachineState state = quiet_machine();
    state.cpu_share = 0.5;
    state.others_busy_cores = 2.0;
    judge_machine(state);
    CHECK(state.contended);
    CHECK(mentions(state, "got 50% of their time on a CPU"));
    CHECK(mentions(state, "2.0 cores at normal priority"));
    CHECK(state.advice.find("--threads 1") != std::string::npos);
    CHECK(state.warning().find("decodelab: warning: this machine is busy") == 0);
    CHECK_FALSE(mentions(state, "autogroup"));
  }
  SECTION("niced work in other sessions, with autogroup scheduling, is said to compete") {
    MachineState state = quiet_machine();
    state.cpu_share = 0.3;
    state.autogroup = true;
    judge_machine(state);
    CHECK(state.contended);
    CHECK(mentions(state, "autogroup scheduling shares the CPU between sessions"));
  }
  SECTION("a niced decodelab is told to run at normal priority") {
    MachineState state = quiet_machine();
    state.cpu_share = 0.3;
    state.own_nice = 19;
    judge_machine(state);
    CHECK(mentions(state, "runs niced (nice 19)"));
    CHECK(state.advice.find("run decodelab at normal priority") != std::string::npos);
  }
  SECTION("a hypervisor steals time") {
    MachineState state = quiet_machine();
    state.steal_fraction = 0.12;
    judge_machine(state);
    CHECK(state.contended);
    CHECK(mentions(state, "steal"));
  }
  SECTION("the bandwidth probe varies") {
    MachineState state = quiet_machine();
    state.probe_spread = 0.40;
    judge_machine(state);
    CHECK(state.contended);
    CHECK(mentions(state, "varied by 40%"));
  }
  SECTION("a steady contention: low spread, but far below the quiet value") {
    MachineState state = quiet_machine();
    state.probe_bandwidth = 9e9;
    judge_machine(state);
    CHECK(state.contended);
    CHECK(mentions(state, "43% of the 21.0 GB/s"));
  }
  SECTION("more kernel threads than cores") {
    MachineState state = quiet_machine();
    state.kernel_threads = 4;
    judge_machine(state);
    CHECK(state.contended);
    CHECK(state.advice.find("--threads 2 or fewer") != std::string::npos);
  }
  const nlohmann::json json = to_json(quiet_machine());
  for (const char* key : {"contended", "cpu_share", "steal_fraction", "load_average", "probe_bandwidth_bytes_per_s",
                          "probe_spread", "others_busy_cores", "niced_busy_cores", "findings", "advice",
                          "core_round_trip_ns", "roofs_core_round_trip_ns", "notes"}) {
    CHECK(json.contains(key));
  }
}

TEST_CASE("machine rules: far-apart cores are a note, not contention", "[machine_check]") {
  SECTION("near cores say nothing") {
    MachineState state = quiet_machine();
    state.core_round_trip_ns = 59;
    state.roofs_core_round_trip_ns = 70;
    judge_machine(state);
    CHECK(state.notes.empty());
    CHECK(state.warning().empty());
    CHECK(state.summary().find("core round trip 59 ns") != std::string::npos);
  }
  SECTION("far cores: a note with the round trip, the machine still quiet") {
    MachineState state = quiet_machine();
    state.core_round_trip_ns = 426;
    judge_machine(state);
    CHECK_FALSE(state.contended);
    REQUIRE(state.notes.size() == 1);
    CHECK(state.notes[0].find("cores are far apart") != std::string::npos);
    CHECK(state.notes[0].find("426 ns") != std::string::npos);
    CHECK(state.warning().rfind("decodelab: note: the kernel threads' cores are far apart", 0) == 0);
    CHECK(state.warning().find("busy") == std::string::npos);
  }
  SECTION("cores that moved since the roofs were measured are said, either way") {
    MachineState near_now = quiet_machine();
    near_now.core_round_trip_ns = 59;
    near_now.roofs_core_round_trip_ns = 426;
    judge_machine(near_now);
    REQUIRE(near_now.notes.size() == 1);
    CHECK(near_now.notes[0].find("the roofs were measured with far cores (426 ns round trip), these are near (59 ns)") !=
          std::string::npos);
    MachineState far_now = quiet_machine();
    far_now.core_round_trip_ns = 426;
    far_now.roofs_core_round_trip_ns = 59;
    judge_machine(far_now);
    CHECK(far_now.notes.size() == 2);
  }
  SECTION("a threshold of the caller's") {
    MachineState state = quiet_machine();
    state.core_round_trip_ns = 200;
    MachineThresholds strict;
    strict.max_near_core_round_trip_ns = 150;
    judge_machine(state, strict);
    CHECK(state.notes.size() == 1);
  }
  SECTION("not probed (one kernel thread, a GPU): nothing said") {
    MachineState state = quiet_machine();
    state.roofs_core_round_trip_ns = 426;
    judge_machine(state);
    CHECK(state.notes.empty());
    CHECK(state.summary().find("core round trip") == std::string::npos);
  }
}

TEST_CASE("the core round trip probe measures a plausible time", "[machine_check]") {
  // Two threads: on one core each hand-off waits for the scheduler (the probe then gives
  // up or returns a long time); on two or more it is tens to hundreds of nanoseconds.
  const double round_trip = measure_core_round_trip_ns();
  if (std::thread::hardware_concurrency() < 2) {
    CHECK(round_trip == 0);
    return;
  }
  CHECK(round_trip >= 0);
  if (round_trip > 0) {
    CHECK(round_trip > 5);       // a cache line cannot cross cores and back in less
    CHECK(round_trip < 2e6);     // nor take longer than the probe's budget allows per batch
  }
}

namespace {

// A measured spec as a calibration holds it: roofs, efficiency rows, fixed costs, cache level.
DeviceSpec measured_test_spec(double bandwidth, double flops, double op_overhead, int64_t at, bool noisy) {
  DeviceSpec spec;
  spec.name = "measured-test";
  spec.measured = Roofs{};
  spec.measured->bandwidth = bandwidth;
  spec.measured->fp32_flops = spec.measured->fp16_flops = spec.measured->bf16_flops = flops;
  spec.measured->source = "measurement at " + std::to_string(at);
  spec.measured->efficiency = {{"matmul", Precision::Fp32, 1, 10, 0.5, 1.0, ""}, {"matmul", Precision::Fp16, 1, 10, 0.5, 0.8, ""},
                               {"matmul", Precision::Fp16, 2, 10, 0.5, 0.6, ""}};
  spec.measured->measured_at = at;
  spec.measured->noisy = noisy;
  spec.measured->spread = noisy ? 0.4 : 0.02;
  spec.measured_fixed_costs = FixedCosts{0.1e-6, op_overhead, op_overhead + 0.3e-6, 0, "costs at " + std::to_string(at)};
  spec.measured_cache = CacheLevel{32e6, 2 * bandwidth, "cache at " + std::to_string(at)};
  return spec;
}

}  // namespace

TEST_CASE("a probe on this machine gives figures in range", "[machine_check]") {
  // No verdict is asserted: the machine running the tests may be busy or quiet.
  const std::unique_ptr<Backend> backend = make_backend(BackendKind::Cpu, BackendOptions::with_threads(1));
  const MachineState state = check_machine(*backend, 1, RoofsMachine{});
  CHECK(state.cores_available >= 1);
  CHECK(state.kernel_threads == 1);
  CHECK(state.core_round_trip_ns == 0);  // one kernel thread: no hand-offs between cores to probe
  CHECK(state.cpu_share > 0);
  CHECK(state.cpu_share <= 1);
  CHECK(state.probe_bandwidth > 0);
  CHECK(state.steal_fraction >= 0);
  CHECK(state.contended == !state.findings.empty());
}

TEST_CASE("machine check: a stop is polled between probes and before every copy, and abandons the check",
          "[machine_check][interrupt]") {
  const std::unique_ptr<Backend> backend = make_backend(BackendKind::Cpu, BackendOptions::with_threads(2));
  // Polled and never thrown: the check runs to its end, asking at every stage and copy.
  int polls = 0;
  const MachineState state = check_machine(*backend, 2, RoofsMachine{}, MachineThresholds{}, [&] { ++polls; });
  CHECK(state.probe_bandwidth > 0);
  // Before the CPU-share probe, before the bandwidth probe, around the round trip (4), and
  // before each of the bandwidth probe's copies: a warm-up and its 9 timed ones at least.
  CHECK(polls >= 4 + 1 + 9);

  // A stop requested part-way: the check ends at the next poll, with the copies' timings
  // drained from the backend and nothing left queued.
  struct Stop {};
  for (const int stop_at : {1, 2, 6}) {
    INFO("stop at poll " << stop_at);
    int seen = 0;
    std::chrono::steady_clock::time_point stopped;
    const auto stop_there = [&] {
      if (++seen < stop_at) return;
      stopped = std::chrono::steady_clock::now();
      throw Stop{};
    };
    CHECK_THROWS_AS(check_machine(*backend, 2, RoofsMachine{}, MachineThresholds{}, stop_there), Stop);
    CHECK(seen == stop_at);  // abandoned at once: no further stage asked
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count() < 2.0);
    backend->synchronize();
    CHECK(backend->take_timings().empty());
  }
}

// [sanitizer_skip] (CI's ASan pass leaves it to the Release pass): 15 s in Release, 145 s under
// ASan, where busy loops on every core starve the -O1 run and roofline measurement; the rules
// and the probe it drives run under ASan in the cases above.
TEST_CASE("busy loops on every core: run warns and records it, roofline --measure leaves the calibration as it was",
          "[machine_check][cli][sanitizer_skip]") {
  // Its own folder per process: two checkouts running the suite at once must not share one.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("decodelab_test_machine_check-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::string cache_env = "DECODELAB_CACHE_DIR=" + (dir / "cache").string();

  // A good calibration of this machine at one thread (figures no real run reaches).
  const std::unique_ptr<Backend> backend = make_backend(BackendKind::Cpu, BackendOptions::with_threads(1));
  const MachineIdentity machine = this_machine(1);
  const std::filesystem::path calibration = [&] {
    const decodelab::testing::ScopedEnv cache_dir("DECODELAB_CACHE_DIR", (dir / "cache").c_str());
    return calibration_path(1);
  }();
  // Every figure better than any real reading, so that a busy measurement cannot pass for it.
  DeviceSpec good = measured_test_spec(900e9, 9e12, 1e-9, 1700000000, false);
  good.description = backend->device_description();
  good.machine = machine;
  good.measured->efficiency.clear();
  const RoofMeasureOptions measured_shapes;
  for (Precision precision : {Precision::Fp32, Precision::Fp16, Precision::Bf16}) {
    for (int rows : measured_shapes.efficiency_rows)
      for (int depth = 7; depth <= 14; ++depth) good.measured->efficiency.push_back({"matmul", precision, rows_class(rows), depth, 1, 1, ""});
    for (int context : measured_shapes.efficiency_contexts)
      good.measured->efficiency.push_back({"attention", precision, 1, size_class(context), 1, 1, ""});
  }
  good.measured_fixed_costs = FixedCosts{1e-9, 1e-9, 3e-9, 9e12, "a quiet measurement (test)", 1e-9};
  good.measured_cache->bytes = host_cache_bytes();
  decodelab::testing::seed_calibration(good, dir / "cache", 1);
  const std::string before = read_text_file(calibration);

  BusyLoops loops(cores);
  const std::string json_file = (dir / "run.json").string();
  const CommandResult run = run_decodelab({"run", "quickstart", "--backend", "cpu", "--set", "run={warmup: 0, repeats: 2}",
                                           "--set", "workload.new_tokens=4", "--json", json_file},
                                          cache_env);
  REQUIRE(run.exit_code == 0);
  CHECK(run.machine_warning.find("decodelab: warning: this machine is busy") == 0);
  CHECK(run.machine_warning.find("what to do:") != std::string::npos);
  const nlohmann::json result = nlohmann::json::parse(read_text_file(json_file));
  CHECK(result["machine"]["contended"] == true);
  CHECK(result["machine"]["cpu_share"].get<double>() < 0.8);

  const CommandResult measure =
      run_decodelab({"roofline", "--measure", "--backend", "cpu", "--threads", "1", "--repeats", "2"}, cache_env);
  REQUIRE(measure.exit_code == 0);
  INFO(measure.out);
  CHECK(measure.out.find("not kept: commands read the calibration " + calibration.string()) != std::string::npos);
  CHECK(read_text_file(calibration) == before);
  size_t files = 0;  // the calibration alone: --measure writes nothing beside it
  for (const auto& entry : std::filesystem::directory_iterator(dir / "cache")) files += entry.is_regular_file();
  CHECK(files == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("machine check: the probe's spread leaves out one held-up copy at either end", "[machine_check]") {
  // one copy four times slower (a hypervisor tick): not contention
  CHECK(probe_spread_of({1, 1, 1, 1, 4, 1, 1, 1, 1}) == Approx(0.0));
  CHECK(probe_spread_of({0.5, 1, 1, 1, 1, 1, 1, 1, 4}) == Approx(0.0));
  // most copies slowed: other work shares the memory
  CHECK(probe_spread_of({1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8}) == Approx((1.7 - 1.1) / 1.4));
  CHECK(probe_spread_of({1.0, 2.0}) == 0.0);
}

namespace {

// A /proc/stat and own-CPU sample at `wall` seconds, the CPU times in seconds since some start.
CpuUsageSample usage_at(double wall, double own_cpu, double normal, double niced = 0, double steal = 0) {
  CpuUsageSample sample;
  sample.valid = true;
  sample.wall_seconds = wall;
  sample.own_cpu_seconds = own_cpu;
  sample.normal_seconds = normal;
  sample.niced_seconds = niced;
  sample.steal_seconds = steal;
  sample.total_seconds = 4 * wall;  // a four-core machine
  return sample;
}

}  // namespace

TEST_CASE("machine watch: other work taking the cores while timing is contention, with its numbers",
          "[machine_check]") {
  MachineState checked = quiet_machine();
  checked.kernel_threads = 2;  // + the host thread: 3 of 4 cores busy with this run, 1 spare
  MachineWatch watch = start_machine_watch(checked);
  watch.machine_cores = 4;  // the figures below are a four-core machine's, whatever this one has

  // Quiet: this run's three threads and half a core of other work, over two 0.5 s repeats.
  add_window(watch, usage_at(0, 0, 0), usage_at(0.5, 1.5, 1.75));
  add_window(watch, usage_at(1, 1.5, 1.75), usage_at(1.5, 3.0, 3.5));
  CHECK(watch.windows == 2);
  CHECK(watch.others_busy_cores() == Approx(0.5));
  CHECK_FALSE(watch.contended);
  CHECK(watch.finding.empty());

  // A build starts: three cores of other work in the third repeat; this run gets less CPU.
  add_window(watch, usage_at(2, 3.0, 3.5), usage_at(2.5, 3.5, 5.5));
  CHECK(watch.contended);
  CHECK(watch.contended_windows == 1);
  CHECK(watch.worst_window_others_cores == Approx(3.0));
  CHECK_THAT(watch.finding, Catch::Matchers::Contains("other work took") && Catch::Matchers::Contains("in the busiest repeat"));
  const nlohmann::json json = to_json(watch);
  CHECK(json["contended"] == true);
  CHECK(json["spare_cores"] == 1);

  // Steal alone is contention too.
  MachineWatch stolen = start_machine_watch(checked);
  stolen.machine_cores = 4;
  add_window(stolen, usage_at(0, 0, 0), usage_at(1, 3, 3, 0, 0.4));
  CHECK(stolen.contended);
  CHECK_THAT(stolen.finding, Catch::Matchers::Contains("steal"));

  // Niced work gives way to a normal-priority run, unless autogroups put it on equal terms.
  checked.autogroup = false;
  MachineWatch niced = start_machine_watch(checked);
  niced.machine_cores = 4;
  add_window(niced, usage_at(0, 0, 0), usage_at(1, 3, 3, 3));
  CHECK_FALSE(niced.contended);
  checked.autogroup = true;
  MachineWatch grouped = start_machine_watch(checked);
  grouped.machine_cores = 4;
  add_window(grouped, usage_at(0, 0, 0), usage_at(1, 3, 3, 3));
  CHECK(grouped.contended);
}

TEST_CASE("busy loops started after the machine check: every figure is marked contended",
          "[machine_check][cli][sanitizer_skip]") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("decodelab_test_machine_watch-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::string json_file = (dir / "run.json").string();
  // Enough repeats of a slowed workload that the run is still timing when the loops start.
  BackgroundDecodelab run({"run", "quickstart", "--backend", "cpu", "--threads", "1", "--set",
                           "run={warmup: 0, repeats: 12}", "--set", "workload.new_tokens=48", "--set",
                           "workload.host_overhead_us=40", "--json", json_file});
  // The check is over once the first repeat is reported; only then does the other work start.
  REQUIRE(wait_until([&] { return run.stderr_so_far().find("repeat 1/12 done") != std::string::npos; }, 120.0));
  CommandResult result;
  {
    BusyLoops loops(2 * cores);
    result = run.wait();
  }
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.machine_warning, Catch::Matchers::Contains("marked \"contended\""));
  const nlohmann::json json = nlohmann::json::parse(read_text_file(json_file));
  CHECK(json["contended"] == true);
  CHECK(json["machine_during"]["contended"] == true);
  CHECK(json["machine_during"]["others_busy_cores"].get<double>() > 0.5);
  for (const auto& [name, interval] : json["intervals"].items()) {
    INFO(name);
    if (interval.is_object()) CHECK(interval["contended"] == true);
  }
  // The printed row says so beside the figures.
  CHECK_THAT(result.out, Catch::Matchers::Contains("contended"));
  std::filesystem::remove_all(dir);
}
