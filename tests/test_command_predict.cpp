// `decodelab predict` as a user meets it: every shipped scenario (sweeps point by point)
// on every device file and on this machine's measured roofs, JSON that carries the
// figures under their names, and bad input — an unknown device, a device file without
// or with broken fixed costs, --check priced for another device — as one line and exit 2
// with no output file left behind.
#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "lab/paths.h"
#include "lab/predict/predict_check.h"
#include "profiling/device_spec.h"
#include "profiling/measure/roof_measure.h"
#include "tests/support/seeded_calibration.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

using namespace decodelab;
using namespace decodelab::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;

namespace {

std::vector<std::filesystem::path> shipped_scenarios() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(scenarios_dir()))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Checks one prediction object: the figures a run reports, under their names, positive.
void check_prediction_json(const nlohmann::json& prediction) {
  CHECK(prediction.at("ttft_ms").get<double>() > 0);
  CHECK(prediction.at("total_ms").get<double>() > 0);
  CHECK(prediction.at("decode_tokens_per_s").get<double>() >= 0);
  CHECK(prediction.at("decode_wall_ms_per_step").get<double>() >= prediction.at("decode_busy_ms_per_step").get<double>());
  CHECK_FALSE(prediction.at("phases").empty());
  CHECK_FALSE(prediction.at("categories").empty());
}

}  // namespace

TEST_CASE("predict: every shipped scenario on every device file", "[command_predict]") {
  const TempDir dir;
  const std::filesystem::path json = dir.path() / "prediction.json";
  for (const std::filesystem::path& scenario : shipped_scenarios()) {
    for (const std::string& device : list_device_specs()) {
      INFO(scenario.filename().string() << " on " << device);
      const CommandResult result = run_decodelab({"predict", scenario.string(), "--device", device, "--json", json.string()});
      REQUIRE(result.exit_code == 0);
      CHECK_THAT(result.out, Contains("predicted"));
      const nlohmann::json parsed = read_json(json);
      // A sweep gives one entry per point, a scenario one object.
      const std::vector<nlohmann::json> entries =
          parsed.is_array() ? parsed.get<std::vector<nlohmann::json>>() : std::vector<nlohmann::json>{parsed};
      for (const nlohmann::json& entry : entries) {
        CHECK(entry.at("device").at("name") == device);
        if (entry.contains("buggy")) {
          check_prediction_json(entry.at("buggy"));
          check_prediction_json(entry.at("fixed"));
          CHECK(entry.at("decode_slowdown").get<double>() > 0);
          CHECK(entry.at("end_to_end_slowdown").get<double>() > 0);
        } else {
          check_prediction_json(entry.at("prediction"));
        }
      }
    }
  }
}

TEST_CASE("predict: a bug's table shows both sides and names the slowdowns", "[command_predict]") {
  const CommandResult result = run_decodelab({"predict", "host_sync", "--device", "h200"});
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("decode wall time per step") && Contains("decode busy time per step") &&
                             Contains("device-to-host reads per step") && Contains("predicted slowdown: decode ") &&
                             Contains(", end to end ") && Contains("fixed costs (published)"));
  // Words for people: the JSON names stay in --json.
  CHECK_THAT(result.out, !Contains("decode_slowdown") && !Contains("end_to_end_slowdown"));
  // Any combination of bugs is the engine's own op stream, priced like one bug.
  const CommandResult combined = run_decodelab({"predict", "host_sync", "--device", "a100-80gb", "--set",
                                                "bugs.no_kv_cache=true", "--set", "bugs.fp32_ops={scope: all}", "--set",
                                                "bugs.non_contiguous={mode: strided}", "--set",
                                                "bugs.sequential_generation=true"});
  REQUIRE(combined.exit_code == 0);
  CHECK_THAT(combined.out, Contains("no_kv_cache") && Contains("sequential_generation") && Contains("predicted slowdown"));
  const CommandResult row = run_decodelab({"predict", "fp32_ops", "--device", "l4", "--row", "lab", "--row-header"});
  REQUIRE(row.exit_code == 0);
  CHECK_THAT(row.out, Contains("| scenario | variant | device |") && Contains("| fp32_ops | lab | l4 |"));
}

TEST_CASE("predict --device measured reads this machine's calibrated roofs and fixed costs", "[command_predict]") {
  // prepare: a calibration of this machine at one thread, so nothing is measured here
  const TempDir cache;
  const std::string environment = seed_calibration(round_measured_spec("measured-test"), cache.path(), 1);

  // run
  const CommandResult result =
      run_decodelab({"predict", "no_kv_cache", "--device", "measured", "--threads", "1"}, environment);

  // verify
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("measured-test") && Contains("fixed costs (measured)") && Contains("cache (measured)"));
  CHECK_THAT(result.err, !Contains("measuring") && !Contains("calibrating"));
}

TEST_CASE("predict prices a scenario with the roofs of the threads it runs on", "[command_predict]") {
  // prepare: host_sync runs on one kernel thread (threads: 1); only that thread count is calibrated
  const TempDir cache;
  const std::string environment = seed_calibration(round_measured_spec("measured-one-thread"), cache.path(), 1);

  // run: no --threads, so the scenario's own count decides
  const CommandResult result = run_decodelab({"predict", "host_sync", "--device", "measured"}, environment);

  // verify: the one-thread roofs priced it; nothing was measured for every core
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("measured-one-thread"));
  CHECK_THAT(result.err, !Contains("measuring") && !Contains("calibrating"));
}

TEST_CASE("predict: bad input is one line, exit 2, nothing written", "[command_predict]") {
  const TempDir dir;
  const std::filesystem::path json = dir.path() / "out.json";
  auto expect_input_error = [&](const std::vector<std::string>& arguments, const std::string& words) {
    std::vector<std::string> with_json = arguments;
    with_json.insert(with_json.end(), {"--json", json.string()});
    const CommandResult result = run_decodelab(with_json);
    INFO(result.err);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Contains(words));
    CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
    CHECK_FALSE(std::filesystem::exists(json));
  };
  expect_input_error({"predict", "host_sync", "--device", "h300"}, "--device: h300: unknown device (did you mean 'h200'?)");
  expect_input_error({"predict", "host_sync", "--device", "h200", "--check"}, "--check measures on this machine");
  expect_input_error({"predict", "quickstart", "--device", "h200", "--row", "x"}, "needs a bug");
  expect_input_error({"predict", "host_sync", "--device", "h200", "--set", "workload.batch_size=0"}, "batch_size");

  const std::filesystem::path no_costs = dir.write("bare.yaml",
                                                         "name: bare\nsource: s\nmemory_bandwidth_tb_s: 1\n"
                                                         "peak_tflops: {fp32: 10}\n");
  expect_input_error({"predict", "host_sync", "--device", no_costs.string()}, "fixed_costs");
  const std::filesystem::path broken = dir.write("broken.yaml",
                                                       "name: broken\nsource: s\nmemory_bandwidth_tb_s: 1\n"
                                                       "fixed_costs:\n  source: s\n  host_launch_us: 1\n"
                                                       "  op_overhead_us: fast\n  sync_round_trip_us: 5\n");
  expect_input_error({"predict", "host_sync", "--device", broken.string()}, "broken.yaml:7");
}

TEST_CASE("predict --check rows: both slowdowns, the cores' distance and the machine during the run", "[command_predict]") {
  PredictionCheck check;
  check.scenario = "no_kv_cache";
  check.device = "measured-vm";
  check.repeats = 6;
  check.decode_slowdown = CheckedFigure{"decode_slowdown", "x", 3.35, 2.44, std::nullopt};
  check.end_to_end_slowdown = CheckedFigure{"end_to_end_slowdown", "x", 3.03, 2.34, std::nullopt};
  const auto cells = [](const std::string& line) { return std::count(line.begin(), line.end(), '|'); };
  const std::string header = prediction_check_row_header();
  const std::string header_line = header.substr(0, header.find('\n'));
  CHECK_THAT(header_line, Contains("| cores |"));

  SECTION("far cores, roofs measured with near ones") {
    check.core_round_trip_ns = 426;
    check.roofs_core_round_trip_ns = 59;
    const std::string row = prediction_check_row(check, "lab-tiny");
    CHECK(row == "| no_kv_cache | lab-tiny | 3.35x | 2.44x | +37% | 3.03x | 2.34x | +29% | far 426 ns | quiet |\n");
    CHECK(cells(row) == cells(header_line));
    CHECK_THAT(prediction_check_table(check),
               Contains("cores: far 426 ns round trip during the run, near 59 ns when the roofs were measured"));
    const nlohmann::json json = prediction_check_json(check);
    CHECK(json.at("core_round_trip_ns") == 426);
    CHECK(json.at("roofs_core_round_trip_ns") == 59);
  }
  SECTION("not probed (one kernel thread): a dash, and no cores line") {
    const std::string row = prediction_check_row(check, "");
    CHECK_THAT(row, Contains("| as shipped |"));
    CHECK_THAT(row, EndsWith("| - | quiet |\n"));
    CHECK(cells(row) == cells(header_line));
    CHECK_THAT(prediction_check_table(check), !Contains("cores:"));
    CHECK_FALSE(prediction_check_json(check).contains("core_round_trip_ns"));
  }
  SECTION("the measured slowdowns' intervals, a busy machine and noisy roofs") {
    const auto interval = [](double median, double relative, bool noisy) {
      Estimate estimate;
      estimate.median = median;
      estimate.low = median * (1 - relative);
      estimate.high = median * (1 + relative);
      estimate.samples = 6;
      estimate.noisy = noisy;
      return estimate;
    };
    check.decode_slowdown->measured_interval = interval(3.35, 0.04, false);
    check.end_to_end_slowdown->measured_interval = interval(3.03, 0.31, true);
    check.machine_contended = true;
    const std::string quiet_roofs = prediction_check_row(check, "x");
    // The interval as compare prints it (format_interval).
    CHECK_THAT(quiet_roofs, Contains("| 3.35x ±4.0% | 2.44x | +37% | 3.03x ±31% noisy | 2.34x | +29% | - | busy |"));
    CHECK(cells(quiet_roofs) == cells(header_line));
    check.roofs_noisy = true;
    check.roofs_spread = 0.5;
    CHECK_THAT(prediction_check_row(check, "x"), EndsWith("| busy, roofs noisy |\n"));
    const std::string table = prediction_check_table(check);
    CHECK_THAT(table, Contains("machine: busy before the run"));
    CHECK_THAT(table, Contains("roofs measured on a noisy or contended machine (spread 50%)"));
    CHECK_THAT(table, Contains("3.03x ±31% noisy"));
    check.machine_contended = false;
    CHECK_THAT(prediction_check_row(check, "x"), EndsWith("| roofs noisy |\n"));
    const nlohmann::json json = prediction_check_json(check);
    CHECK(json.at("machine_contended") == false);
    CHECK(json.at("roofs_noisy") == true);
    CHECK(json.at("roofs_spread") == Approx(0.5));
    CHECK(json.at("end_to_end_slowdown").at("measured_relative_ci") == Approx(0.31));
    CHECK(json.at("end_to_end_slowdown").at("measured_low") == Approx(3.03 * 0.69));
    CHECK(json.at("end_to_end_slowdown").at("measured_high") == Approx(3.03 * 1.31));
    CHECK(json.at("end_to_end_slowdown").at("measured_noisy") == true);
  }
}
