// A sweep point's run, row and table line (see sweep_row.h).
#include "lab/sweep_row.h"

#include <cstdio>

#include "lab/row_prediction.h"
#include "lab/run_report.h"
#include "profiling/analysis.h"
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
                         const DeviceSpec& spec) {
  Trace trace;
  trace.metadata().backend = backend.name();
  trace.metadata().device = backend.device_description();
  trace.metadata().dtype = dtype_name(scenario.dtype);
  trace.metadata().model = ModelShape::of(scenario.model_config);
  trace.metadata().device_spec = spec;
  options.sink = &trace;
  SweepRow row{run_scenario(scenario, options, &backend), {}};
  const RunAnalysis analysis = analyze(trace, &spec);
  row.json = run_result_json(scenario, row.result);
  row.json["swept"] = swept_values_json(point);
  if (const PhaseStats* decode = analysis.phase(Phase::Decode)) {
    row.json["decode_roofline"] = {{"intensity_flop_per_byte", decode->point.intensity()},
                                   {"limiter", limiter_name(decode->limiter)},
                                   {"roof_fraction", decode->point.roof_fraction()},
                                   {"ridge_point", analysis.roofs.ridge_point(Precision::Fp16)}};
  }
  add_sweep_prediction_json(row.json, scenario, spec, row.result.metrics.decode_tokens_per_s.median);
  return row;
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
  char reading[160] = "| - | - | - |";
  if (decode_roofline.is_object()) {
    std::snprintf(
        reading, sizeof reading, "| %.2f | %s | %.0f%% |", decode_roofline.value("intensity_flop_per_byte", 0.0),
        decode_roofline.value("limiter", std::string("-")).c_str(), 100 * decode_roofline.value("roof_fraction", 0.0));
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
