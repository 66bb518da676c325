// A sweep point's run, row and table line (see sweep_row.h).
#include "lab/run/sweep_row.h"

#include <cstdio>

#include "lab/predict/row_prediction.h"
#include "lab/report/run_report.h"
#include "profiling/model/analysis.h"
#include "profiling/model/cost_model.h"
#include "profiling/model/decode_reading.h"
#include "profiling/measure/default_roofs.h"
#include "profiling/trace.h"

namespace decodelab {

nlohmann::json swept_values_json(const SweepPoint& point) {
  nlohmann::json values = nlohmann::json::object();
  for (const auto& [key, value] : point.values) values[key] = value;
  return values;
}

nlohmann::json sweep_row_key(const SweepPoint& point, const Scenario& scenario, const std::string& backend_name) {
  return {{"scenario", scenario_to_json(scenario)}, {"swept", swept_values_json(point)}, {"backend", backend_name}};
}

SweepRow run_sweep_point(const SweepPoint& point, const Scenario& scenario, RunOptions options, Backend& backend,
                         SweepContext& context) {
  Trace trace;
  options.sink = &trace;
  options.check_machine = !context.machine;
  // Every point's repeats are watched, not only the first's: other work may start mid-sweep.
  if (context.machine) options.checked_machine = &*context.machine;
  SweepRow row{run_scenario(scenario, options, &backend), {}};
  if (!context.machine) context.machine = row.result.machine.value_or(MachineState{});
  row.result.machine = context.machine;
  mark_if_contended(row.result, "", /*warn=*/false);  // a contended check before the sweep marks every point
  const int threads = kernel_threads(scenario, options);  // a swept `threads:` is the scenario's
  if (!context.spec) context.spec = default_device_spec(backend, threads, nullptr, {}, &*context.machine);
  trace.metadata().backend = backend.name();
  trace.metadata().device = backend.device_description();
  trace.metadata().dtype = dtype_name(scenario.dtype);
  trace.metadata().model = ModelShape::of(scenario.model_config);
  trace.metadata().device_spec = *context.spec;
  const RunAnalysis analysis = analyze(trace, &*context.spec);  // a point above its roof: "above_roof" below
  row.json = run_result_json(scenario, row.result);
  row.json["swept"] = swept_values_json(point);
  if (nlohmann::json decode = decode_roofline_json(analysis, row.result.metrics, scenario.dtype); !decode.is_null())
    row.json["decode_roofline"] = decode;
  // The prediction prices the point with the roofs its analysis read it against.
  add_sweep_prediction_json(row.json, scenario, analysis.device_spec, row.result.metrics.decode_tokens_per_s.median);
  return row;
}

nlohmann::json decode_roofline_json(const RunAnalysis& analysis, const RunMetrics& metrics, DType dtype) {
  const PhaseStats* decode = analysis.phase(Phase::Decode);
  if (!decode || metrics.decode_steps == 0) return nullptr;
  // The limiter and % of roof from the medians the row prints (profiling/model/decode_reading.h),
  // so that "3.44 GB/s" and its "% of roof" tell one story; the intensity from the trace.
  const DecodeReading medians =
      read_decode(metrics.decode_bandwidth_gbps.median * 1e9, metrics.decode_wall_ms_per_step.median,
                  metrics.decode_busy_ms_per_step.median, metrics.decode_tokens_per_step, dtype_precision(dtype),
                  analysis.device_spec, analysis.thresholds);
  nlohmann::json reading = {
      {"intensity_flop_per_byte", decode->point.intensity()},
      {"limiter", limiter_name(medians.limiter)},
      {"near_limiter", nlohmann::json()},
      {"roof_fraction", medians.roof_fraction()},
      {"roof", medians.matvec_roof ? "decode matvec" : "bandwidth"},
      {"roof_bytes_per_s", medians.reachable_roof},
      {"copy_roof_bytes_per_s", medians.copy_roof},
      {"busy_fraction", medians.busy_fraction},
      {"ridge_point", analysis.roofs.ridge_point(Precision::Fp16)}};
  if (medians.roof_fraction() > analysis.thresholds.above_roof_fraction) {
    // Above the roof: say why (analysis.h, AboveRoof), never a bare "132%".
    const double cache = analysis.device_spec.cache_bytes;
    const double per_step = metrics.decode_bytes_per_step;
    reading["above_roof"] = cache > 0 && per_step <= cache ? "in cache" : "roof suspect";
  }
  return reading;
}

std::string decode_limiter_cell(const nlohmann::json& decode_roofline) {
  std::string cell = decode_roofline.value("limiter", std::string("-"));
  const nlohmann::json near = decode_roofline.value("near_limiter", nlohmann::json());
  if (near.is_string()) cell += ", near " + near.get<std::string>();
  return cell;
}

std::string decode_roof_fraction_cell(const nlohmann::json& decode_roofline) {
  char percent[32];
  std::snprintf(percent, sizeof percent, "%.0f%%", 100 * decode_roofline.value("roof_fraction", 0.0));
  const std::string above = decode_roofline.value("above_roof", std::string());
  return percent + (above.empty() ? "" : " (" + above + ")");
}

std::string sweep_table_header(const SweepPoint& point) {
  const std::string header = run_table_header();
  std::string prefix, rule;
  for (const auto& [key, value] : point.values) {
    prefix += "| " + key + " ";
    rule += "| ---: ";
  }
  const size_t first_line_end = header.find('\n');
  std::string first = header.substr(0, first_line_end);
  std::string second = header.substr(first_line_end + 1);
  second = second.substr(0, second.find('\n'));
  return prefix + first + " decode FLOP/B | limiter | % of roof | predicted tok/s | error |\n" + rule + second +
         " ---: | --- | ---: | ---: | ---: |\n";
}

std::string sweep_table_row(const SweepPoint& point, const Scenario& scenario, const RunResult& result,
                            const nlohmann::json& row) {
  const nlohmann::json decode_roofline = row.value("decode_roofline", nlohmann::json());
  std::string swept;
  for (const auto& [key, value] : point.values) swept += "| " + value + " ";
  std::string reading = "| - | - | - |";
  if (decode_roofline.is_object()) {
    char intensity[32];
    std::snprintf(intensity, sizeof intensity, "%.2f", decode_roofline.value("intensity_flop_per_byte", 0.0));
    reading = "| " + std::string(intensity) + " | " + decode_limiter_cell(decode_roofline) + " | " +
              decode_roof_fraction_cell(decode_roofline) + " |";
  }
  std::string row_text = run_table_row(scenario, result);
  while (!row_text.empty() && row_text.back() == '\n') row_text.pop_back();
  if (!row_text.empty() && row_text.back() == '|') row_text.pop_back();
  return swept + row_text + reading + sweep_prediction_cells(row) + "\n";
}

std::string sweep_table_row(const SweepPoint& point, const Scenario& scenario, const nlohmann::json& row) {
  return sweep_table_row(point, scenario, run_summary_from_json(row), row);
}

}  // namespace decodelab
