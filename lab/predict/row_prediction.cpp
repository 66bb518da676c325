// Predictions beside measured rows (see row_prediction.h).
#include "lab/predict/row_prediction.h"
#include "lab/scenario/yaml_fields.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/base/errors.h"
#include "lab/predict/predict.h"
#include "lab/run/slowdown.h"
#include "profiling/report/report.h"
#include "profiling/model/roofline.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

std::string signed_time(double ms) { return (ms < 0 ? "-" : "+") + format_seconds(std::fabs(ms) * 1e-3); }

// A prediction's decode phase, summed: what the sentence's differences are taken from.
struct DecodeTotals {
  int64_t passes = 0;
  int64_t tokens = 0;
  double decode_ms = 0;
  double ops = 0, reads = 0, bytes = 0, flops = 0;
  TimeSplit split;
};

DecodeTotals decode_totals(const ScenarioPrediction& scenario) {
  DecodeTotals totals;
  const Prediction& prediction = scenario.prediction;
  totals.decode_ms = prediction.timing.decode_ms;
  totals.tokens = prediction.timing.decode_tokens;
  if (const PhasePrediction* decode = prediction.phase(Phase::Decode)) {
    totals.passes = decode->passes;
    totals.ops = static_cast<double>(decode->ops);
    totals.reads = static_cast<double>(decode->device_to_host_reads);
    totals.split = decode->split;
  }
  for (const CategoryPrediction& category : prediction.categories) {
    if (category.phase != Phase::Decode) continue;
    totals.bytes += category.bytes;
    totals.flops += category.flops;
  }
  return totals;
}

// One mechanism of the added time: its text and the time it accounts for (s per unit).
struct Clause {
  double seconds = 0;
  std::string text;
};

// The added decode time per unit, split by what it went to, as clauses largest first; a
// clause below a tenth of the positive total is left out.
std::string mechanism_text(const DecodeTotals& fixed, const DecodeTotals& buggy, const PredictionInputs& inputs,
                           double units, const std::string& unit) {
  const double per = 1.0 / units;
  const std::string per_unit = " per " + unit;
  std::vector<Clause> clauses;
  const double reads = (buggy.reads - fixed.reads) * per;
  const double read_seconds = (buggy.split.host_reads - fixed.split.host_reads) * per;
  clauses.push_back({read_seconds, reads > 0 ? count_text(reads) + " device-to-host read" + (reads == 1 ? "" : "s") +
                                                   per_unit + " × " + format_seconds(inputs.costs.sync_round_trip) +
                                                   " round trip + the wait for the work queued before it"
                                             : format_seconds(read_seconds) + per_unit + " blocked in reads"});
  const double ops = (buggy.ops - fixed.ops) * per;
  const double dispatch_seconds =
      (buggy.split.host_dispatch + buggy.split.overhead - fixed.split.host_dispatch - fixed.split.overhead) * per;
  const double issue = inputs.host_overhead + inputs.costs.host_launch;
  clauses.push_back({dispatch_seconds, ops > 0 ? count_text(ops) + " more ops" + per_unit + " × " +
                                                     format_seconds(issue) + " to dispatch (+" +
                                                     format_seconds(inputs.costs.op_overhead) + " each on the device)"
                                               : format_seconds(dispatch_seconds) + per_unit + " of dispatch"});
  const double bytes = (buggy.bytes - fixed.bytes) * per;
  const double byte_seconds = (buggy.split.memory + buggy.split.cache - fixed.split.memory - fixed.split.cache) * per;
  clauses.push_back({byte_seconds, (bytes >= 0 ? "+" : "-") + format_bytes(std::fabs(bytes)) + per_unit + " at " +
                                       format_bandwidth(inputs.roofs.bandwidth) +
                                       (inputs.cache ? " (or " + format_bandwidth(inputs.cache->bandwidth) +
                                                           " from cache)"
                                                     : "")});
  const double flops = (buggy.flops - fixed.flops) * per;
  const double flop_seconds = (buggy.split.compute - fixed.split.compute) * per;
  clauses.push_back({flop_seconds, "+" + format_flops(std::max(flops, 0.0)) + per_unit + " at " +
                                       (flop_seconds > 0 && flops > 0 ? format_flop_rate(flops / flop_seconds)
                                                                      : std::string("the compute roof"))});
  double positive = 0;
  for (const Clause& clause : clauses) positive += std::max(clause.seconds, 0.0);
  std::stable_sort(clauses.begin(), clauses.end(), [](const Clause& a, const Clause& b) { return a.seconds > b.seconds; });
  std::string text;
  if (buggy.passes > fixed.passes && fixed.passes > 0) {
    const double buggy_per_step = static_cast<double>(buggy.tokens) / static_cast<double>(buggy.passes);
    text = ratio_text(static_cast<double>(buggy.passes) / static_cast<double>(fixed.passes)) + " the decode steps (" +
           count_text(buggy_per_step) + (buggy_per_step == 1 ? " token" : " tokens") + " per step instead of " +
           count_text(static_cast<double>(fixed.tokens) / static_cast<double>(fixed.passes)) + ")";
  }
  for (const Clause& clause : clauses) {
    if (!(clause.seconds > 0) || clause.seconds < 0.1 * positive) continue;
    text += (text.empty() ? "" : ", ") + clause.text;
  }
  return text;
}

std::string elsewhere_clause(const DeviceSlowdown& device) {
  return "on " + device.device + " the same costs " + signed_time(device.added_ms_per_unit) + " against a " +
         format_seconds(device.fixed_ms_per_unit * 1e-3) + " " + device.unit + " (" + ratio_text(device.decode_slowdown) +
         ")";
}

const char* verdict_of(double error) {
  if (error > kPredictionTolerance) return "above prediction";
  if (error < -kPredictionTolerance) return "below prediction";
  return "as predicted";
}

nlohmann::json device_slowdown_json(const DeviceSlowdown& device) {
  return {{"device", device.device},
          {"predicted_decode_slowdown", device.decode_slowdown},
          {"predicted_end_to_end_slowdown", device.end_to_end_slowdown},
          {"bound", device.bound},
          {"unit", device.unit},
          {"fixed_ms_per_unit", device.fixed_ms_per_unit},
          {"added_ms_per_unit", device.added_ms_per_unit},
          {"mechanism", device.mechanism}};
}

DeviceSlowdown device_slowdown_from_json(const nlohmann::json& json, const std::string& file) {
  auto number = [&](const char* key) {
    if (!json.contains(key) || !json[key].is_number())
      throw InputError(file, 0, std::string("prediction.") + key, "missing or not a number in a row's prediction");
    return json[key].get<double>();
  };
  DeviceSlowdown device;
  device.device = json.value("device", std::string("?"));
  device.decode_slowdown = number("predicted_decode_slowdown");
  device.end_to_end_slowdown = number("predicted_end_to_end_slowdown");
  device.bound = json.value("bound", std::string("-"));
  device.unit = json.value("unit", std::string("step"));
  device.fixed_ms_per_unit = json.value("fixed_ms_per_unit", 0.0);
  device.added_ms_per_unit = json.value("added_ms_per_unit", 0.0);
  device.mechanism = json.value("mechanism", std::string());
  return device;
}

}  // namespace

DeviceSpec named_device(const std::string& name, const std::string& option) {
  try {
    return find_device_spec(name);
  } catch (const InputError&) {
    if (name.find('/') != std::string::npos || name.ends_with(".yaml")) throw;  // a file's own error
    const std::vector<std::string> names = list_device_specs();
    std::string known;
    for (const std::string& device : names) known += (known.empty() ? "" : ", ") + device;
    throw InputError(option, 0, name, "unknown device" + did_you_mean(name, names) + "; known: " + known);
  }
}

std::vector<DeviceSpec> reference_devices(const std::vector<std::string>& names, const std::string& option) {
  std::vector<DeviceSpec> devices;
  for (const std::string& name : names) devices.push_back(named_device(name, option));
  return devices;
}

DeviceSlowdown predict_device_slowdown(const Scenario& buggy, const DeviceSpec& device) {
  const SlowdownPrediction prediction = predict_slowdown(buggy, device);
  const DecodeTotals fixed = decode_totals(prediction.fixed);
  const DecodeTotals buggy_totals = decode_totals(prediction.buggy);
  DeviceSlowdown result;
  result.device = device.name;
  result.decode_slowdown = prediction.decode_slowdown;
  result.end_to_end_slowdown = prediction.end_to_end_slowdown;
  const PhasePrediction* decode = prediction.buggy.prediction.phase(Phase::Decode);
  result.bound = decode ? predicted_bound_name(decode->bound) : "-";
  const bool same_steps = fixed.passes == buggy_totals.passes;
  result.unit = same_steps ? "step" : "token";
  const double fixed_units = static_cast<double>(same_steps ? fixed.passes : fixed.tokens);
  const double buggy_units = static_cast<double>(same_steps ? buggy_totals.passes : buggy_totals.tokens);
  if (fixed_units > 0 && buggy_units > 0) {
    result.fixed_ms_per_unit = fixed.decode_ms / fixed_units;
    result.added_ms_per_unit = buggy_totals.decode_ms / buggy_units - result.fixed_ms_per_unit;
    result.mechanism =
        mechanism_text(fixed, buggy_totals, prediction.buggy.prediction.inputs, buggy_units, result.unit);
  }
  return result;
}

double prediction_error(double measured, double predicted) {
  return predicted > 0 && measured > 0 ? measured / predicted - 1.0 : 0.0;
}

double predicted_slowdown(const DeviceSlowdown& device, SlowdownMetric metric) {
  return metric == SlowdownMetric::Decode ? device.decode_slowdown : device.end_to_end_slowdown;
}

double RowPrediction::predicted() const { return predicted_slowdown(here, of); }

double RowPrediction::error() const {
  return of == SlowdownMetric::Decode ? decode_slowdown_error : end_to_end_slowdown_error;
}

std::string machine_noise(bool machine_contended, bool roofs_noisy, double host_stall_fraction) {
  std::string noise;
  auto add = [&](const std::string& part) { noise += (noise.empty() ? "" : ", ") + part; };
  if (machine_contended) add("busy");
  if (roofs_noisy) add("roofs noisy");
  if (host_stall_fraction >= LimiterThresholds{}.host_starved_fraction)
    add("device waiting on the host " + format_percent(host_stall_fraction));
  return noise;
}

bool roofs_noisy(const DeviceSpec& device) { return device.measured && device.measured->noisy; }

RowPrediction predict_row(const Scenario& buggy, const DeviceSpec& here, const Estimate& measured_decode_slowdown,
                          const Estimate& measured_end_to_end_slowdown, SlowdownMetric of,
                          const std::vector<std::string>& elsewhere) {
  RowPrediction row;
  row.of = of;
  row.measured = of == SlowdownMetric::Decode ? measured_decode_slowdown : measured_end_to_end_slowdown;
  try {
    row.here = predict_device_slowdown(buggy, here);
    for (const DeviceSpec& device : reference_devices(elsewhere, "--predict-on"))
      row.elsewhere.push_back(predict_device_slowdown(buggy, device));
  } catch (const InputError& error) {  // a device the model cannot price: the measurement stands alone
    row.unavailable = error.what();
    return row;
  }
  row.decode_slowdown_error = prediction_error(measured_decode_slowdown.median, row.here.decode_slowdown);
  row.end_to_end_slowdown_error = prediction_error(measured_end_to_end_slowdown.median, row.here.end_to_end_slowdown);
  row.within_interval = row.measured.samples > 0 && row.measured.contains(row.predicted());
  row.verdict = verdict_of(row.error());
  row.sentence = buggy.name + ": " + (row.here.mechanism.empty() ? "" : row.here.mechanism + ": ") + "predicted " +
                 signed_time(row.here.added_ms_per_unit) + " per " + row.here.unit + " here (" +
                 ratio_text(row.here.decode_slowdown) + " decode, " + ratio_text(row.here.end_to_end_slowdown) + " end to end)";
  for (const DeviceSlowdown& device : row.elsewhere) row.sentence += "; " + elsewhere_clause(device);
  return row;
}

void add_row_prediction_json(nlohmann::json& row, const RowPrediction& prediction) {
  if (!prediction.unavailable.empty()) {
    row["prediction"] = {{"unavailable", prediction.unavailable}};
    return;
  }
  row["predicted_decode_slowdown"] = prediction.here.decode_slowdown;
  row["predicted_end_to_end_slowdown"] = prediction.here.end_to_end_slowdown;
  row["decode_slowdown_prediction_error"] = prediction.decode_slowdown_error;
  row["end_to_end_slowdown_prediction_error"] = prediction.end_to_end_slowdown_error;
  nlohmann::json details = device_slowdown_json(prediction.here);
  for (const char* flat : {"predicted_decode_slowdown", "predicted_end_to_end_slowdown"}) details.erase(flat);
  details["verdict"] = prediction.verdict;
  if (!prediction.noise.empty()) details["noise"] = prediction.noise;
  details["of"] = to_string(prediction.of);
  details["within_interval"] = prediction.within_interval;
  details["tolerance"] = kPredictionTolerance;
  details["sentence"] = prediction.sentence;
  details["elsewhere"] = nlohmann::json::array();
  for (const DeviceSlowdown& device : prediction.elsewhere) details["elsewhere"].push_back(device_slowdown_json(device));
  row["prediction"] = details;
}

std::optional<RowPrediction> row_prediction_from_json(const nlohmann::json& row, const std::string& file) {
  if (!row.contains("prediction") || !row["prediction"].is_object()) return std::nullopt;
  const nlohmann::json& details = row["prediction"];
  RowPrediction prediction;
  if (details.contains("unavailable")) {
    prediction.unavailable = details.value("unavailable", std::string("?"));
    return prediction;
  }
  nlohmann::json here = details;
  here["predicted_decode_slowdown"] = row.value("predicted_decode_slowdown", nlohmann::json());
  here["predicted_end_to_end_slowdown"] = row.value("predicted_end_to_end_slowdown", nlohmann::json());
  prediction.here = device_slowdown_from_json(here, file);
  prediction.decode_slowdown_error = row.value("decode_slowdown_prediction_error", 0.0);
  prediction.end_to_end_slowdown_error = row.value("end_to_end_slowdown_prediction_error", 0.0);
  prediction.verdict = details.value("verdict", std::string("-"));
  prediction.noise = details.value("noise", std::string());
  prediction.of = details.value("of", std::string("decode")) == "end_to_end" ? SlowdownMetric::EndToEnd
                                                                            : SlowdownMetric::Decode;
  prediction.within_interval = details.value("within_interval", false);
  // A lab row keeps the measured figure's interval beside it.
  const std::string measured_key = std::string(to_string(prediction.of)) + "_slowdown";
  if (row.contains("intervals") && row["intervals"].is_object() && row["intervals"].contains(measured_key))
    prediction.measured = estimate_from_json(row["intervals"][measured_key]);
  prediction.sentence = details.value("sentence", std::string());
  if (details.contains("elsewhere") && details["elsewhere"].is_array())
    for (const nlohmann::json& device : details["elsewhere"])
      prediction.elsewhere.push_back(device_slowdown_from_json(device, file));
  return prediction;
}

std::string prediction_columns_header(const std::vector<std::string>& elsewhere) {
  std::string header = " predicted | error | vs prediction |";
  for (const std::string& device : elsewhere) header += " on " + device + " |";
  return header;
}

std::string prediction_columns_rule(const std::vector<std::string>& elsewhere) {
  std::string rule = " ---: | ---: | --- |";
  for (size_t i = 0; i < elsewhere.size(); ++i) rule += " ---: |";
  return rule;
}

namespace {

// " — on a noisy machine (busy): the error holds its noise as well as the model's misses"; "" when quiet.
std::string noise_clause(const RowPrediction& prediction) {
  if (prediction.noise.empty()) return "";
  return " — on a noisy machine (" + prediction.noise + "): the error holds its noise as well as the model's misses";
}

std::vector<std::string> cell_texts(const std::optional<RowPrediction>& prediction,
                                    const std::vector<std::string>& elsewhere) {
  std::vector<std::string> cells;
  const bool present = prediction && prediction->unavailable.empty();
  cells.push_back(present ? ratio_text(prediction->predicted()) : "-");
  cells.push_back(present ? signed_percent(prediction->error()) + (prediction->within_interval ? " (in 95% CI)" : "") : "-");
  cells.push_back(present ? prediction->verdict + (prediction->noise.empty() ? "" : " (" + prediction->noise + ")") : "-");
  for (const std::string& name : elsewhere) {
    std::string cell = "-";
    if (present)
      for (const DeviceSlowdown& device : prediction->elsewhere)
        if (device.device == name) cell = ratio_text(predicted_slowdown(device, prediction->of));
    cells.push_back(cell);
  }
  return cells;
}

}  // namespace

std::string prediction_cells(const std::optional<RowPrediction>& prediction, const std::vector<std::string>& elsewhere) {
  std::string text;
  for (const std::string& cell : cell_texts(prediction, elsewhere)) text += " " + cell + " |";
  return text;
}

std::string prediction_html_cells(const std::optional<RowPrediction>& prediction,
                                  const std::vector<std::string>& elsewhere) {
  std::string html;
  for (const std::string& cell : cell_texts(prediction, elsewhere)) html += "<td>" + cell + "</td>";
  return html;
}

std::vector<std::string> elsewhere_devices(const std::vector<const RowPrediction*>& predictions) {
  std::vector<std::string> names;
  for (const RowPrediction* prediction : predictions) {
    if (!prediction) continue;
    for (const DeviceSlowdown& device : prediction->elsewhere)
      if (std::find(names.begin(), names.end(), device.device) == names.end()) names.push_back(device.device);
  }
  return names;
}

namespace {

// "predicted 1.90x, measured 2.04x ±1.8% (error +7%, inside the measured 95% interval)"
std::string beside_measured(double predicted, const Estimate& measured, double error, bool judged,
                            bool within_interval) {
  std::string text = "predicted " + ratio_text(predicted);
  if (measured.samples == 0) return text;
  text += ", measured " + format_slowdown(measured) + " (error " + signed_percent(error);
  if (judged) text += within_interval ? ", inside the measured 95% interval" : ", outside the measured 95% interval";
  return text + ")";
}

}  // namespace

std::string device_in_words(const std::string& device) {
  return device.rfind("measured-", 0) == 0 ? "this machine (measured roofs)" : device;
}

std::string prediction_summary(const RowPrediction& prediction, const Estimate& measured_decode_slowdown,
                               const Estimate& measured_end_to_end_slowdown) {
  if (!prediction.unavailable.empty()) return "predicted: none (" + prediction.unavailable + ")\n";
  const bool decode = prediction.of == SlowdownMetric::Decode;
  char tolerance[16];
  std::snprintf(tolerance, sizeof tolerance, "%.0f%%", kPredictionTolerance * 100);
  std::string text = "predicted on " + device_in_words(prediction.here.device) + " (error = measured / predicted - 1):\n";
  text += "  decode slowdown:     " +
          beside_measured(prediction.here.decode_slowdown, measured_decode_slowdown, prediction.decode_slowdown_error,
                          decode, prediction.within_interval) + "\n";
  text += "  end-to-end slowdown: " +
          beside_measured(prediction.here.end_to_end_slowdown, measured_end_to_end_slowdown,
                          prediction.end_to_end_slowdown_error, !decode, prediction.within_interval) + "\n";
  text += "verdict against the prediction (" + std::string(slowdown_words(prediction.of)) + ", within ±" +
          tolerance + "): " + prediction.verdict + noise_clause(prediction) + "\n";
  return text + prediction.sentence + "\n";
}

std::string prediction_html(const RowPrediction& prediction) {
  if (!prediction.unavailable.empty())
    return "<p>No prediction: " + xml_escape(prediction.unavailable) + "</p>";
  const std::string judged = slowdown_words(prediction.of);
  std::string measured;
  if (prediction.measured.samples > 0)
    measured = ", measured " + format_slowdown(prediction.measured) + " (" +
               (prediction.within_interval ? "the prediction lies inside" : "the prediction lies outside") +
               " its 95% interval)";
  return "<h2>Predicted</h2><p>On " + xml_escape(device_in_words(prediction.here.device)) + ": " + judged + " " +
         ratio_text(prediction.predicted()) + measured + "; prediction error " + signed_percent(prediction.error()) + ": " +
         prediction.verdict + xml_escape(noise_clause(prediction)) + ". Decode " + ratio_text(prediction.here.decode_slowdown) + " (error " +
         signed_percent(prediction.decode_slowdown_error) + "), end to end " +
         ratio_text(prediction.here.end_to_end_slowdown) + " (error " + signed_percent(prediction.end_to_end_slowdown_error) +
         ").</p><p>" + xml_escape(prediction.sentence) + "</p>";
}

void add_sweep_prediction_json(nlohmann::json& row, const Scenario& scenario, const DeviceSpec& device,
                               double measured_decode_tokens_per_s) {
  try {
    const ScenarioPrediction prediction = predict_scenario(scenario, device);
    const double predicted = prediction.metrics.decode_tokens_per_s;
    row["predicted_decode_tokens_per_s"] = predicted;
    row["decode_tokens_per_s_prediction_error"] = prediction_error(measured_decode_tokens_per_s, predicted);
    const std::string suspect = suspect_below_prediction("decode tok/s", measured_decode_tokens_per_s, predicted);
    if (!suspect.empty()) row["suspect"] = suspect;
    const PhasePrediction* decode = prediction.prediction.phase(Phase::Decode);
    row["prediction"] = {{"device", device.name},
                         {"decode_bound", decode ? predicted_bound_name(decode->bound) : "-"}};
  } catch (const InputError& error) {
    row["prediction"] = {{"unavailable", error.what()}};
  }
}

std::string suspect_below_prediction(const std::string& figure, double measured, double predicted) {
  if (!(measured > 0) || !(predicted > 0) || measured * kSuspectBelowPrediction > predicted) return "";
  return figure + " " + format_number(measured, 4) + " is " + format_number(predicted / measured, 2) + "x below the " +
         format_number(predicted, 4) + " the model predicts from this machine's roofs: suspect — other work may have "
         "taken the cores while it ran";
}

std::string sweep_prediction_cells(const nlohmann::json& row) {
  const double predicted = row.value("predicted_decode_tokens_per_s", 0.0);
  if (!(predicted > 0)) return " - | - |";
  return " " + format_number(predicted, 4) + " | " +
         signed_percent(row.value("decode_tokens_per_s_prediction_error", 0.0)) + (row.contains("suspect") ? " suspect" : "") +
         " |";
}

}  // namespace decodelab
