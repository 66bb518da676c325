// `decodelab calibrate` and the calibration file: one per host and thread count, written once
// and shown in words, replaced whole by the next calibration, read by the commands (never
// measured again), flagged and not used when it describes another machine — a command then
// calibrates first, saying so — and a corrupt file is one line naming the file and the key,
// exit 2. The calibrations measured here are quick (small probes, seconds).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend.h"
#include "engine/cpu/kernel_variant.h"
#include "engine/base/errors.h"
#include "profiling/measure/calibration.h"
#include "profiling/measure/default_roofs.h"
#include "tests/support/seeded_calibration.h"
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

// The calibration file commands at `threads` read with DECODELAB_CACHE_DIR at `cache`.
std::filesystem::path calibration_file_in(const std::filesystem::path& cache, int threads = 1) {
  const decodelab::testing::ScopedEnv here("DECODELAB_CACHE_DIR", cache.c_str());
  return calibration_path(threads);
}

std::string cache_environment(const std::filesystem::path& cache) { return "DECODELAB_CACHE_DIR='" + cache.string() + "' "; }

// A calibration of this machine at `threads` kernel threads with round figures (nothing
// measured), named `name` so that a command's output shows whether it was used.
Calibration round_calibration(const std::string& name, int threads = 1) {
  return decodelab::testing::calibration_holding(decodelab::testing::round_measured_spec(name), threads);
}

// The names of the files in `folder`.
std::vector<std::string> file_names(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.push_back(entry.path().filename().string());
  return names;
}

// What default_device_spec says on stderr (it has no progress stream here) while `call` runs.
template <typename Call>
std::string stderr_of(Call call) {
  std::ostringstream text;
  std::streambuf* const real_stderr = std::cerr.rdbuf(text.rdbuf());
  try {
    call();
  } catch (...) {
    std::cerr.rdbuf(real_stderr);
    throw;
  }
  std::cerr.rdbuf(real_stderr);
  return text.str();
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
  CHECK_THAT(file.filename().string(), Contains("-1threads.json"));  // one file per thread count
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

  const CommandResult shown = run_decodelab({"calibrate", "--show", "--threads", "1"}, cache_environment(cache.path()));
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

TEST_CASE("commands read the calibration of their thread count, nothing measured, nothing said", "[calibration][cli]") {
  const TempDir cache;
  const std::filesystem::path one = calibration_file_in(cache.path(), 1);
  const std::filesystem::path two = calibration_file_in(cache.path(), 2);
  save_calibration(round_calibration("calibrated-one", 1), one);
  save_calibration(round_calibration("calibrated-two", 2), two);
  const std::string one_before = read_text_file(one);

  const CommandResult predicted =
      run_decodelab({"predict", "no_kv_cache", "--device", "measured", "--threads", "1"}, cache_environment(cache.path()));
  INFO(predicted.err);
  REQUIRE(predicted.exit_code == 0);
  CHECK_THAT(predicted.out, Contains("calibrated-one") && !Contains("calibrated-two"));
  CHECK_THAT(predicted.err, !Contains("calibrating") && !Contains("measuring"));

  const CommandResult two_threads =
      run_decodelab({"predict", "no_kv_cache", "--device", "measured", "--threads", "2"}, cache_environment(cache.path()));
  INFO(two_threads.err);
  REQUIRE(two_threads.exit_code == 0);
  CHECK_THAT(two_threads.out, Contains("calibrated-two") && !Contains("calibrated-one"));
  CHECK_THAT(two_threads.err, !Contains("calibrating"));

  CHECK(read_text_file(one) == one_before);
  CHECK(file_names(cache.path()).size() == 2);  // nothing written beside them
}

TEST_CASE("another machine's calibration is flagged by --show and replaced, said, by a command's own",
          "[calibration][cli]") {
  const TempDir cache;
  const std::filesystem::path file = calibration_file_in(cache.path());
  Calibration foreign = round_calibration("foreign-calibration");
  foreign.machine.cpu_model = "Imaginary CPU 9000";
  foreign.spec.machine = foreign.machine;
  save_calibration(foreign, file);

  const CommandResult shown = run_decodelab({"calibrate", "--show", "--threads", "1"}, cache_environment(cache.path()));
  REQUIRE(shown.exit_code == 0);
  CHECK_THAT(shown.out, Contains("NOT THIS MACHINE") && Contains("CPU model") && Contains("Imaginary CPU 9000") &&
                            Contains(this_machine(1).cpu_model));

  // A command on this machine at one thread: says why the file is not used, calibrates first
  // (quick probes here), and this host's file at one thread is this machine's afterwards.
  const decodelab::testing::ScopedEnv here("DECODELAB_CACHE_DIR", cache.path().c_str());
  const std::unique_ptr<Backend> backend = make_backend(BackendKind::Cpu, BackendOptions::with_threads(1));
  DeviceSpec used;
  const std::string said = stderr_of([&] { used = default_device_spec(*backend, 1, nullptr, quick_calibration_options()); });
  CHECK_THAT(said, Contains("not calibrated at 1 kernel thread") && Contains("describes another machine") &&
                       Contains("CPU model") && Contains("Imaginary CPU 9000") && Contains(file.string()) &&
                       Contains("calibrating it now") && Contains("`decodelab calibrate --threads 1`"));
  const Calibration replaced = load_calibration(file);
  CHECK(replaced.machine.cpu_model == this_machine(1).cpu_model);
  CHECK(replaced.spec == used);  // the command priced with what the file now holds
  CHECK(calibration_differences(replaced, *backend, 1).empty());
  // The backend's own kernels, recorded as not timed against the others.
  CHECK(replaced.kernel_variant == backend->kernel_variant());
  CHECK_THAT(replaced.kernel_variants.at("reason").get<std::string>(), Contains("not timed"));
}

TEST_CASE("an uncalibrated machine is calibrated first, once, into the file of the command's thread count",
          "[calibration]") {
  const TempDir cache;
  const decodelab::testing::ScopedEnv here("DECODELAB_CACHE_DIR", cache.path().c_str());
  const std::filesystem::path one = calibration_path(1);
  const std::filesystem::path two = calibration_path(2);
  // A calibration at two threads: not this command's (one thread), so neither used nor touched.
  save_calibration(round_calibration("calibrated-two", 2), two);
  const std::string two_before = read_text_file(two);
  const std::unique_ptr<Backend> backend = make_backend(BackendKind::Cpu, BackendOptions::with_threads(1));

  DeviceSpec first;
  const std::string said = stderr_of([&] { first = default_device_spec(*backend, 1, nullptr, quick_calibration_options()); });
  CHECK_THAT(said, Contains("this machine is not calibrated at 1 kernel thread (no calibration file (" + one.string() +
                            "))") && Contains("calibrating it now") && Contains("calibrated in") && Contains("written to " + one.string()));
  REQUIRE(std::filesystem::exists(one));
  CHECK(first.name != "calibrated-two");
  CHECK(load_calibration(one).machine.threads == 1);
  CHECK(load_calibration(one).spec == first);
  CHECK(read_text_file(two) == two_before);

  // Read again: nothing measured (no line said), the file as it was.
  const std::string one_before = read_text_file(one);
  DeviceSpec second;
  CHECK(stderr_of([&] { second = default_device_spec(*backend, 1, nullptr, quick_calibration_options()); }).empty());
  CHECK(second == first);
  CHECK(read_text_file(one) == one_before);
  // Only calibration files: no roof cache beside them.
  for (const std::string& name : file_names(cache.path())) CHECK(name.rfind("calibration-", 0) == 0);
}

TEST_CASE("a point above its roof is reported by run and compare, and the calibration is not rewritten",
          "[calibration][cli]") {
  const TempDir cache;
  // Roofs no real machine is as slow as, and a cache too small for any pass: every point beats
  // its roof, the roofs suspect.
  DeviceSpec slow = decodelab::testing::round_measured_spec("slow-roofs");
  slow.measured->bandwidth = 1e6;
  slow.measured->fp32_flops = slow.measured->fp16_flops = slow.measured->bf16_flops = 1e6;
  slow.measured_cache->bytes = 1024;
  const std::string environment = decodelab::testing::seed_calibration(slow, cache.path(), 1);
  const std::filesystem::path file = calibration_file_in(cache.path());
  const std::string before = read_text_file(file);
  const std::vector<std::string> small = {"--threads", "1", "--set", "model=lab-tiny", "--set", "run={warmup: 0, repeats: 2}",
                                          "--set", "workload={requests: 1, batch_size: 1, prompt_tokens: 4, new_tokens: 4}"};

  std::vector<std::string> run = {"run", "quickstart", "--backend", "cpu", "--trace", (cache.path() / "t.json").string()};
  run.insert(run.end(), small.begin(), small.end());
  const CommandResult ran = run_decodelab(run, environment);
  INFO(ran.err);
  REQUIRE(ran.exit_code == 0);
  CHECK_THAT(ran.err, Contains("of its roof") && Contains("roof suspect") && Contains("decodelab calibrate") &&
                          !Contains("calibrating") && !Contains("measuring"));
  CHECK_THAT(ran.out, Contains("note: ") && Contains("roof suspect"));

  std::vector<std::string> compare = {"compare", "no_kv_cache", "--backend", "cpu"};
  compare.insert(compare.end(), small.begin(), small.end());
  const CommandResult compared = run_decodelab(compare, environment);
  INFO(compared.err);
  REQUIRE(compared.exit_code == 0);
  CHECK_THAT(compared.out, Contains("note (fixed): ") && Contains("note (buggy): ") && Contains("roof suspect"));
  CHECK_THAT(compared.err, Contains("roof suspect") && !Contains("calibrating") && !Contains("measuring"));

  CHECK(read_text_file(file) == before);
  for (const std::string& name : file_names(cache.path())) CHECK(name.rfind("roofs-", 0) != 0);
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
  const CommandResult shown = run_decodelab({"calibrate", "--show", "--threads", "1"}, cache_environment(cache.path()));
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
  CHECK(calibrated_cpu_kernels(1).empty());  // no calibration
  Calibration calibration = round_calibration("chosen");
  calibration.kernel_variant = "portable";
  save_calibration(calibration, file);
  CHECK(load_calibration(file).kernel_variant == "portable");
  CHECK(calibrated_cpu_kernels(1) == "portable");
  CHECK(calibrated_cpu_kernels(2).empty());  // another thread count's calibration
  calibration.machine.hostname += "-elsewhere";
  save_calibration(calibration, file);
  CHECK(calibrated_cpu_kernels(1).empty());  // another host's choice is not this one's
  std::ofstream(file) << "{ not json";
  CHECK(calibrated_cpu_kernels(1).empty());  // the roof lookup says what is wrong with it
}
