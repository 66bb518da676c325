// Is this machine quiet enough to time on? Checked before timing starts (run, compare,
// lab, sweep, roofline --measure): the cores this process may use against the kernel
// threads it will start, the CPU time those threads really get, CPU steal, the load
// average, a short bandwidth probe (its spread, and its best against the value the
// calibration recorded when it was measured on a quiet machine), and how far apart two cores
// are (a cache line's round trip, profiling/measure/core_round_trip.h). A contended machine is
// said on stderr with the numbers and what to do, recorded in the JSON and the report, and in
// a calibration measured then (profiling/measure/calibration.h). Far-apart cores are
// a note, not contention: nothing else is using the machine, but small parallel ops run
// slower than on near cores, and slower than roofs measured with near cores predict.
//
// Non-obvious choice: the verdict rests on the CPU share a probe gets — threads spinning
// for a moment, their CPU time over the wall time — not on the load average. The load
// average counts every runnable task, also niced builds that give way to a normal-priority
// run, and misses nothing that the probe would not see as lost CPU time; the probe
// measures what contends with this process under whatever scheduler policy (nice levels,
// autogroups, cgroup quotas, a hypervisor) the machine has. The load average and
// /proc/stat's busy time by priority are recorded beside it, as explanation.
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend.h"
#include "profiling/measure/core_round_trip.h"

namespace decodelab {

// Every threshold of the verdict, in one place (docs/metrics.md, "Machine check").
struct MachineThresholds {
  // The probe threads must get at least this share of their wall time on a CPU.
  double min_cpu_share = 0.80;
  // Time the hypervisor ran something else while this virtual machine wanted the CPU.
  double max_steal_fraction = 0.05;
  // (second slowest - second fastest) / median of the bandwidth probe's copies.
  double max_probe_spread = 0.15;
  // The probe's best copy below this share of the quiet value the calibration recorded:
  // steady contention (a low spread, but everything slower).
  double min_of_quiet_bandwidth = 0.75;
  // A core round trip above this: the kernel threads' cores are far apart (a note).
  double max_near_core_round_trip_ns = kNearCoreRoundTripNs;
  // While timing (MachineWatch): other work above the spare cores by more than this is
  // contention; half a core, since /proc/stat counts in 10 ms ticks and a window of a
  // repeat or two sees a tick or two of system housekeeping.
  double watch_margin_cores = 0.5;
  // A single window is judged on its own only when it is this long (shorter ones only count
  // in the sum): a 30 ms window holds three ticks per CPU.
  double watch_min_window_seconds = 0.2;
};

// What was looked at, and the verdict.
struct MachineState {
  int cores_available = 0;         // CPUs this process may run on (its affinity mask)
  int kernel_threads = 0;          // threads the backend's kernels use (1 for a GPU's host thread)
  double load_average = 0;         // /proc/loadavg, 1 minute
  double cpu_share = 1;            // the probe threads' CPU time / wall time (the least of them)
  double others_busy_cores = 0;    // /proc/stat over the probe: other normal-priority work, in cores
  double niced_busy_cores = 0;     // ... niced work (gives way to a normal-priority run)
  double steal_fraction = 0;       // /proc/stat steal / all CPU time over the probe
  double probe_bandwidth = 0;      // bytes/s, the probe's best copy (bytes read + written)
  double probe_spread = 0;         // (second slowest - second fastest) / median of its copies
  double quiet_probe_bandwidth = 0;  // the same probe when the roofs were measured quietly; 0 = none
  int probe_warmup_copies = 0;     // warm-up copies before the probe's timed ones (the first on fresh buffers)
  double probe_warmup_seconds = 0; // their time together
  double core_round_trip_ns = 0;   // a cache line's round trip between two cores; 0 = not probed (one kernel thread)
  double roofs_core_round_trip_ns = 0;  // the same when the calibration was measured; 0 = none
  int own_nice = 0;                // this process's nice level
  bool autogroup = false;          // /proc/sys/kernel/sched_autogroup_enabled: sessions share the CPU before nice applies
  bool contended = false;
  std::vector<std::string> findings;  // one sentence per reason, with its numbers
  std::string advice;                 // what to do about it
  std::vector<std::string> notes;     // what explains timings without being contention (far cores)

  // "quiet: 2 cores for 2 kernel threads, CPU share 99%, ..." or "contended: ...".
  std::string summary() const;
  // The stderr warning (several lines) and, `with_notes`, the notes; empty when there is nothing to say.
  std::string warning(bool with_notes = true) const;
};

// Judges the figures (fills contended, findings and advice). Separate from the probing
// so that the rules can be tested on figures of any machine.
void judge_machine(MachineState& state, const MachineThresholds& thresholds = {});

// The bandwidth probe's spread: a timed figure's spread (TimedSamples::spread) of the copies'
// times — of its nine, (second slowest - second fastest) / median, a single held-up copy at
// either end not counting; 0 below 3 copies.
double probe_spread_of(std::vector<double> seconds);

// What the calibration recorded of the machine when its roofs were measured (0 = none).
struct RoofsMachine {
  double quiet_probe_bandwidth = 0;  // only from a quiet measurement
  double core_round_trip_ns = 0;
};

// Probes the machine for the backend about to time: `threads` kernel threads (0 = every
// core); `roofs` from the calibration. About 0.5 s on a quiet machine, seconds on a busy one.
// `checkpoint` (may be empty), the roof measurement's (RoofMeasureOptions::checkpoint), is
// called between the probes and before every copy of the bandwidth probe: it throws to
// abandon the check (a stop requested), which then leaves the backend idle and its op
// timings taken. The longest wait for it is one probe's spin or round trips (0.2 s) or one copy.
MachineState check_machine(Backend& backend, int threads, const RoofsMachine& roofs,
                           const MachineThresholds& thresholds = {}, const std::function<void()>& checkpoint = {});

nlohmann::json to_json(const MachineState& state);

// Watching the machine while timing. The check above is one moment before the repeats; work
// that starts after it (a build, another user's job) takes the cores from the repeats and
// leaves figures that look certain and are wrong. So every timed repeat is also a window in
// which /proc/stat and this process's own CPU time are read at both ends: the CPU time other
// tasks took (all of it, less ours) against the cores this process leaves spare, and steal.
struct CpuUsageSample {
  bool valid = false;
  double wall_seconds = 0;     // monotonic
  double own_cpu_seconds = 0;  // this process, every thread
  double normal_seconds = 0;   // /proc/stat user + system + irq + softirq, every CPU
  double niced_seconds = 0;    // /proc/stat nice
  double steal_seconds = 0;
  double total_seconds = 0;    // every state, idle included
  int procs_running = 0;       // /proc/stat: runnable tasks at this moment, ours included
};
CpuUsageSample sample_cpu_usage();

// What the windows saw, and the verdict (docs/metrics.md, "Machine check").
struct MachineWatch {
  int machine_cores = 0;  // CPUs /proc/stat counts (online)
  int own_threads = 0;    // threads this process keeps busy: kernel threads + the host thread
  bool niced_competes = false;  // niced work takes CPU from this run (autogroups, or this run niced)
  int windows = 0, contended_windows = 0;
  double wall_seconds = 0;         // the windows' time together
  double others_cpu_seconds = 0;   // CPU time other tasks took in them
  double steal_seconds = 0, total_seconds = 0;
  double worst_window_others_cores = 0;  // the busiest window, in cores of other work
  int most_runnable_others = 0;    // runnable tasks beyond this process's threads, at a window's end
  bool contended = false;
  std::string finding;  // one sentence with the numbers, when contended

  // Other work in cores, over all the windows; the cores it could have had without taking ours.
  double others_busy_cores() const { return wall_seconds > 0 ? others_cpu_seconds / wall_seconds : 0.0; }
  double spare_cores() const { return std::max(0, machine_cores - own_threads); }
  double steal_fraction() const { return total_seconds > 0 ? steal_seconds / total_seconds : 0.0; }
};

// A watch for a run on `state`'s machine (its kernel threads, nice level and autogroup).
MachineWatch start_machine_watch(const MachineState& state);
// Adds the window between two samples and judges the watch again: contended when other work
// took more than the spare cores plus `margin_cores` — over all the windows, or in one window
// long enough for /proc/stat's ticks to say so (`min_window_seconds`) — or steal went above
// the check's threshold.
void add_window(MachineWatch& watch, const CpuUsageSample& before, const CpuUsageSample& after,
                const MachineThresholds& thresholds = {});
nlohmann::json to_json(const MachineWatch& watch);

}  // namespace decodelab
