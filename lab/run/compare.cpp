// Fixed vs buggy runs, in alternated pairs on one backend (see compare.h).
#include "lab/run/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <sstream>

#include "engine/base/clock.h"
#include "lab/run/interrupt.h"
#include "lab/predict/predict.h"
#include "lab/report/run_report.h"
#include "lab/run/token_agreement.h"
#include "profiling/measure/calibration.h"
#include "profiling/measure/default_roofs.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

const char* bucket_of(OpCategory category) {
  switch (category) {
    case OpCategory::Matmul: return "matmul";
    case OpCategory::Attention: return "attention";
    case OpCategory::Copy: return "copy";
    case OpCategory::Cast: return "cast";
    case OpCategory::Memcpy: return "sync/idle";
    default: return "other";
  }
}


void set_trace_metadata(Trace& trace, const Scenario& scenario, const Backend& backend, const DeviceSpec& spec) {
  TraceMetadata& metadata = trace.metadata();
  metadata.backend = backend.name();
  metadata.device = backend.device_description();
  metadata.dtype = dtype_name(scenario.dtype);
  metadata.model = ModelShape::of(scenario.model_config);
  metadata.device_spec = spec;
}

// "run.max_seconds, 20 s" or "its share of the lab's budget, 31 s".
std::string budget_text(const CompareOptions& options, const RepeatPolicy& policy) {
  char text[96];
  if (options.deadline_ns) {
    std::snprintf(text, sizeof text, "%.0f s left of the lab's budget when it began", options.budget_seconds);
  } else {
    std::snprintf(text, sizeof text, "run.max_seconds, %g s", policy.max_seconds);
  }
  return text;
}

std::string progress_text(const CompareOptions& options, const std::string& what) {
  return options.progress_label + (options.progress_label.empty() ? "" : ": ") + what;
}

}  // namespace

const std::vector<std::string>& bucket_order() {
  static const std::vector<std::string> order = {"matmul", "attention", "copy", "cast", "sync/idle", "other"};
  return order;
}

std::vector<double> bucket_ms_per_token(const RunAnalysis& analysis, AttributionScope scope, int64_t tokens) {
  std::vector<double> ms(bucket_order().size(), 0.0);
  if (tokens <= 0) return ms;
  auto index_of = [](const std::string& bucket) {
    return static_cast<size_t>(std::find(bucket_order().begin(), bucket_order().end(), bucket) - bucket_order().begin());
  };
  const double per_token = 1e3 / static_cast<double>(tokens);
  for (const OpGroup& group : analysis.categories) {
    if (scope == AttributionScope::Decode && group.phase != Phase::Decode) continue;
    ms[index_of(bucket_of(group.category))] += group.point.seconds * per_token;
  }
  const PhaseStats* decode = analysis.phase(Phase::Decode);
  const double idle = scope == AttributionScope::EndToEnd ? analysis.timeline.idle_seconds
                      : decode                            ? decode->timeline.idle_seconds
                                                          : 0.0;
  ms[index_of("sync/idle")] += idle * per_token;
  return ms;
}

std::vector<CategoryDelta> category_deltas(const std::vector<std::vector<double>>& fixed,
                                           const std::vector<std::vector<double>>& buggy) {
  std::vector<CategoryDelta> deltas;
  const size_t pairs = std::min(fixed.size(), buggy.size());
  for (size_t i = 0; i < bucket_order().size(); ++i) {
    std::vector<double> fixed_ms, buggy_ms, differences;
    for (size_t pair = 0; pair < pairs; ++pair) {
      fixed_ms.push_back(fixed[pair].at(i));
      buggy_ms.push_back(buggy[pair].at(i));
      differences.push_back(buggy[pair].at(i) - fixed[pair].at(i));
    }
    deltas.push_back({bucket_order()[i], median_of(fixed_ms), median_of(buggy_ms), median_estimate(differences, 0.0)});
  }
  return deltas;
}

double ms_per_token(const GenerationTiming& timing, SlowdownMetric metric, const Workload& workload) {
  if (metric == SlowdownMetric::Decode) {
    return timing.decode_tokens > 0 ? timing.decode_ms / static_cast<double>(timing.decode_tokens) : 0.0;
  }
  const double tokens = static_cast<double>(workload.requests) * workload.new_tokens;
  return tokens > 0 ? timing.total_ms / tokens : 0.0;
}

Estimate paired_slowdown(const std::vector<GenerationTiming>& fixed, const std::vector<GenerationTiming>& buggy,
                         SlowdownMetric metric, const Workload& workload, double target_ci) {
  std::vector<double> fixed_ms, buggy_ms;
  for (const GenerationTiming& timing : fixed) fixed_ms.push_back(ms_per_token(timing, metric, workload));
  for (const GenerationTiming& timing : buggy) buggy_ms.push_back(ms_per_token(timing, metric, workload));
  return paired_ratio(buggy_ms, fixed_ms, target_ci);
}

namespace {

// One side's timed repeats, each traced and analysed; the trace of only the most typical is
// kept as the pairs run (keep_typical_trace).
struct Side {
  std::vector<GenerationResult> runs;
  std::vector<std::unique_ptr<Trace>> traces;  // null where dropped
  std::vector<RunAnalysis> analyses;
  size_t typical = 0;  // the repeat whose trace is kept
};

std::vector<double> per_token_times(const std::vector<GenerationResult>& runs, SlowdownMetric metric,
                                    const Workload& workload) {
  std::vector<double> times;
  for (const GenerationResult& run : runs) times.push_back(ms_per_token(run.timing, metric, workload));
  return times;
}

// Keeps the trace of the repeat whose time (one per repeat so far, as side.traces) is closest
// to their median — the one the report shows — and drops the others. Keeping every repeat's
// trace until the end made each new one record into fresh memory, a page fault every few
// ops: Trace::op_enqueued took some thirty times as long an op as into the memory a dropped
// trace leaves, which doubled the host's time per op on lab-tiny and slowed the very run it
// recorded.
void keep_typical_trace(Side& side, const std::vector<double>& times) {
  const double median = median_of(times);
  for (size_t i = 0; i < side.traces.size(); ++i) {
    if (side.traces[i] && std::abs(times[i] - median) < std::abs(times[side.typical] - median)) side.typical = i;
  }
  for (size_t i = 0; i < side.traces.size(); ++i)
    if (i != side.typical) side.traces[i].reset();
}

}  // namespace

Comparison compare_with_fixed_twin(const Scenario& buggy_scenario, const CompareOptions& options) {
  Comparison comparison;
  comparison.buggy.scenario = buggy_scenario;
  comparison.fixed.scenario = fixed_twin(buggy_scenario);

  RunOptions run_options;
  run_options.backend = options.backend;
  run_options.threads = options.threads;
  run_options.max_memory_bytes = options.max_memory_bytes;
  std::unique_ptr<Backend> backend = open_backend(buggy_scenario, run_options);
  // Both sides stay loaded together, the buggy one on the fixed one's weights (LoadedScenario's
  // sharing constructor): refuse their sum now, before the roofs are measured.
  const Scenario& fixed_scenario = comparison.fixed.scenario;
  const MemoryPlan both = combined(
      plan_memory(fixed_scenario.model_config, fixed_scenario.dtype, fixed_scenario.workload, fixed_scenario.bugs),
      without_weights(plan_memory(buggy_scenario.model_config, buggy_scenario.dtype, buggy_scenario.workload,
                                  buggy_scenario.bugs)));
  check_memory_fits(both, static_cast<int64_t>(backend->available_memory()), options.max_memory_bytes,
                    run_label(buggy_scenario) + " and its fixed twin",
                    "the " + backend->name() + " backend (" + backend->device_description() + ")",
                    backend->name() == "cpu");
  const Progress progress(options.progress);
  const int threads = kernel_threads(buggy_scenario, run_options);
  progress.status(progress_text(options, "loading"));
  LoadedScenario fixed(*backend, comparison.fixed.scenario, options.max_memory_bytes);
  LoadedScenario buggy(*backend, comparison.buggy.scenario, options.max_memory_bytes, fixed);
  // The machine, once both are loaded and before any timing; then the roofs (the calibration,
  // made first where this machine has none at these threads).
  if (options.machine) {
    comparison.machine = *options.machine;
  } else {
    progress.clear();  // a warning starts on its own line
    comparison.machine =
        check_machine_for_timing(*backend, threads, /*warn=*/true, /*notes=*/options.progress != ProgressMode::Off);
  }
  progress.status(progress_text(options, "roofs of " + backend->device_description()));
  // A calibration here (none of this machine at these threads) takes tens of seconds on a CPU:
  // a stop abandons it between two ops, and inside the lab's budget, so does half the time the
  // bug has left; nothing is written then.
  const int64_t roofs_deadline_ns = options.deadline_ns ? now_ns() + (*options.deadline_ns - now_ns()) / 2 : 0;
  RoofMeasureOptions roof_options;
  roof_options.checkpoint = [&] {
    if (stop_requested()) throw RepeatAbandoned(RepeatAbandoned::Why::StopRequested);
    if (roofs_deadline_ns && now_ns() > roofs_deadline_ns) throw RepeatAbandoned(RepeatAbandoned::Why::DeadlinePassed);
  };
  DeviceSpec spec;
  if (options.roofs) {
    spec = *options.roofs;
  } else {
    try {
      spec = default_device_spec(*backend, threads, nullptr, roof_options, &comparison.machine);
    } catch (const RepeatAbandoned& abandoned) {
      if (abandoned.why() == RepeatAbandoned::Why::StopRequested) throw;
      progress.clear();
      const std::string resolved = std::to_string(this_machine(threads).threads);
      throw BudgetSpent(run_label(buggy_scenario) + ": half its time budget (" + budget_text(options, buggy_scenario.repeats) +
                        ") ran out while calibrating this machine at " + resolved + " kernel threads, before any pair "
                        "(nothing written); calibrate it ahead with `decodelab calibrate --threads " + resolved + "`");
    }
  }

  const Workload& workload = buggy_scenario.workload;
  const SlowdownMetric metric =
      buggy_scenario.expected_slowdown ? buggy_scenario.expected_slowdown->of
                                       : workload.new_tokens > 1 ? SlowdownMetric::Decode : SlowdownMetric::EndToEnd;
  const AttributionScope scope = metric == SlowdownMetric::Decode ? AttributionScope::Decode : AttributionScope::EndToEnd;
  const RepeatPolicy& policy = buggy_scenario.repeats;
  const int warmup = std::max(buggy_scenario.warmup, 0);
  // The budget covers the warm-ups and the pairs: the lab's deadline, else run.max_seconds from here.
  const int64_t deadline_ns =
      options.deadline_ns ? *options.deadline_ns : now_ns() + static_cast<int64_t>(policy.max_seconds * 1e9);
  auto no_pair_within_budget = [&](const std::string& during) {
    return BudgetSpent(run_label(buggy_scenario) + ": the time budget (" + budget_text(options, policy) +
                         ") ran out " + during + ", before one pair of repeats finished; give it more time");
  };
  try {
    for (int i = 0; i < warmup; ++i) {
      const std::string warming = "warm-up " + std::to_string(i + 1) + "/" + std::to_string(warmup);
      progress.status(progress_text(options, warming));
      {  // traced as the pairs are, so the recording's memory is in use once before they start
        Trace fixed_warm_up, buggy_warm_up;
        AbandoningSink fixed_sink(&fixed_warm_up, deadline_ns), buggy_sink(&buggy_warm_up, deadline_ns);
        fixed.generate(&fixed_sink);
        buggy.generate(&buggy_sink);
      }
      progress.finished(progress_text(options, warming + " done"));
    }
  } catch (const RepeatAbandoned& abandoned) {
    progress.clear();
    if (abandoned.why() == RepeatAbandoned::Why::StopRequested) throw;
    throw no_pair_within_budget("during the warm-ups");
  }
  Side fixed_side, buggy_side;
  std::vector<Attribution> pair_attributions;
  std::vector<std::vector<double>> fixed_buckets, buggy_buckets;  // each pair's, for the table beside the attribution
  // Every repeat is a window of the machine watch: work that starts after the check still shows.
  MachineWatch watch = start_machine_watch(comparison.machine);
  auto run_side = [&](LoadedScenario& loaded, const Scenario& scenario, Side& side) {
    auto trace = std::make_unique<Trace>();
    AbandoningSink sink(trace.get(), deadline_ns);
    const CpuUsageSample window_begin = sample_cpu_usage();
    GenerationResult run = loaded.generate(&sink);  // throws RepeatAbandoned, leaving the side as it was
    add_window(watch, window_begin, sample_cpu_usage());
    side.traces.push_back(std::move(trace));
    side.runs.push_back(std::move(run));
    set_trace_metadata(*side.traces.back(), scenario, *backend, spec);
    side.analyses.push_back(analyze(*side.traces.back(), &spec));
  };
  const int64_t timed_begin = now_ns();
  RepeatStop stop = RepeatStop::MaxRepeats;
  Estimate slowdown;  // the headline's, so far
  Estimate judged;    // the slowdown the stopping rule watches (slowdown_to_watch)
  // The pairs' own limit is the deadline (checked below, pair by pair), not max_seconds.
  RepeatPolicy budget = policy;
  budget.max_seconds = std::max(0.0, (deadline_ns - timed_begin) / 1e9);
  // "pair 3/6" for a fixed count, "pair 7 (6-30)" when the slowdown's interval decides.
  auto pair_label = [&](int pair) {
    const std::string number = "pair " + std::to_string(pair + 1);
    if (policy.min_repeats == policy.max_repeats) return number + "/" + std::to_string(policy.max_repeats);
    return number + " (" + std::to_string(policy.min_repeats) + "-" + std::to_string(policy.max_repeats) + ")";
  };
  for (int pair = 0;; ++pair) {
    if (pair > 0) {
      // A pair that would end past the deadline is not started (the pairs so far say how long one takes).
      const double elapsed = (now_ns() - timed_begin) / 1e9;
      if (!want_another_repeat(budget, pair, elapsed, judged, stop)) break;
      if (elapsed + elapsed / pair > budget.max_seconds) {  // min_repeats too give way to the budget
        stop = RepeatStop::MaxSeconds;
        break;
      }
    }
    if (stop_requested()) {
      // Before any pair (a stop while loading or checking the machine) there is nothing to keep.
      if (pair == 0) throw RepeatAbandoned(RepeatAbandoned::Why::StopRequested);
      stop = RepeatStop::Interrupted;
      break;
    }
    progress.status(progress_text(options, pair_label(pair)));
    // Alternate which side goes first, so neither always follows the other. A repeat
    // abandoned part-way (a stop, the deadline) drops its whole pair: the finished pairs stay.
    try {
      if (pair % 2 == 0) {
        run_side(fixed, comparison.fixed.scenario, fixed_side);
        run_side(buggy, comparison.buggy.scenario, buggy_side);
      } else {
        run_side(buggy, comparison.buggy.scenario, buggy_side);
        run_side(fixed, comparison.fixed.scenario, fixed_side);
      }
    } catch (const RepeatAbandoned& abandoned) {
      for (Side* side : {&fixed_side, &buggy_side}) {
        if (side->runs.size() > static_cast<size_t>(pair)) {
          side->runs.pop_back();
          side->traces.pop_back();
          side->analyses.pop_back();
        }
      }
      progress.clear();
      if (pair == 0) {
        if (abandoned.why() == RepeatAbandoned::Why::StopRequested) throw;
        throw no_pair_within_budget("during the first pair");
      }
      stop = abandoned.why() == RepeatAbandoned::Why::StopRequested ? RepeatStop::Interrupted : RepeatStop::MaxSeconds;
      break;
    }
    for (Side* side : {&fixed_side, &buggy_side}) {
      if (side->runs.size() > 1) {  // only the last pair's outputs are compared (kept until a pair completes)
        side->runs[side->runs.size() - 2].tokens.clear();
        side->runs[side->runs.size() - 2].last_logits.clear();
      }
    }
    const GenerationTiming& fixed_timing = fixed_side.runs.back().timing;
    const GenerationTiming& buggy_timing = buggy_side.runs.back().timing;
    const double delta_ms = metric == SlowdownMetric::Decode ? buggy_timing.decode_ms - fixed_timing.decode_ms
                                                             : buggy_timing.total_ms - fixed_timing.total_ms;
    const int64_t tokens = metric == SlowdownMetric::Decode
                               ? buggy_timing.decode_tokens
                               : int64_t{workload.requests} * workload.new_tokens;
    pair_attributions.push_back(
        attribute_slowdown(fixed_side.analyses.back(), buggy_side.analyses.back(), delta_ms, tokens, scope));
    fixed_buckets.push_back(bucket_ms_per_token(fixed_side.analyses.back(), scope, tokens));
    buggy_buckets.push_back(bucket_ms_per_token(buggy_side.analyses.back(), scope, tokens));
    slowdown = paired_ratio(per_token_times(buggy_side.runs, metric, workload),
                            per_token_times(fixed_side.runs, metric, workload), policy.target_ci);
    const SlowdownMetric other = metric == SlowdownMetric::Decode ? SlowdownMetric::EndToEnd : SlowdownMetric::Decode;
    std::optional<Estimate> other_slowdown;
    if (other == SlowdownMetric::EndToEnd || workload.new_tokens > 1) {
      other_slowdown = paired_ratio(per_token_times(buggy_side.runs, other, workload),
                                    per_token_times(fixed_side.runs, other, workload), policy.target_ci);
    }
    judged = slowdown_to_watch(slowdown, other_slowdown ? &*other_slowdown : nullptr);
    keep_typical_trace(fixed_side, per_token_times(fixed_side.runs, metric, workload));
    keep_typical_trace(buggy_side, per_token_times(buggy_side.runs, metric, workload));
    progress.finished(progress_text(options, pair_label(pair) + " done: " + slowdown_words(metric) + " " +
                                                 format_slowdown(slowdown) + " so far"));
  }
  progress.clear();
  comparison.pairs = static_cast<int>(pair_attributions.size());
  comparison.stopped_because = describe(stop);
  comparison.interrupted = stop == RepeatStop::Interrupted;
  comparison.timed_seconds = (now_ns() - timed_begin) / 1e9;
  comparison.budget_seconds = budget.max_seconds;

  // A starved host, over all the traced repeats: the larger of the sides' median shares.
  auto median_stall_fraction = [](const Side& side) {
    std::vector<double> fractions;
    for (const RunAnalysis& analysis : side.analyses) fractions.push_back(analysis.host_stall_fraction());
    return fractions.empty() ? 0.0 : median_of(fractions);
  };
  const double host_stall_fraction = std::max(median_stall_fraction(fixed_side), median_stall_fraction(buggy_side));
  // Each side's report shows its most typical traced repeat, the one whose trace was kept.
  const std::vector<double> fixed_times = per_token_times(fixed_side.runs, metric, workload);
  const std::vector<double> buggy_times = per_token_times(buggy_side.runs, metric, workload);
  for (auto [side, run] : {std::pair{&fixed_side, &comparison.fixed}, std::pair{&buggy_side, &comparison.buggy}}) {
    run->trace = std::move(side->traces[side->typical]);
    run->analysis = std::move(side->analyses[side->typical]);
    side->traces.clear();
  }
  warn_if_roofs_suspect(comparison.fixed.analysis, buggy_scenario.name + " (fixed)");
  warn_if_roofs_suspect(comparison.buggy.analysis, buggy_scenario.name);
  comparison.fixed.result = summarize_run(comparison.fixed.scenario, *backend, fixed.memory(), std::move(fixed_side.runs));
  comparison.buggy.result = summarize_run(comparison.buggy.scenario, *backend, buggy.memory(), std::move(buggy_side.runs));
  for (ComparedRun* side : {&comparison.fixed, &comparison.buggy}) {
    side->result.stopped_because = comparison.stopped_because;
    side->result.machine = comparison.machine;
    side->result.during = watch;
    mark_if_contended(side->result, "", /*warn=*/false);
  }
  const bool contended = comparison.fixed.result.contended();
  if (contended && watch.contended) {
    progress.clear();
    std::fprintf(stderr,
                 "decodelab: warning: %s's figures were measured on a busy machine and are marked \"contended\": "
                 "they need not be this machine's figures:\n  - %s\n",
                 buggy_scenario.name.c_str(), watch.finding.c_str());
  }

  auto slowdown_of = [&](SlowdownMetric which) {
    return paired_slowdown(comparison.fixed.result.repeats, comparison.buggy.result.repeats, which, workload,
                           policy.target_ci);
  };
  if (workload.new_tokens > 1) comparison.decode_slowdown = slowdown_of(SlowdownMetric::Decode);
  comparison.end_to_end_slowdown = slowdown_of(SlowdownMetric::EndToEnd);
  comparison.decode_slowdown.contended = comparison.end_to_end_slowdown.contended = contended;
  comparison.headline = read_slowdown(buggy_scenario, comparison.decode_slowdown, comparison.end_to_end_slowdown);
  if (contended) comparison.headline.verdict.sentence += "; measured while other work took the cores (contended): the "
                                                         "slowdown need not be this machine's";
  comparison.categories = category_deltas(fixed_buckets, buggy_buckets);
  // The attribution explains the difference of the medians the rows show.
  comparison.attribution = median_attribution(pair_attributions, median_of(buggy_times) - median_of(fixed_times));
  // Exact on the CPU; elsewhere up to a near-tie of the fixed run (lab/run/token_agreement.h),
  // judged from the fixed run regenerated, untimed, up to the step where they part.
  const FixedStepSource regenerate_fixed = [&](int step) {
    Scenario upto = comparison.fixed.scenario;
    upto.workload.new_tokens = step + 1;
    LoadedScenario shorter(*backend, upto, options.max_memory_bytes, fixed);
    GenerationResult generated = shorter.generate(nullptr);
    return FixedStep{std::move(generated.tokens), std::move(generated.last_logits)};
  };
  comparison.tokens = compare_generated_tokens(comparison.fixed.result.tokens, comparison.buggy.result.tokens,
                                               fixed_scenario.model_config.vocab_size, fixed_scenario.dtype,
                                               backend->name() == "cpu" ? nullptr : &regenerate_fixed);
  comparison.same_tokens = comparison.tokens.agree;
  comparison.prediction =
      predict_row(buggy_scenario, spec, comparison.decode_slowdown, comparison.end_to_end_slowdown,
                  comparison.headline.metric, options.predict_on);
  comparison.prediction.noise = machine_noise(comparison.machine.contended, roofs_noisy(spec), host_stall_fraction);
  explain_range(comparison.headline, comparison.prediction);
  return comparison;
}

void explain_range(SlowdownReading& headline, const RowPrediction& prediction) {
  const VerdictKind kind = headline.verdict.kind;
  if ((kind != VerdictKind::Below && kind != VerdictKind::Above) || !headline.expected ||
      !prediction.unavailable.empty() || !(prediction.predicted() > 0))
    return;
  const ExpectedSlowdown& range = *headline.expected;
  std::string sentence = std::string(kind == VerdictKind::Below ? ". Below is a finding, not a failure"
                                                                 : ". Above is a finding, not a failure") +
                         ": the model prices this bug at " + ratio_text(prediction.predicted()) + " on " +
                         device_in_words(prediction.here.device);
  const DeviceSlowdown* gpu = prediction.elsewhere.empty() ? nullptr : &prediction.elsewhere.front();
  const double on_gpu = gpu ? predicted_slowdown(*gpu, prediction.of) : 0.0;
  if (gpu && on_gpu > 0) {
    sentence += " and at " + ratio_text(on_gpu) + " on " + gpu->device;
    if (on_gpu >= range.min && on_gpu <= range.max) {
      sentence += ", inside the course's " + format_range(range) + ": the range is the lesson's GPU's, where the same " +
                  "mechanism (" + gpu->mechanism + ") costs " + ratio_text(on_gpu) + " against that device's far " +
                  "shorter fixed step, and it does not apply to this device";
    } else {
      sentence += std::string(", ") + (on_gpu < range.min ? "below" : "above") + " the course's " + format_range(range) +
                  " too: the range was written for another stack than this workload on either device";
    }
  } else {
    sentence += "; the course's " + format_range(range) + " was written for a GPU (--predict-on h200 prices it there)";
  }
  headline.verdict.sentence += sentence;
}

std::vector<std::string> drift_notes(const Comparison& comparison) {
  const RunMetrics& fixed = comparison.fixed.result.metrics;
  const RunMetrics& buggy = comparison.buggy.result.metrics;
  std::vector<std::string> notes;
  for (const std::string& note :
       {drift_note(SlowdownMetric::Decode, comparison.decode_slowdown,
                   buggy.decode_tokens_per_s.median > 0 ? fixed.decode_tokens_per_s.median / buggy.decode_tokens_per_s.median : 0),
        drift_note(SlowdownMetric::EndToEnd, comparison.end_to_end_slowdown,
                   fixed.end_to_end_s.median > 0 ? buggy.end_to_end_s.median / fixed.end_to_end_s.median : 0)}) {
    if (!note.empty()) notes.push_back(note);
  }
  return notes;
}

std::string bucket_table(const Comparison& comparison) {
  const Attribution& attribution = comparison.attribution;
  std::ostringstream out;
  out << "| device time per token (" << (attribution.scope == AttributionScope::Decode ? "decode" : "end to end")
      << ", medians over " << comparison.pairs << " pairs, as the attribution below) | fixed | buggy | difference |\n"
      << "| --- | ---: | ---: | ---: |\n";
  auto time = [](double ms) { return ms == 0 ? std::string("0") : format_seconds(ms * 1e-3); };
  auto signed_time = [&](double ms) { return with_sign(ms, time(ms)); };
  for (const CategoryDelta& delta : comparison.categories) {
    out << "| " << delta.category << " | " << time(delta.fixed_ms_per_token) << " | " << time(delta.buggy_ms_per_token)
        << " | " << signed_time(delta.delta.median);
    if (delta.within_noise())
      out << " (within the noise: " << signed_time(delta.delta.low) << " to " << signed_time(delta.delta.high) << ")";
    out << " |\n";
  }
  return out.str();
}

std::string comparison_table(const Comparison& comparison) {
  std::ostringstream out;
  out << run_table_header() << run_table_row(comparison.fixed.scenario, comparison.fixed.result)
      << run_table_row(comparison.buggy.scenario, comparison.buggy.result) << "\n";
  const SlowdownReading& headline = comparison.headline;
  char line[256];
  out << "decode slowdown:     " << format_slowdown(comparison.decode_slowdown) << "  (median over the pairs of buggy / fixed decode time per token)\n";
  out << "end-to-end slowdown: " << format_slowdown(comparison.end_to_end_slowdown)
      << "  (median over the pairs of buggy / fixed end-to-end time)\n";
  for (const std::string& note : drift_notes(comparison)) out << "note: " << note << "\n";
  // Each side's points above their roof, with why (in cache, or the roofs suspect): reported,
  // never measured again.
  for (const auto& [label, side] : {std::pair{"fixed", &comparison.fixed}, std::pair{"buggy", &comparison.buggy}})
    for (const std::string& note : side->analysis.notes) out << "note (" << label << "): " << note << "\n";
  out << "the lesson is about: the " << slowdown_words(headline.metric);
  if (headline.expected) out << ", expected " << format_range(*headline.expected);
  out << "\nverdict: " << to_string(headline.verdict.kind) << ": " << headline.verdict.sentence << "\n";
  std::snprintf(line, sizeof line, " pairs of repeats in %.1f s of a %.0f s budget (", comparison.timed_seconds,
                comparison.budget_seconds);
  out << comparison.pairs << line << comparison.stopped_because << "); "
      << (comparison.tokens.identical ? "same tokens" : comparison.same_tokens ? comparison.tokens.detail
                                                                                : "TOKENS DIFFER: " + comparison.tokens.detail)
      << "\n";
  out << run_table_legend(comparison.buggy.scenario.repeats.target_ci) << "\n";
  out << prediction_summary(comparison.prediction, comparison.decode_slowdown, comparison.end_to_end_slowdown) << "\n";
  out << bucket_table(comparison);
  out << "\n" << format_attribution(comparison.attribution);
  return out.str();
}

nlohmann::json comparison_json(const Comparison& comparison) {
  nlohmann::json categories = nlohmann::json::array();
  for (const CategoryDelta& delta : comparison.categories)
    categories.push_back({{"category", delta.category},
                          {"fixed_ms_per_token", delta.fixed_ms_per_token},
                          {"buggy_ms_per_token", delta.buggy_ms_per_token},
                          {"delta_ms_per_token", to_json(delta.delta)},
                          {"within_noise", delta.within_noise()}});
  nlohmann::json json = {{"schema_version", kResultSchemaVersion},
                         {"fixed", run_result_json(comparison.fixed.scenario, comparison.fixed.result)},
                         {"buggy", run_result_json(comparison.buggy.scenario, comparison.buggy.result)},
                         {"end_to_end_slowdown", to_json(comparison.end_to_end_slowdown)},
                         {"headline", to_json(comparison.headline)},
                         {"pairs", comparison.pairs},
                         {"stopped_because", comparison.stopped_because},
                         {"timed_seconds", comparison.timed_seconds},
                         {"budget_seconds", comparison.budget_seconds},
                         {"machine", to_json(comparison.machine)},
                         {"contended", comparison.fixed.result.contended()},
                         {"same_tokens", comparison.same_tokens},
                         {"token_agreement",
                          {{"identical", comparison.tokens.identical},
                           {"rule", comparison.tokens.near_ties_allowed ? "up to a near-tie of the fixed run" : "exact"},
                           {"near_ties", comparison.tokens.near_ties},
                           {"detail", comparison.tokens.detail}}},
                         {"categories", categories},
                         {"attribution", to_json(comparison.attribution)}};
  json["decode_slowdown"] = comparison.decode_slowdown.samples > 0 ? to_json(comparison.decode_slowdown) : nlohmann::json();
  add_row_prediction_json(json, comparison.prediction);
  return json;
}

}  // namespace decodelab
