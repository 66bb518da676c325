// The machine check: its rules on the figures of any machine (quiet, contended for CPU,
// stolen by a hypervisor, a noisy or steadily slow bandwidth probe, oversubscribed), the
// roof cache's replacement rule, and — with real busy loops pinning every core — the
// warning and JSON of `decodelab run` and a `roofline --measure` that keeps a good cache.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "profiling/device_spec.h"
#include "profiling/machine_check.h"
#include "profiling/roof_measure.h"
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
                          "probe_spread", "others_busy_cores", "niced_busy_cores", "findings", "advice"}) {
    CHECK(json.contains(key));
  }
}

TEST_CASE("the roof cache keeps the better measurement", "[machine_check][roof_measure]") {
  Roofs good{20e9, 100e9, 0, 100e9, 100e9, "quiet"};
  good.measured_at = 1;
  good.spread = 0.02;
  Roofs noisy = good;
  noisy.noisy = true;
  noisy.spread = 0.38;
  noisy.bandwidth = 16e9;
  Roofs steady_but_slow = good;
  steady_but_slow.fp32_flops = steady_but_slow.fp16_flops = steady_but_slow.bf16_flops = 30e9;  // FMA peak 30%
  std::string reason;
  CHECK_FALSE(should_replace_cached_roofs(noisy, good, reason));
  CHECK(reason.find("noisy") != std::string::npos);
  CHECK(should_replace_cached_roofs(good, noisy, reason));
  CHECK_FALSE(should_replace_cached_roofs(steady_but_slow, good, reason));
  CHECK(reason.find("steady contention") != std::string::npos);
  Roofs fresh = good;
  fresh.bandwidth = 21e9;
  CHECK(should_replace_cached_roofs(fresh, good, reason));
  Roofs noisier = noisy;
  noisier.bandwidth = 12e9;
  CHECK_FALSE(should_replace_cached_roofs(noisier, noisy, reason));  // both noisy: the higher stays
  // A cached measurement taken under contention that went unnoticed (steady, but low) gives
  // way to a noisy one whose roofs are all higher: noise never raises a measured rate.
  Roofs noisy_but_higher = noisy;
  noisy_but_higher.bandwidth = 23e9;
  noisy_but_higher.fp32_flops = noisy_but_higher.fp16_flops = noisy_but_higher.bf16_flops = 200e9;
  CHECK(should_replace_cached_roofs(noisy_but_higher, good, reason));
  CHECK(reason.find("higher") != std::string::npos);
  Roofs noisy_higher_bandwidth_only = noisy_but_higher;
  noisy_higher_bandwidth_only.fp32_flops = noisy_higher_bandwidth_only.fp16_flops = 90e9;
  CHECK_FALSE(should_replace_cached_roofs(noisy_higher_bandwidth_only, good, reason));
}

TEST_CASE("a probe on this machine gives figures in range", "[machine_check]") {
  // No verdict is asserted: the machine running the tests may be busy or quiet.
  const std::unique_ptr<Backend> backend = make_backend(BackendKind::Cpu, BackendOptions{1, false});
  const MachineState state = check_machine(*backend, 1, 0);
  CHECK(state.cores_available >= 1);
  CHECK(state.kernel_threads == 1);
  CHECK(state.cpu_share > 0);
  CHECK(state.cpu_share <= 1);
  CHECK(state.probe_bandwidth > 0);
  CHECK(state.steal_fraction >= 0);
  CHECK(state.contended == !state.findings.empty());
}

TEST_CASE("busy loops on every core: run warns and records it, roofline keeps the good cache", "[machine_check][cli]") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "decodelab_test_machine_check";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::string cache_env = "DECODELAB_CACHE_DIR=" + (dir / "cache").string();

  // A good cached measurement for this machine at one thread (figures no real run reaches).
  const std::unique_ptr<Backend> backend = make_backend(BackendKind::Cpu, BackendOptions{1, false});
  const MachineIdentity machine = this_machine(1);
  const std::filesystem::path cache = [&] {
    const decodelab::testing::ScopedEnv cache_dir("DECODELAB_CACHE_DIR", (dir / "cache").c_str());
    return roof_cache_path(machine);
  }();
  DeviceSpec good;
  good.name = "measured-test";
  good.description = backend->device_description();
  good.machine = machine;
  good.measured = Roofs{900e9, 9e12, 0, 9e12, 9e12, "a quiet measurement (test)"};
  good.measured->measured_at = 1700000000;
  good.measured->spread = 0.01;
  save_device_spec(good, cache);
  const std::string before = read_text_file(cache);

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
  CHECK(measure.out.find("not cached") != std::string::npos);
  CHECK(read_text_file(cache) == before);
  std::filesystem::remove_all(dir);
}
