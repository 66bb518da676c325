// Nothing lost, nothing waited for: `decodelab sweep` and `decodelab lab` run as child
// processes and receive real signals. The first SIGINT/SIGTERM abandons the repeat in
// progress and ends them within 2 s with exit 128 + signal and every completed row in the
// JSON ("complete": false) — the lab keeps the finished pairs of the bug it was comparing,
// as a row marked "interrupted"; --resume then reuses exactly the complete rows and runs
// the rest; a second signal ends the process at once and still leaves every finished row.
// Runs are slowed by the emulated dispatch cost (host_overhead_us), so that a signal sent
// after the first row lands mid-sweep.
#include <signal.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "support/seeded_calibration.h"
#include "support/cli_runner.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

using namespace decodelab::testing;
using Catch::Matchers::Contains;

namespace {

const char* const kSweepScenario =
    "model: lab-tiny\n"
    "dtype: fp32\n"
    "backend: cpu\n"
    "workload:\n"
    "  requests: 2\n"
    "  batch_size: 2\n"
    "  prompt_tokens: 4\n"
    "  new_tokens: [6, 7, 8, 9, 10, 11]\n"
    "  host_overhead_us: 200\n"
    "run: {warmup: 0, repeats: 2}\n";
constexpr size_t kSweepPoints = 6;

// The results file once it exists and parses with at least one row (null otherwise).
nlohmann::json rows_so_far(const std::filesystem::path& file) {
  const nlohmann::json document = nlohmann::json::parse(read_text_file(file), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.contains("rows") || document["rows"].empty()) return nullptr;
  return document;
}

// The signals are the subject, not the roofs: the commands read round calibrations (one
// thread and every core) instead of calibrating, which under ASan on a busy machine can take
// longer than the wait for the first row.
std::string calibrated_cache_in(const TempDir& dir) {
  const std::filesystem::path cache = dir.path() / "roofs";
  for (int threads : {1, 0}) seed_calibration(round_measured_spec("interrupt-test"), cache, threads);
  return cache.string();
}

}  // namespace

TEST_CASE("sweep: SIGINT keeps the completed rows and --resume finishes the rest", "[interrupt][cli]") {
  const TempDir dir;
  const ScopedEnv roofs("DECODELAB_CACHE_DIR", calibrated_cache_in(dir).c_str());
  const auto scenario = dir.write("sweep.yaml", kSweepScenario).string();
  const auto json = dir.path() / "sweep.json";

  BackgroundDecodelab sweep({"sweep", scenario, "--threads", "1", "--json", json.string()});
  REQUIRE(wait_until([&] { return !rows_so_far(json).is_null(); }, 60.0));
  sweep.send(SIGINT);
  const CommandResult interrupted = sweep.wait();
  CHECK(interrupted.exit_code == 130);
  CHECK_THAT(interrupted.err, Contains("stopping now") && Contains("--resume"));

  const nlohmann::json partial = read_json(json);
  CHECK(partial["command"] == "sweep");
  CHECK(partial["complete"] == false);
  const size_t done = partial["rows"].size();
  CHECK(done >= 1);
  CHECK(done < kSweepPoints);
  // The table printed so far has a line per completed row (two header lines, one legend line).
  CHECK(static_cast<size_t>(std::count(interrupted.out.begin(), interrupted.out.end(), '\n')) == done + 3);
  for (size_t i = 0; i < done; ++i) CHECK(partial["rows"][i]["swept"]["new_tokens"] == std::to_string(6 + i));

  const CommandResult resumed = run_decodelab({"sweep", scenario, "--threads", "1", "--json", json.string(), "--resume"});
  REQUIRE(resumed.exit_code == 0);
  CHECK_THAT(resumed.err, Contains(std::to_string(done) + " of 6 rows reused"));
  const nlohmann::json complete = read_json(json);
  REQUIRE(complete.is_array());  // a finished run is the plain list of rows
  REQUIRE(complete.size() == kSweepPoints);
  // Reused rows are the interrupted run's own (timings included), not reruns.
  for (size_t i = 0; i < done; ++i) CHECK(complete[i] == partial["rows"][i]);
  for (size_t i = 0; i < kSweepPoints; ++i) {
    CHECK(complete[i]["swept"]["new_tokens"] == std::to_string(6 + i));
    CHECK(complete[i]["workload"]["new_tokens"] == 6 + i);
  }

  // Resuming a complete file runs nothing and leaves it as it was.
  const CommandResult again = run_decodelab({"sweep", scenario, "--json", json.string(), "--resume", "--quiet"});
  CHECK(again.exit_code == 0);
  CHECK(read_json(json) == complete);
}

TEST_CASE("sweep: a second signal ends it at once and the file stays valid and partial", "[interrupt][cli]") {
  const TempDir dir;
  const ScopedEnv roofs("DECODELAB_CACHE_DIR", calibrated_cache_in(dir).c_str());
  const auto scenario = dir.write("sweep.yaml", kSweepScenario).string();
  const auto json = dir.path() / "sweep.json";
  BackgroundDecodelab sweep({"sweep", scenario, "--threads", "1", "--json", json.string()});
  REQUIRE(wait_until([&] { return !rows_so_far(json).is_null(); }, 60.0));
  sweep.send(SIGINT);
  // The second only once the first was handled (two pending signals of a kind merge).
  REQUIRE(wait_until([&] { return sweep.stderr_so_far().find("stopping") != std::string::npos; }, 10.0));
  sweep.send(SIGINT);
  const CommandResult killed = sweep.wait();
  // Ended at once: by the signal, or by the command itself when it was done writing first.
  CHECK((killed.signal == SIGINT || killed.exit_code == 130));
  const nlohmann::json partial = read_json(json);
  CHECK(partial["complete"] == false);
  CHECK(partial["rows"].size() >= 1);
  CHECK(partial["rows"].size() < kSweepPoints);
}

TEST_CASE("lab: SIGTERM keeps the finished bugs and --resume runs only the others", "[interrupt][cli]") {
  const TempDir dir;
  const ScopedEnv roofs("DECODELAB_CACHE_DIR", calibrated_cache_in(dir).c_str());
  const auto json = dir.path() / "lab.json";
  const std::vector<std::string> arguments = {
      "lab",  "--only", "host_sync", "--only", "no_kv_cache", "--only", "sequential_generation", "--backend", "cpu",
      "--threads", "1", "--set", "model=lab-tiny", "--set", "run={warmup: 0, repeats: 1}", "--set",
      "workload={requests: 2, batch_size: 2, prompt_tokens: 4, new_tokens: 12, host_overhead_us: 200}", "--json",
      json.string()};
  BackgroundDecodelab lab(arguments);
  REQUIRE(wait_until([&] { return !rows_so_far(json).is_null(); }, 120.0));
  lab.send(SIGTERM);
  const CommandResult interrupted = lab.wait();
  CHECK(interrupted.exit_code == 143);
  const nlohmann::json partial = read_json(json);
  CHECK(partial["command"] == "lab");
  CHECK(partial["complete"] == false);
  const size_t done = partial["rows"].size();
  CHECK(done >= 1);
  CHECK(done <= 3);
  for (const char* key : {"bug", "bugs", "fixed_tokens_per_s", "buggy_tokens_per_s", "decode_slowdown",
                          "end_to_end_slowdown", "headline", "verdict", "same_tokens", "backend", "device", "machine",
                          "stopped_because"}) {
    CHECK(partial["rows"][0].contains(key));
  }
  // At most the last row is a bug cut short, kept with its finished pairs.
  size_t complete_rows = 0;
  for (size_t i = 0; i < done; ++i) {
    const bool cut_short = partial["rows"][i]["stopped_because"] == "interrupted";
    if (cut_short) CHECK(i + 1 == done);
    if (!cut_short) ++complete_rows;
  }
  CHECK(complete_rows < 3);

  std::vector<std::string> resume = arguments;
  resume.push_back("--resume");
  const CommandResult resumed = run_decodelab(resume);
  REQUIRE(resumed.exit_code == 0);
  const nlohmann::json complete = read_json(json);
  REQUIRE(complete.is_array());  // a finished run is the plain list of rows
  REQUIRE(complete.size() == 3);
  for (size_t i = 0; i < complete_rows; ++i) CHECK(complete[i] == partial["rows"][i]);
  for (const nlohmann::json& row : complete) CHECK(row["stopped_because"] != "interrupted");
  CHECK(complete[2]["bug"] == "sequential_generation");
}

TEST_CASE("resume needs a --json file and refuses one that is not a results file", "[interrupt][cli]") {
  const TempDir dir;
  const ScopedEnv roofs("DECODELAB_CACHE_DIR", calibrated_cache_in(dir).c_str());
  const auto scenario = dir.write("sweep.yaml", kSweepScenario).string();
  const CommandResult no_file = run_decodelab({"sweep", scenario, "--resume"});
  CHECK(no_file.exit_code == 2);
  CHECK_THAT(no_file.err, Contains("--resume") && Contains("needs --json"));

  const auto other = dir.write("other.json", "[1, 2, 3]\n");
  const CommandResult wrong = run_decodelab({"sweep", scenario, "--json", other.string(), "--resume"});
  CHECK(wrong.exit_code == 2);
  CHECK_THAT(wrong.err, Contains(other.string()) && Contains("decodelab sweep --json"));
  CHECK(read_text_file(other) == "[1, 2, 3]\n");  // left as it was
}

namespace {

// A lab of one bug whose pairs never reach their target (a fixed count far above what the
// test waits for), each pair slowed by the emulated dispatch cost: a signal sent after the
// second pair lands in the middle of the comparison.
std::vector<std::string> long_lab_arguments(const std::filesystem::path& json) {
  return {"lab", "--only", "host_sync", "--backend", "cpu", "--threads", "1", "--set", "model=lab-tiny", "--set",
          "run={warmup: 0, repeats: 200}", "--set",
          "workload={requests: 2, batch_size: 2, prompt_tokens: 4, new_tokens: 24, host_overhead_us: 100}",
          "--max-seconds", "600", "--json", json.string()};
}

size_t pairs_done(const std::string& err) {
  size_t count = 0;
  for (size_t at = err.find(" done: "); at != std::string::npos; at = err.find(" done: ", at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("lab: SIGINT mid-comparison ends within 2 s and keeps the finished pairs", "[interrupt][cli]") {
  const TempDir dir;
  const ScopedEnv roofs("DECODELAB_CACHE_DIR", calibrated_cache_in(dir).c_str());
  const auto json = dir.path() / "lab.json";
  BackgroundDecodelab lab(long_lab_arguments(json));
  REQUIRE(wait_until([&] { return pairs_done(lab.stderr_so_far()) >= 2; }, 120.0));
  const auto sent = std::chrono::steady_clock::now();
  lab.send(SIGINT);
  const CommandResult interrupted = lab.wait();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  CHECK(seconds < 2.0);
  CHECK(interrupted.exit_code == 130);
  CHECK_THAT(interrupted.err, Contains("kept host_sync") && Contains("finished pairs"));

  const nlohmann::json partial = read_json(json);
  CHECK(partial["complete"] == false);
  REQUIRE(partial["rows"].size() == 1);
  const nlohmann::json& row = partial["rows"][0];
  CHECK(row["bug"] == "host_sync");
  CHECK(row["stopped_because"] == "interrupted");
  CHECK(row["pairs"].get<int>() >= 2);
  CHECK(row["pairs"].get<int>() < 200);
  // Every kept pair is whole: as many repeats on each side as pairs, and the same tokens.
  CHECK(row["fixed"]["repeats"].size() == row["pairs"].get<size_t>());
  CHECK(row["buggy"]["repeats"].size() == row["pairs"].get<size_t>());
  CHECK(row["same_tokens"] == true);
}

TEST_CASE("lab: a second SIGINT ends it at once and still keeps the finished pairs", "[interrupt][cli]") {
  const TempDir dir;
  const ScopedEnv roofs("DECODELAB_CACHE_DIR", calibrated_cache_in(dir).c_str());
  const auto json = dir.path() / "lab.json";
  BackgroundDecodelab lab(long_lab_arguments(json));
  REQUIRE(wait_until([&] { return pairs_done(lab.stderr_so_far()) >= 2; }, 120.0));
  const auto sent = std::chrono::steady_clock::now();
  lab.send(SIGINT);
  REQUIRE(wait_until([&] { return lab.stderr_so_far().find("stopping now") != std::string::npos; }, 10.0));
  lab.send(SIGINT);
  const CommandResult killed = lab.wait();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  CHECK(seconds < 2.0);
  CHECK((killed.exit_code == 130 || killed.signal == SIGINT));
  const nlohmann::json partial = read_json(json);
  CHECK(partial["complete"] == false);
  REQUIRE(partial["rows"].size() == 1);
  CHECK(partial["rows"][0]["pairs"].get<int>() >= 2);
}

namespace {

// Every file under `folder` (none when it does not exist).
size_t files_under(const std::filesystem::path& folder) {
  if (!std::filesystem::exists(folder)) return 0;
  size_t count = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) count += entry.is_regular_file();
  return count;
}

std::vector<std::string> tiny_lab_arguments(const std::filesystem::path& json, const char* max_seconds) {
  return {"lab", "--only", "host_sync", "--backend", "cpu", "--threads", "1", "--set", "model=lab-tiny", "--set",
          "run={warmup: 0, repeats: 200}", "--set",
          "workload={requests: 2, batch_size: 2, prompt_tokens: 4, new_tokens: 8, host_overhead_us: 100}",
          "--max-seconds", max_seconds, "--json", json.string()};
}

}  // namespace

TEST_CASE("lab: SIGINT while the machine is first calibrated ends within 2 s and writes nothing", "[interrupt][cli]") {
  const TempDir dir;
  const auto cache = dir.path() / "empty-cache";  // no calibration: the lab calibrates, tens of seconds
  const ScopedEnv roofs("DECODELAB_CACHE_DIR", cache.c_str());
  BackgroundDecodelab lab(tiny_lab_arguments(dir.path() / "lab.json", "600"));
  // Into the measurement itself, past its first stage (the machine check before it is seconds
  // on a busy machine, and has no ops to stop between).
  REQUIRE(wait_until([&] { return lab.stderr_so_far().find("measuring bandwidth: matrix-vector") != std::string::npos; },
                     60.0));
  CHECK_THAT(lab.stderr_so_far(), Contains("this machine is calibrated first") && Contains("calibrating it now"));
  const auto sent = std::chrono::steady_clock::now();
  lab.send(SIGINT);
  const CommandResult interrupted = lab.wait();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  INFO(interrupted.err);
  CHECK(seconds < 2.0);
  CHECK(interrupted.exit_code == 130);
  CHECK_THAT(interrupted.err, Contains("stopped while checking the machine and measuring the roofs"));
  CHECK(files_under(cache) == 0);  // an abandoned calibration is no file
}

TEST_CASE("lab: SIGINT during the machine check before the roofs ends within 2 s, the roofs never begun",
          "[interrupt][cli]") {
  const TempDir dir;
  const auto cache = dir.path() / "empty-cache";  // no calibration: the machine is checked, then calibrated
  const ScopedEnv roofs("DECODELAB_CACHE_DIR", cache.c_str());
  BackgroundDecodelab lab(tiny_lab_arguments(dir.path() / "lab.json", "600"));
  // The check (a CPU-share probe, then copies of 128 MiB: seconds on a busy machine) starts
  // right after this line.
  REQUIRE(wait_until([&] { return lab.stderr_so_far().find("checking that this machine is quiet") != std::string::npos; },
                     60.0));
  const auto sent = std::chrono::steady_clock::now();
  lab.send(SIGINT);
  const CommandResult interrupted = lab.wait();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  INFO(interrupted.err);
  CHECK(seconds < 2.0);
  CHECK(interrupted.exit_code == 130);
  CHECK_THAT(interrupted.err, Contains("stopped while checking the machine"));
  // Stopped inside the check: the measurement after it never said its first stage.
  CHECK_THAT(interrupted.err, !Contains("measuring bandwidth"));
  CHECK(files_under(cache) == 0);
}

TEST_CASE("lab: a budget too short to calibrate takes quick roofs, written nowhere, within the budget",
          "[interrupt][cli]") {
  const TempDir dir;
  const auto cache = dir.path() / "empty-cache";
  const ScopedEnv roofs("DECODELAB_CACHE_DIR", cache.c_str());
  const auto json = dir.path() / "lab.json";
  const auto begin = std::chrono::steady_clock::now();
  const CommandResult lab = run_decodelab(tiny_lab_arguments(json, "12"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  INFO(lab.err);
  // A calibration alone takes tens of seconds; the budget covers the roofs too (the
  // process's own start and end sit outside its clock: a few seconds on a busy machine).
  CHECK(seconds < 12 + 5);
  CHECK_THAT(lab.err, Contains("quick roofs of this machine first"));
  CHECK(files_under(cache) == 0);
  const bool no_time_left = lab.err.find("no time left in the lab's budget") != std::string::npos ||
                            lab.err.find("ran out while measuring the roofs") != std::string::npos;
  // Where even the quick roofs do not fit (a slow build: the sanitizers), the budget still
  // holds and the lab says it ran out; otherwise the quick roofs were measured.
  if (!no_time_left) CHECK_THAT(lab.err, Contains("quick roofs measured (written nowhere)"));
  if (!no_time_left) {  // the bug had time for pairs after the roofs: judged against the quick ones
    REQUIRE(lab.exit_code == 0);
    const nlohmann::json rows = read_json(json);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0]["stopped_because"] == "max_seconds reached");
  }
}

TEST_CASE("lab: a noisy calibration is read as it is, never measured again", "[interrupt][cli]") {
  // A calibration measured on a noisy machine long ago, the machine quiet now: the lab reads
  // it (only `decodelab calibrate` replaces it), and its file stays as it was.
  const TempDir dir;
  const auto cache = dir.path() / "calibrations";
  auto noisy = round_measured_spec("noisy-test");
  noisy.measured->noisy = true;
  for (int threads : {1, 0}) seed_calibration(noisy, cache, threads);
  const ScopedEnv roofs("DECODELAB_CACHE_DIR", cache.c_str());
  const std::string before = read_text_file(calibration_path(1));
  const size_t seeded = files_under(cache);
  const CommandResult lab = run_decodelab(tiny_lab_arguments(dir.path() / "lab.json", "10"));
  INFO(lab.err);
  CHECK_THAT(lab.err, Contains("lab: 1 bug within 10 s") && !Contains("calibrating") && !Contains("measuring"));
  CHECK(read_text_file(calibration_path(1)) == before);
  CHECK(files_under(cache) == seeded);  // nothing written beside them
}
