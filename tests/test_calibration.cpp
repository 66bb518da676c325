// `decodelab calibrate` and the calibration file: written once and shown in words, replaced
// whole by the next calibration, read by the commands (never measured again), flagged and
// not used when it describes another machine, and a corrupt file is one line naming the file
// and the key, exit 2. The calibrations measured here are --quick (small probes, seconds).
#include <catch2/catch.hpp>

#include <fstream>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend.h"
#include "engine/cpu/kernel_variant.h"
#include "engine/base/errors.h"
#include "profiling/measure/calibration.h"
#include "profiling/measure/roof_cache.h"
#include "tests/support/cached_roofs.h"
#include "tests/support/cli_runner.h"
#include "tests/support/scoped_env.h"
#include "tests/support/temp_dir.h"

using namespace decodelab;
using decodelab::testing::CommandResult;
using decodelab::testing::read_json;
using decodelab::testing::read_text_file;
using decodelab::testing::run_decodelab;
using decodelab::testing::TempDir;
using Catch::Matchers::Contains;

namespace {

// The calibration file commands read with DECODELAB_CACHE_DIR at `cache`.
std::filesystem::path calibration_file_in(const std::filesystem::path& cache) {
  const decodelab::testing::ScopedEnv here("DECODELAB_CACHE_DIR", cache.c_str());
  return default_calibration_path();
}

std::string cache_environment(const std::filesystem::path& cache) { return "DECODELAB_CACHE_DIR='" + cache.string() + "' "; }

// A calibration of this machine at one kernel thread with round figures (nothing measured),
// named `name` so that a command's output shows whether it was used.
Calibration round_calibration(const std::string& name) {
  Calibration calibration;
  calibration.machine = this_machine(1);
  calibration.cpu_flags = cpu_flags_that_matter();
  calibration.device = make_backend(BackendKind::Cpu, BackendOptions::with_threads(1))->device_description();
  calibration.measured_at = 1'700'000'000;
  calibration.decodelab_version = "test";
  calibration.measuring_seconds = 1;
  calibration.machine_check = "quiet (test)";
  calibration.spec = decodelab::testing::round_measured_spec(name);
  calibration.spec.machine = calibration.machine;
  calibration.spec.measured->measured_at = calibration.measured_at;
  return calibration;
}

bool one_line(const std::string& text) { return !text.empty() && text.find('\n') == text.size() - 1; }

}  // namespace

TEST_CASE("calibrate writes one versioned file of this machine that --show reads back", "[calibration][cli]") {
  const TempDir cache;
  const std::filesystem::path file = calibration_file_in(cache.path());

  const CommandResult calibrated = run_decodelab({"calibrate", "--quick", "--threads", "1"}, cache_environment(cache.path()));

  INFO(calibrated.err);
  REQUIRE(calibrated.exit_code == 0);
  CHECK_THAT(calibrated.err, Contains("calibrating: step 1,"));  // progress on stderr, step by step
  CHECK_THAT(calibrated.out, Contains("written to " + file.string()));
  REQUIRE(std::filesystem::exists(file));
  const nlohmann::json json = read_json(file);
  CHECK(json.at("format_version") == kCalibrationFormat);
  const MachineIdentity here = this_machine(1);
  CHECK(json.at("machine").at("hostname") == here.hostname);
  CHECK(json.at("machine").at("cpu_model") == here.cpu_model);
  CHECK(json.at("machine").at("threads") == 1);
  CHECK(json.at("machine").at("cpu_flags").get<std::vector<std::string>>() == cpu_flags_that_matter());
  // The kernels calibrate chose by timing them, the roofs measured with them.
  const std::string kernels = json.at("machine").at("kernel_variant").get<std::string>();
  BackendOptions chosen = BackendOptions::with_threads(1);
  chosen.cpu_kernels = kernels;
  CHECK(json.at("machine").at("device") == make_backend(BackendKind::Cpu, chosen)->device_description());
  make_backend(BackendKind::Cpu, BackendOptions::with_threads(1));  // the widest again
  if (!cpu::kernel_variant_from_environment()) {
    CHECK_FALSE(kernels.empty());
    CHECK(json.at("kernel_variants").at("timings").size() ==
          make_backend(BackendKind::Cpu, BackendOptions::with_threads(1))->kernel_variants().size());
    CHECK_THAT(calibrated.err, Contains("CPU kernels: "));
  }
  CHECK(json.at("roofs").at("measured").at("bandwidth_bytes_per_s").get<double>() > 0);
  CHECK(json.at("roofs").at("measured").at("flops_per_s").at("fp32").get<double>() > 0);
  CHECK(json.at("roofs").at("measured_fixed_costs").at("sync_round_trip_s").get<double>() > 0);
  const Calibration loaded = load_calibration(file);
  CHECK(loaded.measured_at == json.at("roofs").at("measured").at("measured_at").get<int64_t>());

  const CommandResult shown = run_decodelab({"calibrate", "--show"}, cache_environment(cache.path()));
  INFO(shown.err);
  REQUIRE(shown.exit_code == 0);
  CHECK_THAT(shown.out, Contains(file.string()) && Contains("format " + std::to_string(kCalibrationFormat)) &&
                            Contains(here.hostname + ": " + here.cpu_model) && Contains("1 kernel thread") &&
                            Contains(loaded.device) && Contains("measured figures:"));
  CHECK_THAT(shown.out, !Contains("NOT THIS MACHINE"));
}

TEST_CASE("a second calibrate replaces the file whole: nothing of the first is kept", "[calibration][cli]") {
  const TempDir cache;
  const std::filesystem::path file = calibration_file_in(cache.path());
  REQUIRE(run_decodelab({"calibrate", "--quick", "--threads", "1"}, cache_environment(cache.path())).exit_code == 0);
  // The first made better than any measurement and given a figure the second does not measure:
  // a merge would keep both.
  nlohmann::json first = read_json(file);
  nlohmann::json& measured = first["roofs"]["measured"];
  measured["bandwidth_bytes_per_s"] = 1e15;
  measured["efficiency_table"].push_back({{"category", "matmul"}, {"precision", "fp16"}, {"rows_from", 999}, {"size_log2", 3},
                                          {"flops", 1}, {"bytes", 1}, {"timed", "never"}});
  first["measured_at"] = 1000;
  cache.write(file.filename().string(), first.dump(2));

  const CommandResult again = run_decodelab({"calibrate", "--quick", "--threads", "1"}, cache_environment(cache.path()));

  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.out, Contains("replacing"));
  const Calibration second = load_calibration(file);
  CHECK(second.measured_at > 1000);
  CHECK(second.spec.measured->bandwidth < 1e15);
  for (const Efficiency& row : second.spec.measured->efficiency) CHECK(row.rows_from != 999);
}

TEST_CASE("commands read the calibration, and one of another machine is flagged and not used", "[calibration][cli]") {
  const TempDir cache;
  const std::filesystem::path file = calibration_file_in(cache.path());
  // The lazily measured roof cache, so that nothing is measured whichever is used.
  const std::string environment =
      decodelab::testing::cache_roofs(decodelab::testing::round_measured_spec("roof-cache-roofs"), cache.path(), 1);

  SECTION("another machine's calibration: --show flags it, predict says why it is not used") {
    Calibration foreign = round_calibration("foreign-calibration");
    foreign.machine.cpu_model = "Imaginary CPU 9000";
    foreign.spec.machine = foreign.machine;
    save_calibration(foreign, file);

    const CommandResult shown = run_decodelab({"calibrate", "--show"}, environment);
    REQUIRE(shown.exit_code == 0);
    CHECK_THAT(shown.out, Contains("NOT THIS MACHINE") && Contains("CPU model") && Contains("Imaginary CPU 9000") &&
                              Contains(this_machine(1).cpu_model));

    const CommandResult predicted =
        run_decodelab({"predict", "no_kv_cache", "--device", "measured", "--threads", "1"}, environment);
    INFO(predicted.err);
    REQUIRE(predicted.exit_code == 0);
    CHECK_THAT(predicted.out, Contains("roof-cache-roofs") && !Contains("foreign-calibration"));
    CHECK_THAT(predicted.err, Contains("not using the calibration") && Contains("describes another machine") &&
                                  Contains("CPU model") && Contains(file.string()));
  }

  SECTION("this machine's calibration at the run's threads: read, nothing measured, nothing said") {
    save_calibration(round_calibration("calibrated-roofs"), file);

    const CommandResult predicted =
        run_decodelab({"predict", "no_kv_cache", "--device", "measured", "--threads", "1"}, environment);
    INFO(predicted.err);
    REQUIRE(predicted.exit_code == 0);
    CHECK_THAT(predicted.out, Contains("calibrated-roofs") && !Contains("roof-cache-roofs"));
    CHECK_THAT(predicted.err, !Contains("measuring") && !Contains("not using"));

    // Another thread count is another calibration: said, and the roof cache's used.
    const CommandResult two_threads =
        run_decodelab({"predict", "no_kv_cache", "--device", "measured", "--threads", "2"},
                      decodelab::testing::cache_roofs(decodelab::testing::round_measured_spec("roof-cache-two"),
                                                      cache.path(), 2));
    REQUIRE(two_threads.exit_code == 0);
    CHECK_THAT(two_threads.out, Contains("roof-cache-two"));
    CHECK_THAT(two_threads.err, Contains("not using the calibration") && Contains("threads"));
  }
}

TEST_CASE("a corrupt calibration file is one line naming the file and the key, exit 2", "[calibration][cli]") {
  const TempDir cache;
  const std::filesystem::path file = calibration_file_in(cache.path());
  const nlohmann::json good = to_json(round_calibration("calibrated-roofs"));

  struct Corruption {
    const char* what;
    std::string text;
    std::string key;  // what the message must name
  };
  nlohmann::json string_bandwidth = good;
  string_bandwidth["roofs"]["measured"]["bandwidth_bytes_per_s"] = "fast";
  nlohmann::json no_model = good;
  no_model["machine"].erase("cpu_model");
  nlohmann::json newer = good;
  newer["format_version"] = kCalibrationFormat + 1;
  nlohmann::json older = good;  // a format-1 file: before the efficiency table
  older["format_version"] = 1;
  nlohmann::json flag_number = good;
  flag_number["machine"]["cpu_flags"] = {"avx2", 7};
  const std::vector<Corruption> corruptions = {
      {"not JSON", good.dump().substr(0, 40), "not a JSON calibration file"},
      {"a rate as text", string_bandwidth.dump(), "roofs.measured.bandwidth_bytes_per_s: expected a number"},
      {"a missing key", no_model.dump(), "machine.cpu_model: missing"},
      {"a newer format", newer.dump(), "format_version: format " + std::to_string(kCalibrationFormat + 1) + " is a newer decodelab's"},
      {"an older format", older.dump(), "format_version: out of date: format 1, this decodelab reads format " +
                                            std::to_string(kCalibrationFormat) + " (what the figures mean has changed); run `decodelab calibrate`"},
      {"a flag as a number", flag_number.dump(), "machine.cpu_flags[1]: expected a string"},
  };
  for (const Corruption& corruption : corruptions) {
    DYNAMIC_SECTION(corruption.what) {
      const std::filesystem::path named = cache.write("named.json", corruption.text);
      const CommandResult shown = run_decodelab({"calibrate", "--show", "--json", named.string()});
      INFO(shown.err);
      CHECK(shown.exit_code == 2);
      CHECK(one_line(shown.err));
      CHECK_THAT(shown.err, Contains(named.string()) && Contains(corruption.key));
      CHECK_THROWS_AS(parse_calibration(corruption.text, "x.json"), InputError);
    }
  }

  SECTION("a command reading the calibration stops on it too, rather than measuring") {
    cache.write(file.filename().string(), string_bandwidth.dump());
    const CommandResult predicted = run_decodelab({"predict", "no_kv_cache", "--device", "measured", "--threads", "1"},
                                                  cache_environment(cache.path()));
    INFO(predicted.err);
    CHECK(predicted.exit_code == 2);
    CHECK_THAT(predicted.err, Contains(file.string()) && Contains("bandwidth_bytes_per_s") && !Contains("measuring"));
  }

  SECTION("calibrate replaces a corrupt file") {
    cache.write(file.filename().string(), "{ broken");
    const CommandResult calibrated =
        run_decodelab({"calibrate", "--quick", "--threads", "1"}, cache_environment(cache.path()));
    INFO(calibrated.err);
    REQUIRE(calibrated.exit_code == 0);
    CHECK_THAT(calibrated.out, Contains("replacing an unreadable file"));
    CHECK(load_calibration(file).machine.threads == 1);
  }
}

TEST_CASE("calibrate --show of no calibration says how to make one, exit 2", "[calibration][cli]") {
  const TempDir cache;
  const CommandResult shown = run_decodelab({"calibrate", "--show"}, cache_environment(cache.path()));
  CHECK(shown.exit_code == 2);
  CHECK_THAT(shown.err, Contains("not calibrated") && Contains("decodelab calibrate") &&
                            Contains(calibration_file_in(cache.path()).string()));
}

TEST_CASE("calibration differences name each field that differs", "[calibration]") {
  const Calibration calibration = round_calibration("x");
  CHECK(calibration_differences(calibration, calibration.machine, calibration.cpu_flags, calibration.device).empty());
  MachineIdentity other = calibration.machine;
  other.hostname = "elsewhere";
  other.threads = 7;
  const std::vector<std::string> differences =
      calibration_differences(calibration, other, {"avx2", "made_up_flag"}, calibration.device);
  REQUIRE(differences.size() == 3);
  CHECK_THAT(differences[0], Contains("hostname") && Contains("elsewhere"));
  CHECK_THAT(differences[1], Contains("threads") && Contains("7"));
  CHECK_THAT(differences[2], Contains("CPU flags") && Contains("made_up_flag"));
  // The same machine under another kernel build or weight stream.
  CHECK(calibration_differences(calibration, calibration.machine, calibration.cpu_flags, "another device").size() == 1);
}

TEST_CASE("the kernel variant a calibration chose is what commands' CPU backends run, on this host only", "[calibration]") {
  const TempDir cache;
  const std::filesystem::path file = calibration_file_in(cache.path());
  const decodelab::testing::ScopedEnv here("DECODELAB_CACHE_DIR", cache.path().c_str());
  CHECK(calibrated_cpu_kernels().empty());  // no calibration
  Calibration calibration = round_calibration("chosen");
  calibration.kernel_variant = "portable";
  save_calibration(calibration, file);
  CHECK(load_calibration(file).kernel_variant == "portable");
  CHECK(calibrated_cpu_kernels() == "portable");
  calibration.machine.hostname += "-elsewhere";
  save_calibration(calibration, file);
  CHECK(calibrated_cpu_kernels().empty());  // another host's choice is not this one's
  std::ofstream(file) << "{ not json";
  CHECK(calibrated_cpu_kernels().empty());  // the roof lookup says what is wrong with it
}
