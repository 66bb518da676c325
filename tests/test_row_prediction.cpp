// The prediction beside each measurement: compare's and lab's JSON hold the predicted and
// measured slowdowns side by side with the error as measured / predicted - 1; the sentence
// names the numbers the model priced (reads per step, the round trip, the slowdowns here and
// on the reference device); --predict-on refuses an unknown device naming the known ones;
// a lab row's prediction survives the round trip through its JSON (resume, collect); a sweep
// row carries its predicted tok/s, and the decode-batch curve turns at the ridge point.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "lab/report/lab_table.h"
#include "lab/paths.h"
#include "lab/predict/predict.h"
#include "lab/predict/row_prediction.h"
#include "lab/scenario/scenario.h"
#include "lab/run/slowdown.h"
#include "lab/run/sweep.h"
#include "lab/report/sweep_report.h"
#include "profiling/units.h"
#include "tests/support/seeded_calibration.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

using namespace decodelab;
using namespace decodelab::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;

namespace {

// A device with round numbers: 100 GB/s and 400 GFLOP/s put the ridge point at 4 FLOP/B in fp16.
DeviceSpec round_device() {
  DeviceSpec spec = round_measured_spec("round-test");
  spec.measured->bandwidth = 100e9;
  spec.measured->fp32_flops = spec.measured->fp16_flops = spec.measured->bf16_flops = 400e9;
  spec.measured_fixed_costs = FixedCosts{0.1e-6, 0.5e-6, 7e-6, 0, "test stream costs"};
  spec.measured_cache.reset();
  return spec;
}

// A calibration of this machine at one thread, so compare, lab and sweep measure nothing.
std::string calibrated_environment(const TempDir& cache) { return seed_calibration(round_device(), cache.path(), 1); }

// A short lab-tiny run of a lab scenario: seconds, not minutes.
const std::vector<std::string>& small_run() {
  static const std::vector<std::string> settings = {
      "--threads", "1", "--set", "model=lab-tiny", "--set", "workload.new_tokens=6", "--set", "run.repeats=1",
      "--set", "run.warmup=0"};
  return settings;
}

std::vector<std::string> with(std::vector<std::string> arguments, const std::vector<std::string>& more) {
  arguments.insert(arguments.end(), more.begin(), more.end());
  return arguments;
}

// A measured slowdown with a 95% interval of ±`half` around it.
Estimate measured(double median, double half = 0.0) {
  Estimate estimate;
  estimate.median = median;
  estimate.low = median - half;
  estimate.high = median + half;
  estimate.confidence = 0.969;
  estimate.samples = 6;
  return estimate;
}

// A slowdown's median as a compare result (an interval object) or a lab row (a number) holds it.
double median_in(const nlohmann::json& row, const std::string& key) {
  const nlohmann::json& value = row.at(key);
  return value.is_object() ? value.at("median").get<double>() : value.get<double>();
}

// The side by side a compare or lab row must hold: both slowdowns measured and predicted,
// each error measured / predicted - 1, and the verdict on the slowdown the range verdict
// judges (the headline's), whether the prediction lies in its interval, and the sentence.
void check_side_by_side(const nlohmann::json& row) {
  const double predicted_decode = row.at("predicted_decode_slowdown").get<double>();
  const double predicted_end_to_end = row.at("predicted_end_to_end_slowdown").get<double>();
  REQUIRE(predicted_decode > 0);
  REQUIRE(predicted_end_to_end > 0);
  CHECK(row.at("decode_slowdown_prediction_error").get<double>() ==
        Approx(median_in(row, "decode_slowdown") / predicted_decode - 1.0));
  CHECK(row.at("end_to_end_slowdown_prediction_error").get<double>() ==
        Approx(median_in(row, "end_to_end_slowdown") / predicted_end_to_end - 1.0));
  const nlohmann::json& prediction = row.at("prediction");
  CHECK(prediction.at("device") == "round-test");
  const std::string of = row.at("headline").at("metric").get<std::string>();
  CHECK(prediction.at("of") == of);
  const double error = row.at(of + "_slowdown_prediction_error").get<double>();
  CHECK(prediction.at("verdict") == (error > 0.2 ? "above prediction" : error < -0.2 ? "below prediction" : "as predicted"));
  const nlohmann::json& interval = row.at("headline").at("measured");
  const double predicted = row.at("predicted_" + of + "_slowdown").get<double>();
  CHECK(prediction.at("within_interval") ==
        (interval.at("low").get<double>() <= predicted && predicted <= interval.at("high").get<double>()));
  CHECK_THAT(prediction.at("sentence").get<std::string>(), Contains("host_sync: ") && Contains("round trip"));
}

}  // namespace

TEST_CASE("row prediction: the sentence names the numbers the model priced", "[row_prediction]") {
  const Scenario scenario = load_scenario(scenarios_dir() / "bugs" / "host_sync.yaml");
  const DeviceSpec here = round_device();
  const DeviceSpec h200 = find_device_spec("h200");

  const RowPrediction row = predict_row(scenario, here, measured(2.0), measured(1.5), SlowdownMetric::Decode, {"h200"});

  // The same model, asked directly: reads per step, the slowdowns here and on the H200.
  const SlowdownPrediction direct = predict_slowdown(scenario, here);
  const PhasePrediction* fixed = direct.fixed.prediction.phase(Phase::Decode);
  const PhasePrediction* buggy = direct.buggy.prediction.phase(Phase::Decode);
  REQUIRE(fixed);
  REQUIRE(buggy);
  REQUIRE(fixed->passes == buggy->passes);
  const int64_t reads_per_step = (buggy->device_to_host_reads - fixed->device_to_host_reads) / buggy->passes;
  REQUIRE(reads_per_step > 0);
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2fx decode", direct.decode_slowdown);
  const SlowdownPrediction on_h200 = predict_slowdown(scenario, h200);
  char h200_ratio[32];
  std::snprintf(h200_ratio, sizeof h200_ratio, on_h200.decode_slowdown < 10 ? "(%.2fx)" : "(%.1fx)",
                on_h200.decode_slowdown);

  REQUIRE(row.unavailable.empty());
  CHECK(row.here.decode_slowdown == Approx(direct.decode_slowdown));
  CHECK(row.here.end_to_end_slowdown == Approx(direct.end_to_end_slowdown));
  CHECK(row.decode_slowdown_error == Approx(2.0 / direct.decode_slowdown - 1.0));
  CHECK(row.end_to_end_slowdown_error == Approx(1.5 / direct.end_to_end_slowdown - 1.0));
  CHECK(row.here.unit == "step");
  INFO(row.sentence);
  CHECK_THAT(row.sentence, Contains(std::to_string(reads_per_step) + " device-to-host reads per step × " +
                                    format_seconds(7e-6) + " round trip + the wait for the work queued before it"));
  CHECK_THAT(row.sentence, Contains(ratio));
  CHECK_THAT(row.sentence, Contains("on h200 the same costs") && Contains(h200_ratio));
  // The added time per step is the predicted decode time per step, buggy minus fixed.
  const double added_ms = direct.buggy.prediction.timing.decode_ms / static_cast<double>(buggy->passes) -
                          direct.fixed.prediction.timing.decode_ms / static_cast<double>(fixed->passes);
  CHECK(row.here.added_ms_per_unit == Approx(added_ms));
  CHECK_THAT(row.sentence, Contains("predicted +" + format_seconds(added_ms * 1e-3) + " per step here"));
}

TEST_CASE("row prediction: sequential generation is priced per token, its steps multiplied", "[row_prediction]") {
  const Scenario scenario = load_scenario(scenarios_dir() / "bugs" / "sequential_generation.yaml");
  const RowPrediction row =
      predict_row(scenario, round_device(), measured(1.0), measured(1.0), SlowdownMetric::Decode, {});
  INFO(row.sentence);
  CHECK(row.here.unit == "token");
  CHECK_THAT(row.sentence, Contains("the decode steps (1 token per step instead of " +
                                    std::to_string(scenario.workload.batch_size) + ")"));
}

TEST_CASE("row prediction: the verdict judges the slowdown the range names, beside its interval", "[row_prediction]") {
  const Scenario scenario = load_scenario(scenarios_dir() / "bugs" / "host_sync.yaml");
  const DeviceSpec here = round_device();
  const SlowdownPrediction direct = predict_slowdown(scenario, here);
  // Decode measured as predicted, end to end twice the prediction: the verdict follows `of`.
  const Estimate decode = measured(direct.decode_slowdown, 0.05 * direct.decode_slowdown);
  const Estimate end_to_end = measured(2 * direct.end_to_end_slowdown, 0.01);

  const RowPrediction by_decode = predict_row(scenario, here, decode, end_to_end, SlowdownMetric::Decode, {});
  CHECK(by_decode.verdict == "as predicted");
  CHECK(by_decode.predicted() == Approx(direct.decode_slowdown));
  CHECK(by_decode.error() == Approx(0.0).margin(1e-12));
  CHECK(by_decode.within_interval);
  CHECK(by_decode.measured.high == Approx(decode.high));
  CHECK(prediction_cells(by_decode, {}) == " " + ratio_text(direct.decode_slowdown) + " | +0% (in 95% CI) | as predicted |");

  const RowPrediction by_end = predict_row(scenario, here, decode, end_to_end, SlowdownMetric::EndToEnd, {});
  CHECK(by_end.verdict == "above prediction");
  CHECK(by_end.error() == Approx(1.0));
  CHECK_FALSE(by_end.within_interval);
  nlohmann::json json = nlohmann::json::object();
  add_row_prediction_json(json, by_end);
  CHECK(json.at("prediction").at("of") == "end_to_end");
  CHECK(json.at("prediction").at("within_interval") == false);
  const std::string summary = prediction_summary(by_end, decode, end_to_end);
  INFO(summary);
  CHECK_THAT(summary, Contains("verdict against the prediction (end-to-end slowdown, within ±20%): above prediction"));
  CHECK_THAT(summary, !Contains("_slowdown"));
  // This machine's measured roofs are named for tools in JSON, in words for people.
  RowPrediction measured_here = by_end;
  measured_here.here.device = "measured-vm";
  CHECK_THAT(prediction_summary(measured_here, decode, end_to_end),
             Contains("predicted on this machine (measured roofs)") && !Contains("measured-vm"));
  CHECK_THAT(prediction_html(measured_here), Contains("On this machine (measured roofs)"));
  CHECK(device_in_words("h200") == "h200");
  CHECK_THAT(summary, Contains("measured " + format_slowdown(end_to_end)) &&
                          Contains("outside the measured 95% interval"));
}

TEST_CASE("row prediction: a verdict taken on a noisy machine says so", "[row_prediction]") {
  CHECK(machine_noise(false, false).empty());
  CHECK(machine_noise(true, false) == "busy");
  CHECK(machine_noise(false, true) == "roofs noisy");
  CHECK(machine_noise(true, true) == "busy, roofs noisy");
  // A starved host counts from 5% of a side's decode device time idle for it.
  CHECK(machine_noise(false, false, 0.049).empty());
  CHECK(machine_noise(false, false, 0.23) == "device waiting on the host 23%");
  CHECK(machine_noise(true, true, 0.05) == "busy, roofs noisy, device waiting on the host 5%");
  DeviceSpec here = round_device();
  CHECK_FALSE(roofs_noisy(here));
  here.measured = Roofs{};
  here.measured->noisy = true;
  CHECK(roofs_noisy(here));

  const Scenario scenario = load_scenario(scenarios_dir() / "bugs" / "host_sync.yaml");
  RowPrediction row = predict_row(scenario, round_device(), measured(3.0), measured(3.0), SlowdownMetric::Decode, {});
  const std::string quiet_cells = prediction_cells(row, {});
  row.noise = "busy";
  CHECK_THAT(prediction_cells(row, {}), EndsWith(row.verdict + " (busy) |"));
  CHECK_THAT(prediction_summary(row, measured(3.0), measured(3.0)),
             Contains(row.verdict + " — on a noisy machine (busy): the error holds its noise as well as the model's misses"));
  CHECK_THAT(prediction_html(row), Contains("on a noisy machine (busy)"));
  nlohmann::json json = nlohmann::json::object();
  add_row_prediction_json(json, row);
  CHECK(json.at("prediction").at("noise") == "busy");
  LabRow lab_row;
  lab_row.bug = "host_sync";
  lab_row.fixed = lab_row.buggy = nlohmann::json::object();
  lab_row.decode_slowdown = lab_row.end_to_end_slowdown = measured(3.0);
  lab_row.headline = read_slowdown(scenario, lab_row.decode_slowdown, lab_row.end_to_end_slowdown);
  lab_row.scenario = scenario_to_json(scenario);
  lab_row.prediction = row;
  const LabRow back = lab_row_from_json(lab_row_json(lab_row), "rows.json");
  REQUIRE(back.prediction);
  CHECK(back.prediction->noise == "busy");
  // Quiet: no "noise" key and the cells as before.
  row.noise.clear();
  CHECK(prediction_cells(row, {}) == quiet_cells);
  nlohmann::json quiet = nlohmann::json::object();
  add_row_prediction_json(quiet, row);
  CHECK_FALSE(quiet.at("prediction").contains("noise"));
}

TEST_CASE("row prediction: a device it cannot price gives no prediction, and says why", "[row_prediction]") {
  const Scenario scenario = load_scenario(scenarios_dir() / "bugs" / "host_sync.yaml");
  DeviceSpec bare = round_device();
  bare.measured_fixed_costs.reset();
  const RowPrediction row = predict_row(scenario, bare, measured(2.0), measured(2.0), SlowdownMetric::Decode, {});
  CHECK_FALSE(row.unavailable.empty());
  nlohmann::json json = nlohmann::json::object();
  add_row_prediction_json(json, row);
  CHECK_FALSE(json.contains("predicted_decode_slowdown"));
  CHECK(json.at("prediction").contains("unavailable"));
  CHECK(prediction_cells(row, {}) == " - | - | - |");
  // A reference device file that cannot be read after the runs: the same, not a failure.
  CHECK_FALSE(predict_row(scenario, round_device(), measured(2.0), measured(2.0), SlowdownMetric::Decode,
                          {"/nonexistent/device.yaml"})
                  .unavailable.empty());
}

TEST_CASE("row prediction: a lab row's prediction survives its JSON", "[row_prediction]") {
  const Scenario scenario = load_scenario(scenarios_dir() / "bugs" / "fp32_ops.yaml");
  LabRow row;
  row.bug = "fp32_ops";
  row.fixed = row.buggy = nlohmann::json::object();
  row.decode_slowdown = measured(1.9, 0.1);
  row.end_to_end_slowdown = measured(1.8, 0.1);
  row.headline = read_slowdown(scenario, row.decode_slowdown, row.end_to_end_slowdown);
  row.scenario = scenario_to_json(scenario);
  row.prediction =
      predict_row(scenario, round_device(), row.decode_slowdown, row.end_to_end_slowdown, row.headline.metric, {"l4"});

  const LabRow back = lab_row_from_json(lab_row_json(row), "rows.json");

  REQUIRE(back.prediction);
  CHECK(back.prediction->here.decode_slowdown == Approx(row.prediction->here.decode_slowdown));
  CHECK(back.prediction->end_to_end_slowdown_error == Approx(row.prediction->end_to_end_slowdown_error));
  CHECK(back.prediction->sentence == row.prediction->sentence);
  CHECK(back.prediction->of == SlowdownMetric::Decode);  // fp32_ops' range is about decode
  CHECK(back.prediction->within_interval == row.prediction->within_interval);
  CHECK(back.prediction->measured.high == Approx(2.0));  // the measured interval, from the row
  REQUIRE(back.prediction->elsewhere.size() == 1);
  CHECK(back.prediction->elsewhere[0].device == "l4");
  CHECK(lab_table({back}) == lab_table({row}));
}

TEST_CASE("compare and lab: predicted and measured slowdowns side by side", "[row_prediction][cli]") {
  const TempDir dir;
  const std::string environment = calibrated_environment(dir);

  const std::filesystem::path compare_json = dir.path() / "compare.json";
  const CommandResult compare = run_decodelab(
      with({"compare", "host_sync", "--json", compare_json.string(), "--predict-on", "a100-80gb,l4"}, small_run()),
      environment);
  INFO(compare.err);
  REQUIRE(compare.exit_code == 0);
  const nlohmann::json comparison = read_json(compare_json);
  check_side_by_side(comparison);
  CHECK(comparison.at("prediction").at("elsewhere").size() == 2);
  CHECK_THAT(compare.out, Contains("predicted on round-test") && Contains("on a100-80gb the same costs") &&
                              Contains("on l4 the same costs"));

  const std::filesystem::path lab_json = dir.path() / "lab.json";
  const std::filesystem::path report = dir.path() / "report";
  const CommandResult lab = run_decodelab(
      with({"lab", "--only", "host_sync", "--json", lab_json.string(), "--report", report.string()}, small_run()),
      environment);
  INFO(lab.err);
  REQUIRE(lab.exit_code == 0);
  const nlohmann::json rows = read_json(lab_json);
  REQUIRE(rows.size() == 1);
  check_side_by_side(rows[0]);
  CHECK(rows[0].at("prediction").at("elsewhere").at(0).at("device") == "h200");  // the default reference GPU
  CHECK_THAT(lab.out, Contains("| predicted | error | vs prediction | on h200 |") && Contains("- host_sync: "));
  const std::string index = read_text_file(report / "index.html");
  CHECK_THAT(index, Contains("<th>vs prediction</th>") && Contains("on h200 the same costs"));
  CHECK_THAT(read_text_file(report / "host_sync" / "attribution.html"), Contains("<h2>Predicted</h2>"));
}

TEST_CASE("lab and compare --predict-on: an unknown device is exit 2 naming the known ones", "[row_prediction][cli]") {
  const TempDir dir;
  for (const std::string command : {"lab", "compare"}) {
    std::vector<std::string> arguments = {command};
    if (command == "compare") arguments.push_back("host_sync");
    const std::filesystem::path json = dir.path() / (command + ".json");
    arguments.insert(arguments.end(), {"--predict-on", "h200,h300", "--json", json.string()});
    const CommandResult result = run_decodelab(arguments);
    INFO(result.err);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Contains("--predict-on") && Contains("h300") && Contains("known: ") && Contains("a100-80gb") &&
                               Contains("l4"));
    CHECK_FALSE(std::filesystem::exists(json));
  }
}

TEST_CASE("sweep: each row beside its prediction, the curve in the report", "[row_prediction][cli]") {
  const TempDir dir;
  const std::string environment = calibrated_environment(dir);
  const std::filesystem::path json = dir.path() / "sweep.json";
  const std::filesystem::path report = dir.path() / "report";

  const CommandResult result = run_decodelab(
      with({"sweep", "decode-batch", "--set", "workload.requests=[1,4]", "--set", "workload.batch_size=[1,4]", "--json",
            json.string(), "--report", report.string()},
           small_run()),
      environment);

  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const nlohmann::json rows = read_json(json);
  REQUIRE(rows.size() == 2);
  for (const nlohmann::json& row : rows) {
    const double predicted = row.at("predicted_decode_tokens_per_s").get<double>();
    REQUIRE(predicted > 0);
    CHECK(row.at("decode_tokens_per_s_prediction_error").get<double>() ==
          Approx(row.at("metrics").at("decode_tokens_per_s").get<double>() / predicted - 1.0));
    CHECK(row.at("prediction").at("device") == "round-test");
  }
  CHECK_THAT(result.out, Contains("| predicted tok/s | error |"));
  const std::string page = read_text_file(report / "index.html");
  CHECK_THAT(page, Contains("<polyline") && Contains("<circle") && Contains("batch_size"));
}

TEST_CASE("sweep chart: the decode-batch curve turns compute-bound at the ridge point", "[row_prediction]") {
  const std::filesystem::path file = scenarios_dir() / "sweeps" / "decode-batch.yaml";
  const std::vector<SweepPoint> points = expand_sweep(read_scenario_document(file), file.string());
  std::vector<Scenario> scenarios;
  for (const SweepPoint& point : points) scenarios.push_back(parse_scenario(point.scenario, file));
  const DeviceSpec device = round_device();  // ridge: 4 FLOP/B

  const std::vector<SweepSeries> series = sweep_series(points, scenarios, {}, device);

  REQUIRE(series.size() == 1);
  const std::vector<CurvePoint>& curve = series[0].predicted;
  REQUIRE(curve.size() > points.size());  // points between the sweep's own
  CHECK(curve.front().bound == "bandwidth roof");
  CHECK(curve.back().bound == "compute roof");
  // fp16 decode does about 1 FLOP per byte per sequence: the turn lies near batch 4.
  const auto knee = std::find_if(curve.begin(), curve.end(), [](const CurvePoint& p) { return p.bound == "compute roof"; });
  CHECK(knee->x >= 2);
  CHECK(knee->x <= 8);
  // Past the knee tok/s flattens: the last doubling gains far less than the first.
  CHECK(curve.back().decode_tokens_per_s / curve.front().decode_tokens_per_s < 64.0 / 4);
}

TEST_CASE("sweep chart: the curve passes through each row's own prediction, points carry their intervals",
          "[row_prediction]") {
  const std::filesystem::path file = scenarios_dir() / "sweeps" / "decode-batch.yaml";
  const std::vector<SweepPoint> points = expand_sweep(read_scenario_document(file), file.string());
  std::vector<Scenario> scenarios;
  for (const SweepPoint& point : points) scenarios.push_back(parse_scenario(point.scenario, file));
  // Rows whose predictions came from other roofs than the chart's device (as a threads sweep's
  // points each have their own): the curve must not replace them.
  std::vector<nlohmann::json> rows;
  for (size_t i = 0; i < points.size(); ++i) {
    const double measured = 100.0 * static_cast<double>(i + 1);
    rows.push_back({{"metrics", {{"decode_tokens_per_s", measured}}},
                    {"intervals",
                     {{"decode_tokens_per_s",
                       {{"median", measured}, {"low", measured * 0.9}, {"high", measured * 1.2}, {"samples", 6}}}}},
                    {"predicted_decode_tokens_per_s", 7.0 * measured},
                    {"prediction", {{"device", "row roofs"}, {"decode_bound", "bandwidth roof"}}}});
  }
  const std::vector<SweepSeries> series = sweep_series(points, scenarios, rows, round_device());
  REQUIRE(series.size() == 1);
  const SweepSeries& s = series[0];
  REQUIRE(s.measured_x.size() == points.size());
  for (size_t k = 0; k < s.measured_x.size(); ++k) {
    CHECK(s.measured_low[k] == Approx(0.9 * s.measured_tokens_per_s[k]));
    CHECK(s.measured_high[k] == Approx(1.2 * s.measured_tokens_per_s[k]));
    const auto at = std::find_if(s.predicted.begin(), s.predicted.end(),
                                 [&](const CurvePoint& p) { return p.x == s.measured_x[k]; });
    REQUIRE(at != s.predicted.end());
    CHECK(at->decode_tokens_per_s == Approx(7.0 * s.measured_tokens_per_s[k]));
  }
}

TEST_CASE("sweep chart: along threads the curve is each row's own prediction, never the chart device's flat line",
          "[row_prediction]") {
  // The threads sweep drew 66,707 tok/s flat over threads 1-2 where the threads=1 row
  // predicted 11,335: one device's roofs priced every threads value alike.
  const TempDir dir;
  const std::filesystem::path file = dir.write("threads.yaml",
                                              "model: lab-tiny\ndtype: fp32\nbackend: cpu\nthreads: [1, 2, 4]\n"
                                              "workload: {requests: 2, batch_size: 2, prompt_tokens: 4, new_tokens: 8}\n");
  const std::vector<SweepPoint> points = expand_sweep(read_scenario_document(file), file.string());
  REQUIRE(points.size() == 3);
  REQUIRE(points.front().values.front().first == "threads");
  std::vector<Scenario> scenarios;
  for (const SweepPoint& point : points) scenarios.push_back(parse_scenario(point.scenario, file));
  // threads=1 and threads=4 priced with their own roofs; threads=2's row has no prediction.
  const auto measured = [](double tokens_per_s) {
    return nlohmann::json{{"metrics", {{"decode_tokens_per_s", tokens_per_s}}},
                          {"intervals",
                           {{"decode_tokens_per_s",
                             {{"median", tokens_per_s}, {"low", 0.9 * tokens_per_s}, {"high", 1.1 * tokens_per_s}, {"samples", 6}}}}}};
  };
  std::vector<nlohmann::json> rows = {measured(9000), measured(15000), measured(20000)};
  rows[0]["predicted_decode_tokens_per_s"] = 11335.0;
  rows[2]["predicted_decode_tokens_per_s"] = 30000.0;
  const std::vector<SweepSeries> series = sweep_series(points, scenarios, rows, round_device());
  REQUIRE(series.size() == 1);
  const std::vector<CurvePoint>& curve = series[0].predicted;
  REQUIRE(curve.size() == 2);
  CHECK(curve[0].x == 1);
  CHECK(curve[0].decode_tokens_per_s == Approx(11335.0));
  CHECK(curve[1].x == 4);
  CHECK(curve[1].decode_tokens_per_s == Approx(30000.0));
  CHECK(series[0].measured_x.size() == 3);  // every measured point is drawn, with or without a prediction
}

TEST_CASE("a figure 3x or more below its prediction is suspect, said with both numbers", "[row_prediction]") {
  // The batch-32 point: 458.6 tok/s where the same point had read 11,690, marked
  // "±2.2%" and nothing else.
  const std::string suspect = suspect_below_prediction("decode tok/s", 458.6, 11690);
  CHECK_THAT(suspect, Contains("decode tok/s 458.6") && Contains("25x below the 11690") && Contains("suspect"));
  CHECK_FALSE(suspect_below_prediction("decode tok/s", 100, kSuspectBelowPrediction * 100 + 1).empty());
  CHECK(suspect_below_prediction("decode tok/s", 100, kSuspectBelowPrediction * 100 - 1).empty());  // within 3x: a miss
  CHECK(suspect_below_prediction("decode tok/s", 1000, 500).empty());                                 // above: not suspect
  CHECK(suspect_below_prediction("decode tok/s", 0, 500).empty());                                    // nothing measured
  // The sweep table's error cell carries the mark.
  const nlohmann::json row = {{"predicted_decode_tokens_per_s", 11690.0},
                              {"decode_tokens_per_s_prediction_error", 458.6 / 11690 - 1},
                              {"suspect", suspect}};
  CHECK_THAT(sweep_prediction_cells(row), EndsWith(" suspect |"));
}
