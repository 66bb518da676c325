// Table row, result JSON and headline figures for one run. Every figure comes from
// run_figures(): its median with the interval beside it ("27.3 ±1.8%"), and "noisy" where
// the interval missed the target, so a noisy number is visible where it is read.
#include "lab/report/run_report.h"

#include <algorithm>
#include <cstdio>

namespace decodelab {

namespace {

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

bool present(const RunFigure& figure, const RunMetrics& metrics) { return !figure.decode || metrics.decode_steps > 0; }

nlohmann::json repeat_json(const GenerationTiming& timing, const Scenario& scenario) {
  const RepeatMetrics metrics = repeat_metrics(timing, scenario.model_config, scenario.dtype, scenario.workload);
  return {{"ttft_ms", metrics.ttft_ms},
          {"prefill_tokens_per_s", metrics.prefill_tokens_per_s},
          {"decode_tokens_per_s", metrics.decode_tokens_per_s},
          {"decode_wall_ms_per_step", metrics.decode_wall_ms_per_step},
          {"decode_busy_ms_per_step", metrics.decode_busy_ms_per_step},
          {"decode_bandwidth_gbps", metrics.decode_bandwidth_gbps},
          {"end_to_end_s", metrics.end_to_end_s},
          {"prefill_ms", timing.prefill_ms},
          {"decode_ms", timing.decode_ms},
          {"decode_busy_ms", timing.decode_busy_ms},
          {"decode_tokens", timing.decode_tokens},
          {"decode_steps", timing.step_ms.size()},
          {"groups", timing.groups}};
}

}  // namespace

std::string run_table_header() {
  std::string names = "| backend | model | dtype | batch | prompt | new | bugs |";
  std::string rule = "| --- | --- | --- | ---: | ---: | ---: | --- |";
  for (const RunFigure& figure : run_figures()) {
    names.append(" ").append(figure.label).append(" |");
    rule.append(" ---: |");
  }
  return names + " repeats |\n" + rule + " ---: |\n";
}

std::string run_table_row(const Scenario& scenario, const RunResult& result) {
  const Workload& workload = scenario.workload;
  const RunMetrics& metrics = result.metrics;
  std::string row = "| " + result.backend + " | " + scenario.model_config.name + " | " + dtype_name(scenario.dtype) +
                    " | " + std::to_string(std::min(workload.batch_size, workload.requests)) + " | " +
                    std::to_string(workload.prompt_length()) + " | " + std::to_string(workload.new_tokens) + " | " +
                    scenario.bugs.describe() + " |";
  for (const RunFigure& figure : run_figures()) {
    const Estimate& estimate = metrics.*figure.estimate;
    if (present(figure, metrics)) {
      row.append(" ").append(format_figure(estimate, figure.decimals)).append(" |");
    } else {
      row.append(" - |");
    }
  }
  return row + " " + std::to_string(metrics.repeats) + " |\n";
}

std::string format_figure(const Estimate& estimate, int decimals) {
  return fixed(estimate.median, decimals) + " " + format_interval(estimate);
}

std::string run_table_legend(double target_ci) {
  return "± is the 95% confidence interval of the median over the repeats; noisy: wider than ±" +
         fixed(100 * target_ci, target_ci * 100 < 10 ? 1 : 0) + "% (run.target_ci) or fewer than " +
         std::to_string(kSamplesFor95) + " repeats; contended: measured while other work took the cores (the machine "
         "check before, the watch during or the check after the repeats), whatever its ±. tok/s = batch / wall time per "
         "step (docs/metrics.md)\n";
}

nlohmann::json run_metrics_json(const RunResult& result) {
  const RunMetrics& metrics = result.metrics;
  nlohmann::json medians = {{"decode_steps", metrics.decode_steps},
                            {"decode_tokens_per_step", metrics.decode_tokens_per_step},
                            {"decode_bytes_per_step", metrics.decode_bytes_per_step}};
  nlohmann::json intervals = nlohmann::json::object();
  for (const RunFigure& figure : run_figures()) {
    if (!present(figure, metrics)) continue;
    const Estimate& estimate = metrics.*figure.estimate;
    medians[figure.key] = estimate.median;
    intervals[figure.key] = to_json(estimate);
  }
  return {{"metrics", medians}, {"intervals", intervals}};
}

nlohmann::json repeats_json(const Scenario& scenario, const RunResult& result) {
  nlohmann::json repeats = nlohmann::json::array();
  for (const GenerationTiming& timing : result.repeats) repeats.push_back(repeat_json(timing, scenario));
  return repeats;
}

nlohmann::json run_result_json(const Scenario& scenario, const RunResult& result) {
  const ModelConfig& config = scenario.model_config;
  const RunMetrics& metrics = result.metrics;
  const nlohmann::json repeats = repeats_json(scenario, result);
  const nlohmann::json figures = run_metrics_json(result);
  nlohmann::json run = run_policy_to_json(scenario);
  run["repeats_run"] = metrics.repeats;
  run["stopped_because"] = result.stopped_because;
  nlohmann::json json = {
      {"schema_version", kResultSchemaVersion},
#ifdef DECODELAB_VERSION
      {"decodelab_version", DECODELAB_VERSION},
#endif
#ifdef DECODELAB_BUILD_TYPE
      {"build_type", DECODELAB_BUILD_TYPE},
#endif
      {"scenario", scenario_to_json(scenario)},
      {"backend", result.backend},
      {"device", result.device},
      {"model",
       {{"name", config.name},
        {"source", {{"kind", to_string(scenario.model_source.kind)}, {"path", scenario.model_source.path.string()}}},
        {"params", config.parameter_count()},
        {"weight_bytes", config.weight_bytes(scenario.dtype)},
        {"dtype", dtype_name(scenario.dtype)},
        {"config", model_config_to_json(config)}}},
      {"workload", workload_to_json(scenario.workload)},
      {"run", run},
      {"bugs", bugs_to_json(scenario.bugs)},
      {"memory",
       {{"weight_bytes", result.memory.weight_bytes},
        {"extra_weight_bytes", result.memory.extra_weight_bytes},
        {"kv_cache_bytes", result.memory.kv_cache_bytes},
        {"workspace_bytes", result.memory.workspace_bytes},
        {"total_bytes", result.memory.total()}}},
      {"metrics", figures["metrics"]},
      {"intervals", figures["intervals"]},
      {"repeats", repeats},
      {"outputs", result.tokens},
  };
  if (result.machine) json["machine"] = to_json(*result.machine);
  if (result.during) json["machine_during"] = to_json(*result.during);
  if (result.after) json["machine_after"] = to_json(*result.after);
  json["contended"] = result.contended();
  return json;
}

RunResult run_summary_from_json(const nlohmann::json& result) {
  RunResult summary;
  summary.backend = result.value("backend", "");
  summary.device = result.value("device", "");
  const nlohmann::json none = nlohmann::json::object();
  const nlohmann::json& medians = result.contains("metrics") ? result["metrics"] : none;
  const nlohmann::json& intervals = result.contains("intervals") ? result["intervals"] : none;
  RunMetrics& metrics = summary.metrics;
  metrics.decode_steps = medians.value("decode_steps", int64_t{0});
  metrics.decode_tokens_per_step = medians.value("decode_tokens_per_step", 0.0);
  metrics.decode_bytes_per_step = medians.value("decode_bytes_per_step", 0.0);
  if (result.contains("run") && result["run"].is_object()) metrics.repeats = result["run"].value("repeats_run", 0);
  for (const RunFigure& figure : run_figures()) {
    metrics.*figure.estimate = estimate_from_json(intervals.value(figure.key, none));
  }
  return summary;
}

std::vector<HeadlineFigure> headline_figures(const RunResult& result) {
  std::vector<HeadlineFigure> figures;
  for (const RunFigure& figure : run_figures()) {
    if (!present(figure, result.metrics)) continue;
    const Estimate& estimate = result.metrics.*figure.estimate;
    figures.push_back({figure.key, figure.label, fixed(estimate.median, figure.decimals), estimate});
  }
  return figures;
}

}  // namespace decodelab
