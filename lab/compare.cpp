// Fixed vs buggy runs, alternated on one backend (see compare.h).
#include "lab/compare.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "lab/run_report.h"
#include "profiling/roof_measure.h"

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

const std::vector<std::string>& bucket_order() {
  static const std::vector<std::string> order = {"matmul", "attention", "copy", "cast", "sync/idle", "other"};
  return order;
}

std::vector<double> bucket_ms(const RunAnalysis& analysis) {
  std::vector<double> ms(bucket_order().size(), 0.0);
  auto index_of = [](const std::string& bucket) {
    return static_cast<size_t>(std::find(bucket_order().begin(), bucket_order().end(), bucket) - bucket_order().begin());
  };
  for (const OpGroup& group : analysis.categories) ms[index_of(bucket_of(group.category))] += group.point.seconds * 1e3;
  ms[index_of("sync/idle")] += analysis.timeline.idle_seconds * 1e3;
  return ms;
}

void set_trace_metadata(Trace& trace, const Scenario& scenario, const Backend& backend, const DeviceSpec& spec) {
  TraceMetadata& metadata = trace.metadata();
  metadata.backend = backend.name();
  metadata.device = backend.device_description();
  metadata.dtype = dtype_name(scenario.dtype);
  metadata.model = ModelShape::of(scenario.model_config);
  metadata.device_spec = spec;
}

std::string progress_text(const CompareOptions& options, const std::string& what) {
  return options.progress_label + (options.progress_label.empty() ? "" : ": ") + what;
}

}  // namespace

std::vector<CategoryDelta> category_deltas(const RunAnalysis& fixed, const RunAnalysis& buggy) {
  const std::vector<double> fixed_ms = bucket_ms(fixed), buggy_ms = bucket_ms(buggy);
  std::vector<CategoryDelta> deltas;
  for (size_t i = 0; i < bucket_order().size(); ++i) deltas.push_back({bucket_order()[i], fixed_ms[i], buggy_ms[i]});
  return deltas;
}

Comparison compare_with_fixed_twin(const Scenario& buggy_scenario, const CompareOptions& options) {
  Comparison comparison;
  comparison.buggy.scenario = buggy_scenario;
  comparison.fixed.scenario = fixed_twin(buggy_scenario);

  RunOptions run_options;
  run_options.backend = options.backend;
  run_options.threads = options.threads;
  run_options.max_memory_bytes = options.max_memory_bytes;
  std::unique_ptr<Backend> backend = open_backend(buggy_scenario, run_options);
  // Both sides stay loaded together: refuse their sum now, before the roofs are measured.
  const Scenario& fixed_scenario = comparison.fixed.scenario;
  const MemoryPlan both = combined(
      plan_memory(fixed_scenario.model_config, fixed_scenario.dtype, fixed_scenario.workload, fixed_scenario.bugs),
      plan_memory(buggy_scenario.model_config, buggy_scenario.dtype, buggy_scenario.workload, buggy_scenario.bugs));
  check_memory_fits(both, static_cast<int64_t>(backend->available_memory()), options.max_memory_bytes,
                    run_label(buggy_scenario) + " and its fixed twin",
                    "the " + backend->name() + " backend (" + backend->device_description() + ")",
                    backend->name() == "cpu");
  const Progress progress(options.progress);
  progress.status(progress_text(options, "roofs of " + backend->device_description()));
  const DeviceSpec spec = default_device_spec(*backend, kernel_threads(buggy_scenario, run_options));

  progress.status(progress_text(options, "loading"));
  LoadedScenario fixed(*backend, comparison.fixed.scenario, options.max_memory_bytes);
  LoadedScenario buggy(*backend, comparison.buggy.scenario, options.max_memory_bytes);

  const int warmup = std::max(buggy_scenario.warmup, 0);
  const int repeats = std::max(buggy_scenario.repeats, 1);
  for (int i = 0; i < warmup; ++i) {
    const std::string warming = "warm-up " + std::to_string(i + 1) + "/" + std::to_string(warmup);
    progress.status(progress_text(options, warming));
    fixed.generate(nullptr);
    buggy.generate(nullptr);
    progress.finished(progress_text(options, warming + " done"));
  }
  std::vector<GenerationResult> fixed_runs, buggy_runs;
  for (int i = 0; i < repeats; ++i) {
    const std::string repeat = "repeat " + std::to_string(i + 1) + "/" + std::to_string(repeats);
    progress.status(progress_text(options, repeat));
    const bool traced = i == repeats - 1;
    if (traced) {
      comparison.fixed.trace = std::make_unique<Trace>();
      comparison.buggy.trace = std::make_unique<Trace>();
    }
    // Alternate which side goes first, so neither always follows the other.
    auto run_fixed = [&] { fixed_runs.push_back(fixed.generate(traced ? comparison.fixed.trace.get() : nullptr)); };
    auto run_buggy = [&] { buggy_runs.push_back(buggy.generate(traced ? comparison.buggy.trace.get() : nullptr)); };
    if (i % 2 == 0) {
      run_fixed();
      run_buggy();
    } else {
      run_buggy();
      run_fixed();
    }
    progress.finished(progress_text(options, repeat + " done (fixed and buggy)"));
  }
  progress.clear();

  comparison.fixed.result = summarize_run(comparison.fixed.scenario, *backend, fixed.memory(), std::move(fixed_runs));
  comparison.buggy.result = summarize_run(comparison.buggy.scenario, *backend, buggy.memory(), std::move(buggy_runs));
  for (ComparedRun* side : {&comparison.fixed, &comparison.buggy}) {
    set_trace_metadata(*side->trace, side->scenario, *backend, spec);
    side->analysis = analyze(*side->trace, &spec);
  }

  const RunMetrics& fixed_metrics = comparison.fixed.result.metrics;
  const RunMetrics& buggy_metrics = comparison.buggy.result.metrics;
  comparison.slowdown = fixed_metrics.total_s.median > 0 ? buggy_metrics.total_s.median / fixed_metrics.total_s.median : 0;
  comparison.decode_slowdown = buggy_metrics.decode_tokens_per_s.median > 0
                                   ? fixed_metrics.decode_tokens_per_s.median / buggy_metrics.decode_tokens_per_s.median
                                   : 0;
  comparison.categories = category_deltas(comparison.fixed.analysis, comparison.buggy.analysis);
  // Attribution explains the traced repeats (the last of each side): their measured
  // difference is what the parts must add up to.
  const double traced_delta_ms = comparison.buggy.result.repeats.back().total_ms -
                                 comparison.fixed.result.repeats.back().total_ms;
  const int64_t tokens = int64_t{buggy_scenario.workload.requests} * buggy_scenario.workload.new_tokens;
  comparison.attribution =
      attribute_slowdown(comparison.fixed.analysis, comparison.buggy.analysis, traced_delta_ms, tokens);
  comparison.same_tokens = comparison.fixed.result.tokens == comparison.buggy.result.tokens;
  return comparison;
}

std::string comparison_table(const Comparison& comparison) {
  std::ostringstream out;
  out << run_table_header() << run_table_row(comparison.fixed.scenario, comparison.fixed.result)
      << run_table_row(comparison.buggy.scenario, comparison.buggy.result) << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "slowdown: %.2fx total generation time, %.2fx decode tokens/s%s\n\n",
                comparison.slowdown, comparison.decode_slowdown,
                comparison.same_tokens ? " (same tokens)" : " (TOKENS DIFFER)");
  out << line;
  out << "| device time, last repeat | fixed ms | buggy ms | difference ms |\n| --- | ---: | ---: | ---: |\n";
  for (const CategoryDelta& delta : comparison.categories) {
    std::snprintf(line, sizeof line, "| %s | %.2f | %.2f | %+.2f |\n", delta.category.c_str(), delta.fixed_ms,
                  delta.buggy_ms, delta.delta_ms());
    out << line;
  }
  out << "\n" << format_attribution(comparison.attribution);
  return out.str();
}

nlohmann::json comparison_json(const Comparison& comparison) {
  nlohmann::json categories = nlohmann::json::array();
  for (const CategoryDelta& delta : comparison.categories)
    categories.push_back({{"category", delta.category}, {"fixed_ms", delta.fixed_ms}, {"buggy_ms", delta.buggy_ms},
                          {"delta_ms", delta.delta_ms()}});
  return {{"schema_version", 1},
          {"fixed", run_result_json(comparison.fixed.scenario, comparison.fixed.result)},
          {"buggy", run_result_json(comparison.buggy.scenario, comparison.buggy.result)},
          {"slowdown", comparison.slowdown},
          {"decode_slowdown", comparison.decode_slowdown},
          {"same_tokens", comparison.same_tokens},
          {"categories", categories},
          {"attribution", to_json(comparison.attribution)}};
}

}  // namespace decodelab
