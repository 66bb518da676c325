// Trace -> RunAnalysis. One pass assigns each op and host call to its run, phase and
// step (by host time inside the ranges), one pass over the ops in device order splits
// the device timeline into busy and idle, and a third groups the ops' costs.
#include "profiling/model/analysis.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include "engine/base/errors.h"
#include "profiling/model/cost_model.h"
#include "profiling/model/host_stalls.h"
#include "profiling/units.h"

namespace decodelab {

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::Prefill: return "prefill";
    case Phase::Decode: return "decode";
    case Phase::Other: return "other";
  }
  return "other";
}

void TimelineStats::add(const TimelineStats& other) {
  span_seconds += other.span_seconds;
  busy_seconds += other.busy_seconds;
  idle_seconds += other.idle_seconds;
  gaps += other.gaps;
  largest_gap_seconds = std::max(largest_gap_seconds, other.largest_gap_seconds);
  syncs += other.syncs;
  host_stall_seconds += other.host_stall_seconds;
  host_stalls += other.host_stalls;
  ops += other.ops;
}

const PhaseStats* RunAnalysis::phase(Phase which) const {
  for (const PhaseStats& stats : phases) {
    if (stats.phase == which) return &stats;
  }
  return nullptr;
}

namespace {

constexpr double kNs = 1e-9;

// Closed ranges of one kind, in begin order, for "which range holds this instant".
class RangeIndex {
 public:
  RangeIndex(const Trace& trace, RangeKind kind) {
    const auto& ranges = trace.ranges();
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (ranges[i].kind == kind && ranges[i].closed()) members_.push_back(static_cast<int>(i));
    }
    std::stable_sort(members_.begin(), members_.end(),
                     [&](int a, int b) { return ranges[static_cast<size_t>(a)].begin_ns < ranges[static_cast<size_t>(b)].begin_ns; });
    ranges_ = &ranges;
  }

  // Ordinal (position in begin order) of the range containing ns, or -1.
  int find(int64_t ns) const {
    auto after = std::upper_bound(members_.begin(), members_.end(), ns,
                                  [&](int64_t t, int r) { return t < range(r).begin_ns; });
    if (after == members_.begin()) return -1;
    const int ordinal = static_cast<int>(after - members_.begin()) - 1;
    return range(members_[static_cast<size_t>(ordinal)]).contains(ns) ? ordinal : -1;
  }
  size_t size() const { return members_.size(); }
  const TraceRange& at(size_t ordinal) const { return range(members_[ordinal]); }

 private:
  const TraceRange& range(int index) const { return (*ranges_)[static_cast<size_t>(index)]; }
  const std::vector<TraceRange>* ranges_ = nullptr;
  std::vector<int> members_;
};

// Where one op or host call belongs.
struct Placement {
  Phase phase = Phase::Other;
  int step = -1;  // ordinal among step ranges
  int run = -1;   // ordinal among run ranges
};

struct Placer {
  RangeIndex runs, prefills, steps;
  explicit Placer(const Trace& trace)
      : runs(trace, RangeKind::Run), prefills(trace, RangeKind::Prefill), steps(trace, RangeKind::Step) {}

  Placement place(int64_t host_ns) const {
    Placement placement;
    placement.run = runs.find(host_ns);
    placement.step = steps.find(host_ns);
    if (placement.step >= 0) {
      placement.phase = Phase::Decode;
    } else if (prefills.find(host_ns) >= 0) {
      placement.phase = Phase::Prefill;
    }
    return placement;
  }
};

std::string precision_label(unsigned mask) {
  std::string label;
  for (Precision precision : {Precision::Fp32, Precision::Tf32, Precision::Fp16, Precision::Bf16}) {
    if (!(mask & (1u << static_cast<unsigned>(precision)))) continue;
    if (!label.empty()) label += '+';  // appended piecewise: GCC 12 misreports "literal" + string (-Wrestrict)
    label += precision_name(precision);
  }
  return label;
}

std::string phase_sentence(const PhaseStats& phase, const std::string& precision, const RunAnalysis& analysis) {
  const std::string name = phase_name(phase.phase);
  if (phase.opaque_fraction >= 0.5) {  // captured graphs: no op to read against a roof
    std::string sentence = name + " runs inside captured graphs: " + format_percent(phase.opaque_fraction) +
                           " of its device time is in graph replays whose ops the trace cannot see";
    if (phase.limiter == Limiter::Overhead) {
      sentence += "; the device waits " + format_percent(phase.timeline.idle_fraction()) + " of the time";
    }
    return sentence;
  }
  const RooflinePoint& point = phase.point;
  const std::string roof = point.memory_side() ? "the bandwidth roof" : "the " + precision + " compute roof";
  const std::string fraction = format_percent(point.memory_side() ? point.memory_fraction() : point.compute_fraction());
  const std::string verdict = name + " is " + limiter_verdict(phase.limiter, phase.near);
  switch (phase.limiter) {
    case Limiter::Memory:
    case Limiter::Compute:
      return verdict + (phase.near ? ", " : " ") + "at " + fraction + " of " + roof;
    case Limiter::Latency:
      return verdict + ": " + fraction + " of " + roof + ", neither unit near its peak";
    case Limiter::Overhead:
      if (phase.timeline.idle_fraction() >= analysis.thresholds.idle_overhead_fraction) {
        return verdict + ": the device waits " + format_percent(phase.timeline.idle_fraction()) + " of the time, in " +
               std::to_string(phase.timeline.gaps) + " gaps";
      }
      return verdict + ": its ops average " + format_seconds(point.mean_seconds()) + ", under the " +
             format_seconds(analysis.thresholds.tiny_op_seconds(analysis.gpu)) + " a launch dominates";
  }
  return name;
}

// Every group above its roof gets an explanation; the cache decides which one. The notes
// say it once per phase and explanation, naming the groups.
void explain_points_above_roof(RunAnalysis& analysis, const std::array<double, 3>& working_set) {
  const double cache = analysis.device_spec.cache_bytes;
  for (const OpGroup& group : analysis.categories) {
    if (group.point.roof_fraction() <= analysis.thresholds.above_roof_fraction) continue;
    AboveRoof above;
    above.phase = group.phase;
    above.category = group.category;
    above.roof_fraction = group.point.roof_fraction();
    above.working_set_bytes = working_set[static_cast<size_t>(group.phase)];
    above.cache_bytes = cache;
    above.cache_resident = cache > 0 && above.working_set_bytes <= cache;
    const std::string pass = group.phase == Phase::Decode ? "a decode step" : group.phase == Phase::Prefill ? "a prefill" : "the rest of the run";
    if (above.cache_resident) {
      above.explanation = "cache-resident: " + pass + " touches " + format_bytes(above.working_set_bytes) + ", within the " +
                          format_bytes(cache) + " last-level cache, so its data stays in cache and the DRAM bandwidth roof "
                          "does not bound it";
    } else {
      above.explanation = "roof suspect: " + pass + " touches " + format_bytes(above.working_set_bytes) +
                          (cache > 0 ? ", more than the " + format_bytes(cache) + " last-level cache, "
                                     : " and the cache size is unknown, ") +
                          "so the " + analysis.device_spec.roofs_origin() +
                          " roofs read low (measured under load?): calibrate again on a quiet machine "
                          "(decodelab calibrate)";
    }
    analysis.above_roof.push_back(std::move(above));
  }
  std::vector<std::pair<std::string, std::string>> notes;  // explanation -> "decode matmul (132%), ..."
  for (const AboveRoof& above : analysis.above_roof) {
    const std::string name = std::string(phase_name(above.phase)) + " " + op_category_name(above.category) + " (" +
                             format_percent(above.roof_fraction) + ")";
    auto found = std::find_if(notes.begin(), notes.end(), [&](const auto& note) { return note.first == above.explanation; });
    if (found == notes.end()) {
      notes.emplace_back(above.explanation, name);
    } else {
      found->second += ", " + name;
    }
  }
  for (const auto& [explanation, names] : notes) {
    analysis.notes.push_back(names + " ran above " + (names.find(',') == std::string::npos ? "its roof" : "their roofs") +
                             ": " + explanation);
  }
}

}  // namespace

double RunAnalysis::host_stall_fraction() const {
  const PhaseStats* decode = phase(Phase::Decode);
  return (decode && decode->timeline.device_seconds() > 0 ? decode->timeline : timeline).host_stall_fraction();
}

bool RunAnalysis::roofs_suspect() const {
  return std::any_of(above_roof.begin(), above_roof.end(), [](const AboveRoof& above) { return !above.cache_resident; });
}

namespace {

// The device timeline: per op, busy and idle time (idle split into gaps and the host's
// stalls), added to the whole trace's, its phase's, its run's and its step's timelines.
struct Timelines {
  std::array<TimelineStats, 3> phases{};
  std::vector<TimelineStats> runs;
};

// Ops in device order (those with a device time), counting the others as untimed.
std::vector<size_t> ops_in_device_order(const Trace& trace, const std::vector<Placement>& placements,
                                        RunAnalysis& analysis, Timelines& timelines) {
  const auto& ops = trace.ops();
  std::vector<size_t> device_order;
  device_order.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].desc.category != OpCategory::Marker) {
      ++analysis.timeline.ops;
      ++timelines.phases[static_cast<size_t>(placements[i].phase)].ops;
      if (placements[i].run >= 0) ++timelines.runs[static_cast<size_t>(placements[i].run)].ops;
      if (placements[i].step >= 0) ++analysis.steps[static_cast<size_t>(placements[i].step)].timeline.ops;
    }
    if (ops[i].has_device_time()) {
      device_order.push_back(i);
    } else if (ops[i].desc.category != OpCategory::Marker) {
      ++analysis.ops_without_timing;
    }
  }
  std::stable_sort(device_order.begin(), device_order.end(),
                   [&](size_t a, size_t b) { return ops[a].device_begin_ns < ops[b].device_begin_ns; });
  return device_order;
}

// The spans of the steps, prefills and runs, and then their busy and idle time, gaps,
// host stalls and syncs.
void measure_timelines(const Trace& trace, const Placer& placer, const std::vector<Placement>& placements,
                       const std::vector<size_t>& device_order, RunAnalysis& analysis, Timelines& timelines) {
  const LimiterThresholds& thresholds = analysis.thresholds;
  const double gap_line = thresholds.gap_seconds(analysis.gpu);
  for (size_t p = 0; p < placer.prefills.size(); ++p) {
    const TraceRange& range = placer.prefills.at(p);
    timelines.phases[static_cast<size_t>(Phase::Prefill)].span_seconds += (range.end_ns - range.begin_ns) * kNs;
  }
  for (size_t r = 0; r < placer.runs.size(); ++r) {
    const TraceRange& range = placer.runs.at(r);
    timelines.runs[r].span_seconds = (range.end_ns - range.begin_ns) * kNs;
  }
  for (const StepStats& step : analysis.steps) {
    timelines.phases[static_cast<size_t>(Phase::Decode)].span_seconds += step.timeline.span_seconds;
  }
  auto for_each_timeline = [&](const Placement& where, auto&& update) {
    update(analysis.timeline);
    update(timelines.phases[static_cast<size_t>(where.phase)]);
    if (where.run >= 0) update(timelines.runs[static_cast<size_t>(where.run)]);
    if (where.step >= 0) update(analysis.steps[static_cast<size_t>(where.step)].timeline);
  };
  const auto& ops = trace.ops();
  const HostStalls host_stalls(trace, thresholds.host_stall_seconds);
  int64_t device_free_ns = device_order.empty() ? 0 : ops[device_order.front()].device_begin_ns;
  for (size_t i : device_order) {
    const TraceOp& op = ops[i];
    const double idle = std::max<int64_t>(0, op.device_begin_ns - device_free_ns) * kNs;
    const double busy = std::max<int64_t>(0, op.device_end_ns - std::max(op.device_begin_ns, device_free_ns)) * kNs;
    const double stalled = idle > 0 ? host_stalls.overlap_seconds(device_free_ns, op.device_begin_ns) : 0.0;
    device_free_ns = std::max(device_free_ns, op.device_end_ns);
    for_each_timeline(placements[i], [&](TimelineStats& timeline) {
      timeline.busy_seconds += busy;
      timeline.idle_seconds += idle;
      timeline.host_stall_seconds += stalled;
      if (stalled > 0) ++timeline.host_stalls;
      if (idle >= gap_line) ++timeline.gaps;
      timeline.largest_gap_seconds = std::max(timeline.largest_gap_seconds, idle);
    });
    if (placements[i].step >= 0) {
      analysis.steps[static_cast<size_t>(placements[i].step)].category_seconds[static_cast<size_t>(op.desc.category)] += busy;
    }
  }
  for (const HostCall& call : trace.host_calls()) {
    if (call.kind != HostCallKind::Synchronize && call.kind != HostCallKind::DeviceToHost) continue;
    for_each_timeline(placer.place(call.begin_ns), [](TimelineStats& timeline) { ++timeline.syncs; });
  }
  analysis.timeline.span_seconds = 0;
  for (const TimelineStats& run : timelines.runs) analysis.timeline.span_seconds += run.span_seconds;
  if (timelines.runs.empty()) analysis.timeline.span_seconds = (trace.last_ns() - trace.first_ns()) * kNs;
  for (StepStats& step : analysis.steps) {
    step.overhead_bound = step.timeline.idle_fraction() >= thresholds.idle_overhead_fraction;
  }
}

// One step per step range, with its span and the group it belongs to.
std::vector<StepStats> step_ranges(const Trace& trace, const Placer& placer) {
  std::vector<StepStats> steps(placer.steps.size());
  for (size_t s = 0; s < steps.size(); ++s) {
    const TraceRange& range = placer.steps.at(s);
    StepStats& step = steps[s];
    step.ordinal = static_cast<int>(s);
    step.index = range.index;
    if (range.parent >= 0 && trace.ranges()[static_cast<size_t>(range.parent)].kind == RangeKind::Group) {
      step.group = trace.ranges()[static_cast<size_t>(range.parent)].index;
    }
    step.timeline.span_seconds = (range.end_ns - range.begin_ns) * kNs;
  }
  return steps;
}

// A phase's work: the ops whose work the trace can see as one roofline point, the compute
// seconds per precision (which compute roof dominates), and the device time of ops with no
// declared work (graph replays).
struct PhaseWork {
  RooflinePoint point;
  std::array<double, 4> compute_seconds{};
  double opaque_seconds = 0;
};

// The ops' costs grouped by category × phase and by op (the top ops), and per phase;
// each group's limiter and share of the device's busy time (in key order: sort_groups
// orders them by time).
std::array<PhaseWork, 3> group_work(const Trace& trace, const std::vector<Placement>& placements,
                                    const std::vector<size_t>& device_order, RunAnalysis& analysis) {
  using CategoryKey = std::tuple<Phase, OpCategory>;
  using OpKey = std::tuple<Phase, std::string, std::string, unsigned>;
  std::map<CategoryKey, std::pair<OpGroup, unsigned>> categories;
  std::map<OpKey, OpGroup> top_ops;
  std::array<PhaseWork, 3> phase_work{};
  const auto& ops = trace.ops();
  for (size_t i : device_order) {
    const TraceOp& op = ops[i];
    if (op.desc.category == OpCategory::Marker) continue;
    const OpCost cost = op_cost(op.desc);
    const Phase phase = placements[i].phase;
    const unsigned precision_bit = 1u << static_cast<unsigned>(cost.precision);
    auto& [category, category_precisions] = categories[{phase, op.desc.category}];
    category.phase = phase;
    category.category = op.desc.category;
    category.point.add(cost, op.device_seconds(), analysis.roofs);
    category_precisions |= precision_bit;
    OpGroup& group = top_ops[{phase, op.desc.name, op.desc.label, precision_bit}];
    group.phase = phase;
    group.category = op.desc.category;
    group.name = op.desc.name;
    group.label = op.desc.label;
    group.precision = precision_name(cost.precision);
    group.point.add(cost, op.device_seconds(), analysis.roofs);
    PhaseWork& work = phase_work[static_cast<size_t>(phase)];
    if (op.desc.inputs.empty() && op.desc.outputs.empty()) {  // a captured graph: its ops are not described
      work.opaque_seconds += op.device_seconds();
      continue;
    }
    work.point.add(cost, op.device_seconds(), analysis.roofs);
    work.compute_seconds[static_cast<size_t>(cost.precision)] += cost.flops / analysis.roofs.flops(cost.precision);
  }
  const double busy_total = analysis.timeline.busy_seconds;
  auto finish = [&](OpGroup& group) {
    group.limiter = classify_limiter(group.point, analysis.gpu, analysis.thresholds);
    group.near = near_limiter(group.point, analysis.gpu, analysis.thresholds);
    group.share_of_device_time = busy_total > 0 ? group.point.seconds / busy_total : 0.0;
  };
  for (auto& [key, entry] : categories) {
    entry.first.precision = precision_label(entry.second);
    finish(entry.first);
    analysis.categories.push_back(entry.first);
  }
  for (auto& [key, group] : top_ops) {
    finish(group);
    analysis.top_ops.push_back(group);
  }
  return phase_work;
}

// Categories and top ops by device time, the longest first; options.top_ops of the latter.
void sort_groups(const AnalysisOptions& options, RunAnalysis& analysis) {
  auto by_time = [](const OpGroup& a, const OpGroup& b) { return a.point.seconds > b.point.seconds; };
  std::stable_sort(analysis.categories.begin(), analysis.categories.end(), by_time);
  std::stable_sort(analysis.top_ops.begin(), analysis.top_ops.end(), by_time);
  if (analysis.top_ops.size() > options.top_ops) analysis.top_ops.resize(options.top_ops);
}

// Each phase the trace shows, its limiter and sentence; then the whole run's summary.
void summarise_phases(const Placer& placer, const Timelines& timelines, const std::array<PhaseWork, 3>& phase_work,
                      RunAnalysis& analysis) {
  const LimiterThresholds& thresholds = analysis.thresholds;
  std::vector<std::string> sentences;
  for (Phase which : {Phase::Prefill, Phase::Decode, Phase::Other}) {
    const size_t slot = static_cast<size_t>(which);
    const RooflinePoint& work = phase_work[slot].point;
    const double opaque = phase_work[slot].opaque_seconds;
    const bool ranged = which == Phase::Decode ? placer.steps.size() > 0 : which == Phase::Prefill && placer.prefills.size() > 0;
    if (work.count == 0 && opaque == 0 && !ranged) continue;
    PhaseStats stats;
    stats.phase = which;
    stats.timeline = timelines.phases[slot];
    stats.point = work;
    stats.opaque_fraction = opaque + work.seconds > 0 ? opaque / (opaque + work.seconds) : 0.0;
    stats.steps = which == Phase::Decode ? static_cast<int64_t>(placer.steps.size())
                                         : which == Phase::Prefill ? static_cast<int64_t>(placer.prefills.size()) : 0;
    stats.limiter = stats.timeline.idle_fraction() >= thresholds.idle_overhead_fraction
                        ? Limiter::Overhead
                        : classify_limiter(work, analysis.gpu, thresholds);
    stats.near = near_limiter(work, analysis.gpu, thresholds, stats.timeline.idle_fraction());
    const auto& by_precision = phase_work[slot].compute_seconds;
    const auto dominant = static_cast<Precision>(std::max_element(by_precision.begin(), by_precision.end()) - by_precision.begin());
    stats.summary = phase_sentence(stats, precision_name(dominant), analysis);
    if (which != Phase::Other || (placer.steps.size() == 0 && placer.prefills.size() == 0)) {
      sentences.push_back(stats.summary);
    }
    analysis.phases.push_back(std::move(stats));
  }
  std::string summary;
  for (const std::string& sentence : sentences) summary += (summary.empty() ? "" : "; ") + sentence;
  summary += (summary.empty() ? "the device is idle " : "; the device is idle ") +
             format_percent(analysis.timeline.idle_fraction()) + " of the time";
  if (const PhaseStats* decode = analysis.phase(Phase::Decode); decode && decode->timeline.syncs > 0 && decode->steps > 0) {
    summary += ", with " + format_number(static_cast<double>(decode->timeline.syncs) / static_cast<double>(decode->steps), 2) +
               " host syncs per decode step";
  }
  analysis.summary = summary;
}

// One line per run: its host time, busy fraction, gaps, syncs and ops.
void summarise_runs(const Placer& placer, const Timelines& timelines, RunAnalysis& analysis) {
  for (size_t r = 0; r < timelines.runs.size(); ++r) {
    RunTimeline run;
    run.index = placer.runs.at(r).index;
    run.timeline = timelines.runs[r];
    run.summary = "run " + std::to_string(r) + ": " + format_seconds(run.timeline.span_seconds) + " host time, device busy " +
                  format_percent(run.timeline.busy_fraction()) + ", " + std::to_string(run.timeline.gaps) + " gaps, " +
                  std::to_string(run.timeline.syncs) + " syncs, " + std::to_string(run.timeline.ops) + " ops";
    analysis.runs.push_back(run);
  }
}

}  // namespace

// Places every op in its run, phase and step; measures the device timeline; groups the
// work; explains points above their roofs; and sums it all up in sentences.
RunAnalysis analyze(const Trace& trace, const DeviceSpec* device, const AnalysisOptions& options) {
  RunAnalysis analysis;
  const TraceMetadata& meta = trace.metadata();
  if (!device && !meta.device_spec) {
    throw InputError("", 0, "device", "the trace carries no device roofs; pass a device spec (--device NAME)");
  }
  analysis.device_spec = device ? *device : *meta.device_spec;
  analysis.roofs = analysis.device_spec.effective_roofs();
  analysis.backend = meta.backend;
  analysis.device = meta.device;
  analysis.dtype = meta.dtype;
  analysis.model = meta.model;
  analysis.thresholds = options.thresholds;
  analysis.gpu = meta.is_gpu();

  const Placer placer(trace);
  std::vector<Placement> placements(trace.ops().size());
  for (size_t i = 0; i < trace.ops().size(); ++i) placements[i] = placer.place(trace.ops()[i].host_begin_ns);
  analysis.steps = step_ranges(trace, placer);
  Timelines timelines;
  timelines.runs.resize(placer.runs.size());
  const std::vector<size_t> device_order = ops_in_device_order(trace, placements, analysis, timelines);
  measure_timelines(trace, placer, placements, device_order, analysis, timelines);

  const std::array<PhaseWork, 3> phase_work = group_work(trace, placements, device_order, analysis);
  {
    // A pass's declared bytes: one decode step, one prefill, or all of the rest.
    std::array<double, 3> working_set{};
    const double passes[3] = {static_cast<double>(std::max<size_t>(1, placer.prefills.size())),
                              static_cast<double>(std::max<size_t>(1, placer.steps.size())), 1.0};
    for (size_t p = 0; p < 3; ++p) working_set[p] = phase_work[p].point.bytes / passes[p];
    explain_points_above_roof(analysis, working_set);
  }
  if (analysis.ops_without_timing > 0) {
    analysis.notes.push_back(std::to_string(analysis.ops_without_timing) +
                             " ops never received a device time (no sync after them, or replayed inside a "
                             "captured graph): they are left out of the tables");
  }
  sort_groups(options, analysis);
  summarise_phases(placer, timelines, phase_work, analysis);
  summarise_runs(placer, timelines, analysis);
  return analysis;
}

}  // namespace decodelab
