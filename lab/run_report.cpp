// Table row and result JSON for one run. The table shows medians with the spread over
// repeats next to the throughput, so a noisy number is visible where it is read.
#include "lab/run_report.h"

#include <algorithm>
#include <cstdio>

namespace decodelab {

namespace {

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

nlohmann::json repeat_json(const GenerationTiming& timing, const Scenario& scenario) {
  const RepeatMetrics metrics = repeat_metrics(timing, scenario.model_config, scenario.dtype, scenario.workload);
  return {{"decode_tokens_per_s", metrics.decode_tokens_per_s},
          {"prefill_tokens_per_s", metrics.prefill_tokens_per_s},
          {"decode_ms_per_step", metrics.decode_ms_per_step},
          {"ttft_ms", metrics.ttft_ms},
          {"total_s", metrics.total_s},
          {"achieved_bandwidth_gbps", metrics.achieved_bandwidth_gbps},
          {"prefill_ms", timing.prefill_ms},
          {"decode_ms", timing.decode_ms},
          {"decode_tokens", timing.decode_tokens},
          {"decode_steps", timing.step_ms.size()},
          {"groups", timing.groups}};
}

}  // namespace

std::string run_table_header() {
  return "| backend | model | dtype | batch | prompt | new | bugs | TTFT ms | prefill tok/s | decode tok/s | ms/step | "
         "GB/s |\n"
         "| --- | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n";
}

std::string run_table_row(const Scenario& scenario, const RunResult& result) {
  const Workload& workload = scenario.workload;
  const RunMetrics& metrics = result.metrics;
  const std::string throughput = fixed(metrics.decode_tokens_per_s.median, 1) + " ± " +
                                 fixed(100.0 * metrics.decode_tokens_per_s.spread(), 1) + "%";
  return "| " + result.backend + " | " + scenario.model_config.name + " | " + dtype_name(scenario.dtype) + " | " +
         std::to_string(std::min(workload.batch_size, workload.requests)) + " | " +
         std::to_string(workload.prompt_length()) + " | " + std::to_string(workload.new_tokens) + " | " +
         scenario.bugs.describe() + " | " + fixed(metrics.ttft_ms.median, 2) + " | " +
         fixed(metrics.prefill_tokens_per_s.median, 1) + " | " + throughput + " | " +
         fixed(metrics.decode_ms_per_step.median, 3) + " | " + fixed(metrics.achieved_bandwidth_gbps.median, 2) +
         " |\n";
}

nlohmann::json run_result_json(const Scenario& scenario, const RunResult& result) {
  const ModelConfig& config = scenario.model_config;
  const RunMetrics& metrics = result.metrics;
  nlohmann::json repeats = nlohmann::json::array();
  for (const GenerationTiming& timing : result.repeats) repeats.push_back(repeat_json(timing, scenario));
  return {
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
      {"run", {{"warmup", scenario.warmup}, {"repeats", scenario.repeats}}},
      {"bugs", bugs_to_json(scenario.bugs)},
      {"memory",
       {{"weight_bytes", result.memory.weight_bytes},
        {"extra_weight_bytes", result.memory.extra_weight_bytes},
        {"kv_cache_bytes", result.memory.kv_cache_bytes},
        {"workspace_bytes", result.memory.workspace_bytes},
        {"total_bytes", result.memory.total()}}},
      {"metrics",
       {{"decode_tokens_per_s", metrics.decode_tokens_per_s.median},
        {"prefill_tokens_per_s", metrics.prefill_tokens_per_s.median},
        {"decode_ms_per_step", metrics.decode_ms_per_step.median},
        {"ttft_ms", metrics.ttft_ms.median},
        {"total_s", metrics.total_s.median},
        {"achieved_bandwidth_gbps", metrics.achieved_bandwidth_gbps.median}}},
      {"metrics_spread",
       {{"decode_tokens_per_s", metrics.decode_tokens_per_s.spread()},
        {"prefill_tokens_per_s", metrics.prefill_tokens_per_s.spread()},
        {"decode_ms_per_step", metrics.decode_ms_per_step.spread()},
        {"ttft_ms", metrics.ttft_ms.spread()},
        {"total_s", metrics.total_s.spread()},
        {"achieved_bandwidth_gbps", metrics.achieved_bandwidth_gbps.spread()}}},
      {"repeats", repeats},
      {"outputs", result.tokens},
  };
}

RunResult run_summary_from_json(const nlohmann::json& result) {
  RunResult summary;
  summary.backend = result.value("backend", "");
  summary.device = result.value("device", "");
  const nlohmann::json none = nlohmann::json::object();
  const nlohmann::json& medians = result.contains("metrics") ? result["metrics"] : none;
  const nlohmann::json& spreads = result.contains("metrics_spread") ? result["metrics_spread"] : none;
  auto stats = [&](const char* name) {
    const double median = medians.value(name, 0.0);
    // min and max chosen so that spread() gives back the stored spread.
    return MetricStats{median, median, median * (1.0 + spreads.value(name, 0.0))};
  };
  RunMetrics& metrics = summary.metrics;
  metrics.decode_tokens_per_s = stats("decode_tokens_per_s");
  metrics.decode_ms_per_step = stats("decode_ms_per_step");
  metrics.ttft_ms = stats("ttft_ms");
  metrics.total_s = stats("total_s");
  metrics.achieved_bandwidth_gbps = stats("achieved_bandwidth_gbps");
  metrics.prefill_tokens_per_s = stats("prefill_tokens_per_s");
  return summary;
}

}  // namespace decodelab
