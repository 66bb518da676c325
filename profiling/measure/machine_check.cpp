// The machine check (see machine_check.h): a CPU-share probe with /proc/stat read around
// it, the load average, a short copy-bandwidth probe through the backend, and the core
// round trip.
#include "profiling/measure/machine_check.h"

#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "profiling/measure/roof_measure.h"
#include "profiling/model/statistics.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

// How long the probe threads spin: long enough for /proc/stat's 10 ms ticks to say
// something, short enough to run before every timed command.
constexpr double kProbeSeconds = 0.15;
// The bandwidth probe: copies of 128 MiB on a CPU (256 MiB moved, beyond the cache of any
// one CCD, 96 MiB with stacked cache: a probe whose working set is near a cache's size varies
// on a quiet machine as more or less of it stays resident);
// 256 MiB on a GPU, where 32 MiB takes tens of microseconds and the launch's jitter would
// read as spread.
constexpr size_t kProbeCopyBytesCpu = size_t{128} << 20;
constexpr size_t kProbeCopyBytesGpu = size_t{256} << 20;
// Nine copies, and the spread taken without the fastest and the slowest: one copy that a
// hypervisor tick or a page fault held up is not contention (an idle virtual machine shows
// such single outliers); other work slows most copies, not one.
constexpr int kProbeCopies = 9;

double monotonic_seconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// The aggregate "cpu" line of /proc/stat, in seconds.
struct CpuTimes {
  bool valid = false;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  double total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
};

CpuTimes read_cpu_times() {
  CpuTimes times;
  std::ifstream stat("/proc/stat");
  std::string label;
  if (!(stat >> label) || label != "cpu") return times;
  double ticks[8] = {};
  for (double& value : ticks) {
    if (!(stat >> value)) return times;
  }
  const double per_second = static_cast<double>(std::max(1L, sysconf(_SC_CLK_TCK)));
  times.user = ticks[0] / per_second;
  times.nice = ticks[1] / per_second;
  times.system = ticks[2] / per_second;
  times.idle = ticks[3] / per_second;
  times.iowait = ticks[4] / per_second;
  times.irq = ticks[5] / per_second;
  times.softirq = ticks[6] / per_second;
  times.steal = ticks[7] / per_second;
  times.valid = true;
  return times;
}

double load_average() {
  std::ifstream file("/proc/loadavg");
  double one_minute = 0;
  file >> one_minute;
  return one_minute;
}

int cores_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Spins `threads` threads for kProbeSeconds; returns the least share of wall time any of
// them spent on a CPU.
double probe_cpu_share(int threads) {
  std::vector<double> shares(static_cast<size_t>(threads), 0.0);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const double wall_begin = monotonic_seconds(), cpu_begin = thread_cpu_seconds();
      volatile double sink = 1.0;
      while (monotonic_seconds() - wall_begin < kProbeSeconds) {
        for (int i = 0; i < 1000; ++i) sink = sink * 1.0000001 + 1e-9;
      }
      const double wall = monotonic_seconds() - wall_begin;
      shares[static_cast<size_t>(t)] = wall > 0 ? (thread_cpu_seconds() - cpu_begin) / wall : 1.0;
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (std::thread& worker : workers) worker.join();
  return std::min(1.0, *std::min_element(shares.begin(), shares.end()));
}

}  // namespace

void judge_machine(MachineState& state, const MachineThresholds& thresholds) {
  state.findings.clear();
  std::vector<std::string> advice;
  if (state.kernel_threads > state.cores_available) {
    state.findings.push_back(std::to_string(state.kernel_threads) + " kernel threads on " +
                             std::to_string(state.cores_available) + " available cores: they take turns");
    advice.push_back("use --threads " + std::to_string(state.cores_available) + " or fewer");
  }
  if (state.cpu_share < thresholds.min_cpu_share) {
    state.findings.push_back("threads spinning like the kernels' got " + format_percent(state.cpu_share) +
                             " of their time on a CPU (other work: " + format_number(state.others_busy_cores, 2) +
                             " cores at normal priority, " + format_number(state.niced_busy_cores, 2) +
                             " niced; load average " + format_number(state.load_average, 2) + ")");
    if (state.own_nice > 0) {
      state.findings.back() += "; decodelab itself runs niced (nice " + std::to_string(state.own_nice) +
                               "), so other niced work competes with it on equal terms";
      advice.push_back("run decodelab at normal priority");
    } else if (state.autogroup && state.niced_busy_cores > state.others_busy_cores) {
      // Niced work still competes here: with autogroups the kernel shares the CPU between
      // sessions first, and nice levels only order the tasks inside one session.
      state.findings.back() += "; niced work in other sessions still competes: the kernel's autogroup scheduling "
                               "shares the CPU between sessions before nice levels apply";
    }
    const int fewer = std::max(1, static_cast<int>(std::floor(state.kernel_threads * state.cpu_share)));
    if (fewer < state.kernel_threads) {
      advice.push_back("run with --threads " + std::to_string(fewer) + " (the cores the other work leaves)");
    }
  }
  if (state.steal_fraction > thresholds.max_steal_fraction) {
    state.findings.push_back("the hypervisor took " + format_percent(state.steal_fraction) +
                             " of the CPU time (steal): other virtual machines share these cores");
    advice.push_back("time on a dedicated machine, or at a quieter hour");
  }
  if (state.probe_spread > thresholds.max_probe_spread) {
    state.findings.push_back("a short bandwidth probe's copies varied by " + format_percent(state.probe_spread) +
                             " (best " + format_bandwidth(state.probe_bandwidth) + ")");
  }
  if (state.quiet_probe_bandwidth > 0 &&
      state.probe_bandwidth < thresholds.min_of_quiet_bandwidth * state.quiet_probe_bandwidth) {
    state.findings.push_back("the bandwidth probe reached " + format_bandwidth(state.probe_bandwidth) + ", " +
                             format_percent(state.probe_bandwidth / state.quiet_probe_bandwidth) + " of the " +
                             format_bandwidth(state.quiet_probe_bandwidth) +
                             " it reached when the roofs were measured: memory is shared with other work");
  }
  state.notes.clear();
  const auto distance = [&](double round_trip) { return core_distance(round_trip, thresholds.max_near_core_round_trip_ns); };
  if (state.core_round_trip_ns > thresholds.max_near_core_round_trip_ns) {
    state.notes.push_back("the kernel threads' cores are far apart: a cache line's round trip between two of them took " +
                          format_round_trip(state.core_round_trip_ns) + " (cores sharing a cache: under " +
                          format_round_trip(thresholds.max_near_core_round_trip_ns) +
                          "); every parallel op pays it when its threads start and join and for the lines one core "
                          "wrote and another reads, so small parallel ops run slower than on near cores");
  }
  if (state.core_round_trip_ns > 0 && state.roofs_core_round_trip_ns > 0 &&
      std::string(distance(state.core_round_trip_ns)) != distance(state.roofs_core_round_trip_ns)) {
    state.notes.push_back(std::string("the roofs were measured with ") + distance(state.roofs_core_round_trip_ns) +
                          " cores (" + format_round_trip(state.roofs_core_round_trip_ns) + " round trip), these are " +
                          distance(state.core_round_trip_ns) + " (" + format_round_trip(state.core_round_trip_ns) +
                          ") (a virtual machine's vCPUs move): small parallel ops run at another speed than when "
                          "the roofs were measured");
  }
  state.contended = !state.findings.empty();
  if (state.contended) advice.push_back(advice.empty() ? "wait until the other work ends" : "or wait until the other work ends");
  state.advice.clear();
  for (const std::string& item : advice) state.advice += (state.advice.empty() ? "" : "; ") + item;
}

std::string MachineState::summary() const {
  std::ostringstream out;
  out << (contended ? "contended" : "quiet") << ": " << cores_available << " cores for " << kernel_threads
      << " kernel threads, CPU share " << format_percent(cpu_share) << ", steal " << format_percent(steal_fraction)
      << ", load average " << format_number(load_average, 2) << ", bandwidth probe " << format_bandwidth(probe_bandwidth)
      << " (spread " << format_percent(probe_spread);
  if (quiet_probe_bandwidth > 0) out << ", " << format_percent(probe_bandwidth / quiet_probe_bandwidth) << " of quiet";
  out << ")";
  if (core_round_trip_ns > 0) out << ", core round trip " << format_round_trip(core_round_trip_ns);
  return out.str();
}

std::string MachineState::warning(bool with_notes) const {
  std::string text;
  if (contended) {
    text = "decodelab: warning: this machine is busy; timings will be slow and noisy:\n";
    for (const std::string& finding : findings) text += "  - " + finding + "\n";
    if (!advice.empty()) text += "  what to do: " + advice + "\n";
  }
  if (with_notes)
    for (const std::string& note : notes) text += "decodelab: note: " + note + "\n";
  return text;
}

double probe_spread_of(std::vector<double> seconds) {
  return seconds.size() < 3 ? 0.0 : TimedSamples::of(std::move(seconds), 0.0).spread;
}

MachineState check_machine(Backend& backend, int threads, const RoofsMachine& roofs,
                           const MachineThresholds& thresholds, const std::function<void()>& checkpoint) {
  // An abandoned check leaves no op timings behind: the next user of the backend (the roofs,
  // a run) would count them as its own.
  struct DrainWhenAbandoned {
    Backend& backend;
    ~DrainWhenAbandoned() {
      if (std::uncaught_exceptions() == 0) return;
      try {
        backend.synchronize();
        backend.take_timings();
      } catch (...) {
      }
    }
  } drain{backend};
  const auto poll = [&] {
    if (checkpoint) checkpoint();
  };
  poll();
  MachineState state;
  state.cores_available = cores_available();
  const bool cpu = backend.name() == "cpu";
  state.kernel_threads = cpu ? (threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())))
                             : 1;
  state.load_average = load_average();
  std::ifstream autogroup("/proc/sys/kernel/sched_autogroup_enabled");
  int autogroup_enabled = 0;
  state.autogroup = (autogroup >> autogroup_enabled) && autogroup_enabled == 1;

  errno = 0;
  const int own_nice = getpriority(PRIO_PROCESS, 0);
  state.own_nice = errno == 0 ? own_nice : 0;
  const CpuTimes before = read_cpu_times();
  const double own_before = process_cpu_seconds(), wall_before = monotonic_seconds();
  state.cpu_share = probe_cpu_share(std::min(state.kernel_threads, 256));
  const CpuTimes after = read_cpu_times();
  const double own = process_cpu_seconds() - own_before, wall = monotonic_seconds() - wall_before;
  if (before.valid && after.valid && wall > 0) {
    // This process's own CPU time sits in "nice" when it runs niced, else in user + system.
    double normal = (after.user - before.user) + (after.system - before.system) + (after.irq - before.irq) +
                    (after.softirq - before.softirq);
    double niced = after.nice - before.nice;
    (state.own_nice > 0 ? niced : normal) -= own;
    state.others_busy_cores = std::max(0.0, normal / wall);
    state.niced_busy_cores = std::max(0.0, niced / wall);
    const double total = after.total() - before.total();
    state.steal_fraction = total > 0 ? (after.steal - before.steal) / total : 0.0;
  }

  poll();
  RoofMeasureOptions probe;
  probe.warmups = 1;
  probe.repeats = kProbeCopies;
  probe.checkpoint = checkpoint;  // before every copy, warm-ups included
  const size_t bytes = std::min(cpu ? kProbeCopyBytesCpu : kProbeCopyBytesGpu, backend.available_memory() / 8);
  const CopyMeasurement copy = measure_copy(backend, std::max<size_t>(bytes, size_t{1} << 20), probe);
  state.probe_bandwidth = copy.bandwidth;
  state.probe_spread = probe_spread_of(copy.timing.seconds);
  state.probe_warmup_copies = copy.timing.warmups;
  state.probe_warmup_seconds = copy.timing.warmup_seconds;
  state.quiet_probe_bandwidth = roofs.quiet_probe_bandwidth;
  // Only where ops run on several cores: a GPU's host thread, or one kernel thread, has
  // no hand-offs between cores to pay.
  poll();
  if (cpu && state.kernel_threads > 1 && state.cores_available > 1) state.core_round_trip_ns = measure_core_round_trip_ns();
  poll();
  state.roofs_core_round_trip_ns = roofs.core_round_trip_ns;
  judge_machine(state, thresholds);
  return state;
}

CpuUsageSample sample_cpu_usage() {
  CpuUsageSample sample;
  sample.wall_seconds = monotonic_seconds();
  sample.own_cpu_seconds = process_cpu_seconds();
  const CpuTimes times = read_cpu_times();
  if (!times.valid) return sample;
  sample.normal_seconds = times.user + times.system + times.irq + times.softirq;
  sample.niced_seconds = times.nice;
  sample.steal_seconds = times.steal;
  sample.total_seconds = times.total();
  std::ifstream stat("/proc/stat");
  for (std::string line; std::getline(stat, line);) {
    if (line.rfind("procs_running ", 0) == 0) {
      sample.procs_running = std::atoi(line.c_str() + 14);
      break;
    }
  }
  sample.valid = true;
  return sample;
}

MachineWatch start_machine_watch(const MachineState& state) {
  MachineWatch watch;
  watch.machine_cores = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  // The host thread that enqueues (and on a GPU waits) is busy beside the kernel threads.
  watch.own_threads = std::max(1, state.kernel_threads) + 1;
  watch.niced_competes = state.autogroup || state.own_nice > 0;
  return watch;
}

void add_window(MachineWatch& watch, const CpuUsageSample& before, const CpuUsageSample& after,
                const MachineThresholds& thresholds) {
  const double wall = after.wall_seconds - before.wall_seconds;
  if (!before.valid || !after.valid || wall <= 0) return;
  const double own = after.own_cpu_seconds - before.own_cpu_seconds;
  double others = (after.normal_seconds - before.normal_seconds) + (after.niced_seconds - before.niced_seconds) - own;
  // Niced work gives way to this run unless autogroups (or this run's own nice) put them on equal terms.
  if (!watch.niced_competes) others -= after.niced_seconds - before.niced_seconds;
  others = std::max(0.0, others);
  ++watch.windows;
  watch.wall_seconds += wall;
  watch.others_cpu_seconds += others;
  watch.steal_seconds += after.steal_seconds - before.steal_seconds;
  watch.total_seconds += after.total_seconds - before.total_seconds;
  watch.most_runnable_others = std::max(watch.most_runnable_others, after.procs_running - watch.own_threads);
  const double limit = watch.spare_cores() + thresholds.watch_margin_cores;
  const bool window_contended = wall >= thresholds.watch_min_window_seconds && others / wall > limit;
  if (window_contended) ++watch.contended_windows;
  if (wall >= thresholds.watch_min_window_seconds)
    watch.worst_window_others_cores = std::max(watch.worst_window_others_cores, others / wall);
  const bool overall = watch.others_busy_cores() > limit;
  const bool steal = watch.steal_fraction() > thresholds.max_steal_fraction;
  watch.contended = overall || watch.contended_windows > 0 || steal;
  watch.finding.clear();
  if (!watch.contended) return;
  std::ostringstream finding;
  finding << "while timing, other work took " << format_number(watch.others_busy_cores(), 2) << " cores on average";
  if (watch.worst_window_others_cores > watch.others_busy_cores())
    finding << " (" << format_number(watch.worst_window_others_cores, 2) << " in the busiest repeat)";
  finding << " of the " << watch.machine_cores << " this machine has, which leaves " << watch.spare_cores()
          << " beside decodelab's " << watch.own_threads << " busy threads";
  if (watch.most_runnable_others > 0) finding << "; up to " << watch.most_runnable_others << " other tasks waited to run";
  if (steal) finding << "; the hypervisor took " << format_percent(watch.steal_fraction()) << " (steal)";
  watch.finding = finding.str();
}

nlohmann::json to_json(const MachineWatch& watch) {
  return {{"contended", watch.contended},
          {"finding", watch.finding},
          {"windows", watch.windows},
          {"contended_windows", watch.contended_windows},
          {"seconds", watch.wall_seconds},
          {"others_busy_cores", watch.others_busy_cores()},
          {"worst_window_others_busy_cores", watch.worst_window_others_cores},
          {"spare_cores", watch.spare_cores()},
          {"machine_cores", watch.machine_cores},
          {"own_threads", watch.own_threads},
          {"most_runnable_others", watch.most_runnable_others},
          {"steal_fraction", watch.steal_fraction()}};
}

nlohmann::json to_json(const MachineState& state) {
  return {{"contended", state.contended},
          {"summary", state.summary()},
          {"findings", state.findings},
          {"advice", state.advice},
          {"cores_available", state.cores_available},
          {"kernel_threads", state.kernel_threads},
          {"cpu_share", state.cpu_share},
          {"others_busy_cores", state.others_busy_cores},
          {"niced_busy_cores", state.niced_busy_cores},
          {"steal_fraction", state.steal_fraction},
          {"load_average", state.load_average},
          {"probe_bandwidth_bytes_per_s", state.probe_bandwidth},
          {"probe_spread", state.probe_spread},
          {"probe_warmup_copies", state.probe_warmup_copies},
          {"probe_warmup_seconds", state.probe_warmup_seconds},
          {"quiet_probe_bandwidth_bytes_per_s", state.quiet_probe_bandwidth},
          {"core_round_trip_ns", state.core_round_trip_ns},
          {"roofs_core_round_trip_ns", state.roofs_core_round_trip_ns},
          {"notes", state.notes},
          {"own_nice", state.own_nice},
          {"autogroup", state.autogroup}};
}

}  // namespace decodelab
