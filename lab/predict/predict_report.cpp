// Printing predictions: the inputs they rest on (roofs, fixed costs, cache, each with its
// origin), the figures a run reports under the same names, what bounds each phase, and
// the decode step per op category. JSON carries the same figures plus every input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "lab/predict/predict.h"
#include "profiling/measure/core_round_trip.h"
#include "profiling/report/printers.h"
#include "profiling/report/text_table.h"
#include "profiling/units.h"

namespace decodelab {

std::string ratio_text(double value) {
  if (!(value > 0)) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, value < 10 ? "%.2fx" : "%.1fx", value);
  return buffer;
}

std::string signed_percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.0f%%", fraction * 100.0);
  return buffer;
}

std::string count_text(double count) {
  if (std::fabs(count - std::round(count)) < 1e-9) return std::to_string(static_cast<int64_t>(std::round(count)));
  return format_number(count);
}

namespace {

std::string rate(double tokens_per_s) { return tokens_per_s > 0 ? format_number(tokens_per_s, 4) : "-"; }

std::string milliseconds(double ms) { return ms > 0 ? format_seconds(ms * 1e-3) : "-"; }

// "host dispatch 71%, device-to-host reads 24%": the parts of a phase above 10%, largest first.
std::string bound_text(const PhasePrediction* phase) {
  if (!phase || phase->wall_seconds() <= 0) return "-";
  std::vector<std::pair<double, PredictedBound>> parts;
  for (PredictedBound bound : {PredictedBound::Compute, PredictedBound::Memory, PredictedBound::Cache,
                               PredictedBound::OpOverhead, PredictedBound::HostDispatch, PredictedBound::HostReads}) {
    parts.emplace_back(phase->split.part(bound) / phase->wall_seconds(), bound);
  }
  std::sort(parts.rbegin(), parts.rend());
  std::string text;
  for (const auto& [share, bound] : parts) {
    if (share < 0.10 && !text.empty()) break;
    text += (text.empty() ? "" : ", ") + std::string(predicted_bound_name(bound)) + " " + format_percent(share);
  }
  return text;
}

double per_step(double total, const PhasePrediction* decode) {
  return decode && decode->passes > 0 ? total / static_cast<double>(decode->passes) : 0.0;
}


}  // namespace

std::string prediction_header(const DeviceSpec& device, const PredictionInputs& inputs) {
  std::ostringstream out;
  out << "predicted on " << device.name << (device.description.empty() ? "" : " (" + device.description + ")") << "\n";
  out << "  roofs (" << device.roofs_origin() << "): " << format_bandwidth(inputs.roofs.bandwidth) << ", fp32 "
      << format_flop_rate(inputs.roofs.flops(Precision::Fp32)) << ", fp16/bf16 "
      << format_flop_rate(inputs.roofs.flops(Precision::Bf16)) << "\n";
  if (!inputs.roofs.efficiency.empty()) {
    out << "  efficiency: a table of " << inputs.roofs.efficiency.size()
        << " timed buckets (op category, precision, rows, size); an op of a bucket it lacks takes the nearest one's, a "
           "category it lacks "
        << (inputs.roofs.efficiency_source.empty() ? "the roofs" : "the stated default") << "\n";
  } else if (!inputs.roofs.efficiency_source.empty()) {
    out << "  efficiency: flops " << format_number(inputs.roofs.default_flops_efficiency) << ", bytes "
        << format_number(inputs.roofs.default_bytes_efficiency) << " of the peaks (" << inputs.roofs.efficiency_source
        << ")\n";
  } else {
    out << "  efficiency: none given (every op at its roofs)\n";
  }
  out << "  fixed costs (" << (device.measured_fixed_costs ? "measured" : "published")
      << "): " << format_fixed_costs(inputs.costs) << "\n";
  if (inputs.cache) {
    out << "  cache (" << (device.measured_cache ? "measured" : "published") << "): " << format_cache(*inputs.cache) << "\n";
  } else {
    out << "  cache: none given (every byte priced at the bandwidth roof)\n";
  }
  if (device.measured && device.measured->core_round_trip_ns > 0) {
    const double round_trip = device.measured->core_round_trip_ns;
    out << "  cores when measured: " << core_distance(round_trip) << ", "
        << format_round_trip(round_trip) << " round trip\n";
  }
  return out.str();
}

namespace {

// Which op kinds were priced from a neighbouring bucket of the efficiency table, or from no
// bucket at all (a category the table lacks): the prediction says so under its header.
std::string efficiency_fallbacks(std::initializer_list<const Prediction*> predictions) {
  std::vector<std::string> notes;
  for (const Prediction* prediction : predictions) {
    if (prediction->inputs.roofs.efficiency.empty()) continue;
    for (const std::string& note : prediction->efficiency_notes)
      if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
  }
  std::string text;
  for (const std::string& note : notes) text += "    " + note + "\n";
  return text;
}

std::string workload_line(const Scenario& scenario) {
  const Workload& w = scenario.workload;
  std::ostringstream out;
  out << "  " << scenario.name << ": " << scenario.model_config.name << " " << dtype_name(scenario.dtype) << ", "
      << w.requests << " request" << (w.requests == 1 ? "" : "s") << " in batches of " << w.batch_size << ", prompt "
      << w.prompt_length() << ", " << w.new_tokens << " new tokens";
  if (w.host_overhead_us > 0) out << ", host overhead " << format_number(w.host_overhead_us) << " µs per op";
  out << "; bugs: " << scenario.bugs.describe() << "\n";
  return out.str();
}

// The decode step per op category: ops, busy time, work, what bounds it.
std::string category_table(const ScenarioPrediction& scenario, const std::string& title) {
  const PhasePrediction* decode = scenario.prediction.phase(Phase::Decode);
  if (!decode) return "";
  TextTable table({title, "ops/step", "busy/step", "FLOP/step", "bytes/step", "from cache", "bound"});
  for (const CategoryPrediction& row : scenario.prediction.categories) {
    if (row.phase != Phase::Decode) continue;
    table.add({op_category_name(row.category), count_text(per_step(static_cast<double>(row.ops), decode)),
               format_seconds(per_step(row.busy.busy(), decode)), format_flops(per_step(row.flops, decode)),
               format_bytes(per_step(row.bytes, decode)), row.bytes > 0 ? format_percent(row.cache_bytes / row.bytes) : "-",
               predicted_bound_name(row.busy.largest())});
  }
  return table.str();
}

nlohmann::json metrics_json(const ScenarioPrediction& scenario) {
  const Prediction& p = scenario.prediction;
  nlohmann::json json = to_json(p);
  json["decode_tokens_per_s"] = scenario.metrics.decode_tokens_per_s;
  json["decode_bandwidth_gbps"] = scenario.metrics.decode_bandwidth_gbps;
  json["end_to_end_s"] = scenario.metrics.end_to_end_s;
  json["scenario"] = scenario_to_json(scenario.scenario);
  return json;
}

}  // namespace

std::string prediction_table(const ScenarioPrediction& prediction, const DeviceSpec& device) {
  const Prediction& p = prediction.prediction;
  std::ostringstream out;
  out << prediction_header(device, p.inputs) << efficiency_fallbacks({&p}) << workload_line(prediction.scenario) << "\n";
  const PhasePrediction* decode = p.phase(Phase::Decode);
  TextTable table({"figure", "predicted"});
  table.add({"TTFT", milliseconds(p.timing.ttft_ms)});
  table.add({"decode wall time per step", milliseconds(p.decode_step_wall_ms())});
  table.add({"decode busy time per step", milliseconds(p.decode_step_busy_ms())});
  table.add({"decode tok/s", rate(prediction.metrics.decode_tokens_per_s)});
  table.add({"total", milliseconds(p.timing.total_ms)});
  table.add({"ops per decode step", count_text(per_step(decode ? static_cast<double>(decode->ops) : 0, decode))});
  out << table.str() << "\n";
  out << "  prefill bound by: " << bound_text(p.phase(Phase::Prefill)) << "\n";
  out << "  decode bound by: " << bound_text(decode) << "\n\n" << category_table(prediction, "decode, per step");
  return out.str();
}

std::string prediction_table(const SlowdownPrediction& prediction, const DeviceSpec& device) {
  const Prediction& fixed = prediction.fixed.prediction;
  const Prediction& buggy = prediction.buggy.prediction;
  std::ostringstream out;
  out << prediction_header(device, buggy.inputs) << efficiency_fallbacks({&fixed, &buggy})
      << workload_line(prediction.buggy.scenario) << "\n";
  const PhasePrediction* fixed_decode = fixed.phase(Phase::Decode);
  const PhasePrediction* buggy_decode = buggy.phase(Phase::Decode);
  auto ops_per_step = [](const PhasePrediction* decode) {
    return count_text(per_step(decode ? static_cast<double>(decode->ops) : 0, decode));
  };
  auto reads_per_step = [](const PhasePrediction* decode) {
    return count_text(per_step(decode ? static_cast<double>(decode->device_to_host_reads) : 0, decode));
  };
  auto times = [](double buggy_value, double fixed_value) { return ratio_text(fixed_value > 0 ? buggy_value / fixed_value : 0); };
  TextTable table({"figure", "fixed", "buggy", "buggy/fixed"});
  table.add({"TTFT", milliseconds(fixed.timing.ttft_ms), milliseconds(buggy.timing.ttft_ms),
             times(buggy.timing.ttft_ms, fixed.timing.ttft_ms)});
  table.add({"decode wall time per step", milliseconds(fixed.decode_step_wall_ms()),
             milliseconds(buggy.decode_step_wall_ms()), times(buggy.decode_step_wall_ms(), fixed.decode_step_wall_ms())});
  table.add({"decode busy time per step", milliseconds(fixed.decode_step_busy_ms()),
             milliseconds(buggy.decode_step_busy_ms()), times(buggy.decode_step_busy_ms(), fixed.decode_step_busy_ms())});
  table.add({"decode tok/s", rate(prediction.fixed.metrics.decode_tokens_per_s),
             rate(prediction.buggy.metrics.decode_tokens_per_s), ""});
  table.add({"total", milliseconds(fixed.timing.total_ms), milliseconds(buggy.timing.total_ms),
             times(buggy.timing.total_ms, fixed.timing.total_ms)});
  table.add({"ops per decode step", ops_per_step(fixed_decode), ops_per_step(buggy_decode), ""});
  table.add({"device-to-host reads per step", reads_per_step(fixed_decode), reads_per_step(buggy_decode), ""});
  out << table.str() << "\n";
  out << "  fixed decode bound by: " << bound_text(fixed_decode) << "\n";
  out << "  buggy decode bound by: " << bound_text(buggy_decode) << "\n\n";
  out << "  predicted slowdown: decode " << ratio_text(prediction.decode_slowdown)
      << " (fixed tok/s / buggy tok/s), end to end " << ratio_text(prediction.end_to_end_slowdown)
      << " (buggy total / fixed total)\n\n";
  out << category_table(prediction.fixed, "fixed decode, per step") << "\n"
      << category_table(prediction.buggy, "buggy decode, per step");
  return out.str();
}

std::string prediction_row_header() {
  return "| scenario | variant | device | decode slowdown | end-to-end slowdown | fixed decode bound | buggy decode bound |\n"
         "| --- | --- | --- | ---: | ---: | --- | --- |\n";
}

std::string prediction_row(const SlowdownPrediction& prediction, const DeviceSpec& device, const std::string& variant) {
  auto bound = [](const ScenarioPrediction& scenario) {
    const PhasePrediction* decode = scenario.prediction.phase(Phase::Decode);
    return decode ? std::string(predicted_bound_name(decode->bound)) : std::string("-");
  };
  return "| " + prediction.buggy.scenario.name + " | " + (variant.empty() ? "as shipped" : variant) + " | " + device.name +
         " | " + ratio_text(prediction.decode_slowdown) + " | " + ratio_text(prediction.end_to_end_slowdown) + " | " +
         bound(prediction.fixed) + " | " + bound(prediction.buggy) + " |\n";
}

nlohmann::json prediction_json(const ScenarioPrediction& prediction) { return metrics_json(prediction); }

nlohmann::json prediction_json(const ScenarioPrediction& prediction, const DeviceSpec& device) {
  return {{"device", to_json(device)}, {"prediction", metrics_json(prediction)}};
}

nlohmann::json prediction_json(const SlowdownPrediction& prediction, const DeviceSpec& device) {
  return {{"device", to_json(device)},
          {"fixed", metrics_json(prediction.fixed)},
          {"buggy", metrics_json(prediction.buggy)},
          {"decode_slowdown", prediction.decode_slowdown},
          {"end_to_end_slowdown", prediction.end_to_end_slowdown}};
}

}  // namespace decodelab
