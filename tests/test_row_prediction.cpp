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

#include "lab/lab_table.h"
#include "lab/paths.h"
#include "lab/predict.h"
#include "lab/row_prediction.h"
#include "lab/scenario.h"
#include "lab/sweep.h"
#include "lab/sweep_report.h"
#include "profiling/units.h"
#include "tests/support/cached_roofs.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

using namespace decodelab;
using namespace decodelab::testing;
using Catch::Matchers::Contains;

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

// Cached roofs for this machine at one thread, so compare, lab and sweep measure nothing.
std::string cached_roofs_environment(const TempDir& cache) { return cache_roofs(round_device(), cache.path(), 1); }

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

nlohmann::json read_json(const std::filesystem::path& file) { return nlohmann::json::parse(read_text_file(file)); }

// The side by side a compare or lab row must hold: both slowdowns measured and predicted,
// each error measured / predicted - 1, the verdict and the sentence.
void check_side_by_side(const nlohmann::json& row, const std::string& end_to_end_key) {
  const double predicted_decode = row.at("predicted_decode_slowdown").get<double>();
  const double predicted_end_to_end = row.at("predicted_end_to_end_slowdown").get<double>();
  REQUIRE(predicted_decode > 0);
  REQUIRE(predicted_end_to_end > 0);
  CHECK(row.at("decode_slowdown_prediction_error").get<double>() ==
        Approx(row.at("decode_slowdown").get<double>() / predicted_decode - 1.0));
  CHECK(row.at("end_to_end_slowdown_prediction_error").get<double>() ==
        Approx(row.at(end_to_end_key).get<double>() / predicted_end_to_end - 1.0));
  const nlohmann::json& prediction = row.at("prediction");
  CHECK(prediction.at("device") == "round-test");
  CHECK(prediction.at("of") == "end_to_end");
  const double error = row.at("end_to_end_slowdown_prediction_error").get<double>();
  CHECK(prediction.at("verdict") == (error > 0.2 ? "above prediction" : error < -0.2 ? "below prediction" : "as predicted"));
  CHECK_THAT(prediction.at("sentence").get<std::string>(), Contains("host_sync: ") && Contains("round trip"));
}

}  // namespace

TEST_CASE("row prediction: the sentence names the numbers the model priced", "[row_prediction]") {
  const Scenario scenario = load_scenario(scenarios_dir() / "bugs" / "host_sync.yaml");
  const DeviceSpec here = round_device();
  const DeviceSpec h200 = find_device_spec("h200");

  const RowPrediction row = predict_row(scenario, here, 2.0, 1.5, {"h200"});

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
                                    format_seconds(7e-6) + " round trip + the drained queue"));
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
  const RowPrediction row = predict_row(scenario, round_device(), 1.0, 1.0, {});
  INFO(row.sentence);
  CHECK(row.here.unit == "token");
  CHECK_THAT(row.sentence, Contains("the decode steps (1 token per step instead of " +
                                    std::to_string(scenario.workload.batch_size) + ")"));
}

TEST_CASE("row prediction: a device it cannot price gives no prediction, and says why", "[row_prediction]") {
  const Scenario scenario = load_scenario(scenarios_dir() / "bugs" / "host_sync.yaml");
  DeviceSpec bare = round_device();
  bare.measured_fixed_costs.reset();
  const RowPrediction row = predict_row(scenario, bare, 2.0, 2.0, {});
  CHECK_FALSE(row.unavailable.empty());
  nlohmann::json json = nlohmann::json::object();
  add_row_prediction_json(json, row);
  CHECK_FALSE(json.contains("predicted_decode_slowdown"));
  CHECK(json.at("prediction").contains("unavailable"));
  CHECK(prediction_cells(row, {}) == " - | - | - |");
  // A reference device file that cannot be read after the runs: the same, not a failure.
  CHECK_FALSE(predict_row(scenario, round_device(), 2.0, 2.0, {"/nonexistent/device.yaml"}).unavailable.empty());
}

TEST_CASE("row prediction: a lab row's prediction survives its JSON", "[row_prediction]") {
  const Scenario scenario = load_scenario(scenarios_dir() / "bugs" / "fp32_ops.yaml");
  LabRow row;
  row.bug = "fp32_ops";
  row.slowdown = 1.8;
  row.decode_slowdown = 1.9;
  row.verdict = "below";
  row.scenario = scenario_to_json(scenario);
  row.prediction = predict_row(scenario, round_device(), 1.9, 1.8, {"l4"});

  const LabRow back = lab_row_from_json(lab_row_json(row), "rows.json");

  REQUIRE(back.prediction);
  CHECK(back.prediction->here.decode_slowdown == Approx(row.prediction->here.decode_slowdown));
  CHECK(back.prediction->end_to_end_slowdown_error == Approx(row.prediction->end_to_end_slowdown_error));
  CHECK(back.prediction->sentence == row.prediction->sentence);
  REQUIRE(back.prediction->elsewhere.size() == 1);
  CHECK(back.prediction->elsewhere[0].device == "l4");
  CHECK(lab_table({back}) == lab_table({row}));
}

TEST_CASE("compare and lab: predicted and measured slowdowns side by side", "[row_prediction][cli]") {
  const TempDir dir;
  const std::string environment = cached_roofs_environment(dir);

  const std::filesystem::path compare_json = dir.path() / "compare.json";
  const CommandResult compare = run_decodelab(
      with({"compare", "host_sync", "--json", compare_json.string(), "--predict-on", "a100-80gb,l4"}, small_run()),
      environment);
  INFO(compare.err);
  REQUIRE(compare.exit_code == 0);
  const nlohmann::json comparison = read_json(compare_json);
  check_side_by_side(comparison, "slowdown");
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
  check_side_by_side(rows[0], "slowdown");
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
  const std::string environment = cached_roofs_environment(dir);
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
