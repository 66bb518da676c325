// Sweeps and the lab through a real Slurm: a one-node cluster from Debian's slurm-wlm and
// munge, with two partitions on the node (scripts/slurm-local.sh). Hidden from the default
// run ([.slurm]): the ctest entry `slurm_cluster` (label slurm, tests/slurm/run-slurm-tests.sh)
// starts the cluster, runs these with SLURM_CONF set, and stops it; it skips, saying why,
// where the packages cannot be installed.
//
// Every submitted row is held to the same sweep run locally, figures aside (tokens, shapes,
// memory, counts); a task cancelled mid-run must show as failed with its Slurm state and
// come back with --resubmit; a partition that does not exist is refused in Slurm's words.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <regex>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "lab/cluster/subprocess.h"
#include "support/cli_runner.h"
#include "support/result_rows.h"
#include "support/temp_dir.h"

using namespace decodelab;
using namespace decodelab::testing;
using Catch::Matchers::Contains;

namespace {

// The two partitions slurm-local.sh made (DECODELAB_SLURM_PARTITIONS), first one first.
std::pair<std::string, std::string> partitions() {
  const char* names = std::getenv("DECODELAB_SLURM_PARTITIONS");
  std::string text = names && *names ? names : "main other";
  const size_t space = text.find(' ');
  return {text.substr(0, space), text.substr(space + 1, text.find(' ', space + 1) - space - 1)};
}

// Collects until `settled` holds for its result, or the time is up.
template <typename Settled>
CommandResult collect_until(const std::filesystem::path& run, double seconds, Settled&& settled,
                            std::vector<std::string> extra = {}) {
  std::vector<std::string> arguments = {"collect", run.string()};
  arguments.insert(arguments.end(), extra.begin(), extra.end());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  CommandResult result = run_decodelab(arguments);
  while (!settled(result) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    result = run_decodelab(arguments);
  }
  return result;
}

// Collects until no row is still to come (exit 0: all in; 1: failures), or the time is up.
CommandResult collect_when_settled(const std::filesystem::path& run, double seconds,
                                   std::vector<std::string> extra = {}) {
  return collect_until(
      run, seconds, [](const CommandResult& result) { return result.exit_code != 3; }, extra);
}

// The sweep run here, one row per point, for comparison.
nlohmann::json local_rows(const std::string& scenario, const TempDir& dir, const std::string& name) {
  const auto file = dir.path() / (name + "-local.json");
  const CommandResult local = run_decodelab({"sweep", scenario, "--threads", "1", "--json", file.string(), "-q"});
  REQUIRE(local.exit_code == 0);
  return read_json(file);
}

std::string submitted_job(const CommandResult& submitted) {
  const std::string marker = "submitted job ";
  const size_t at = submitted.out.find(marker);
  REQUIRE(at != std::string::npos);
  return submitted.out.substr(at + marker.size(), submitted.out.find(' ', at + marker.size()) - at - marker.size());
}

}  // namespace

TEST_CASE("slurm: a 16-point sweep submitted and collected gives the local sweep's rows", "[.slurm]") {
  const TempDir dir;
  const auto scenario = dir.write("sixteen.yaml",
                                  "model: lab-tiny\n"
                                  "dtype: fp32\n"
                                  "backend: cpu\n"
                                  "workload:\n"
                                  "  requests: 4\n"
                                  "  batch_size: [1, 2, 3, 4]\n"
                                  "  prompt_tokens: 4\n"
                                  "  new_tokens: [2, 3, 4, 5]\n"
                                  "run: {warmup: 0, repeats: 1}\n")
                            .string();
  const auto run = dir.path() / "run";
  const std::string partition = partitions().first;
  const CommandResult submitted =
      run_decodelab({"sweep", scenario, "--slurm", "--partition", partition, "--run-dir", run.string()});
  REQUIRE(submitted.exit_code == 0);
  CHECK_THAT(submitted.out, Contains("to partition " + partition + ": 16 tasks (points 0-15)"));
  const std::string job = submitted_job(submitted);

  const auto collected = dir.path() / "collected.json";
  const CommandResult done = collect_when_settled(run, 300, {"--json", collected.string()});
  INFO(done.err);
  REQUIRE(done.exit_code == 0);
  CHECK_THAT(done.err, Contains("16 of 16 rows collected (task states from "));
  const nlohmann::json rows = read_json(collected);
  REQUIRE(rows.is_array());
  REQUIRE(rows.size() == 16);
  const nlohmann::json local = local_rows(scenario, dir, "sixteen");
  REQUIRE(local.size() == 16);
  for (size_t i = 0; i < 16; ++i) {
    INFO("point " << i);
    CHECK(without_figures(rows[i]) == without_figures(local[i]));
    CHECK(rows[i]["outputs"] == local[i]["outputs"]);
    const nlohmann::json& placement = rows[i]["placement"];
    CHECK(placement["node"] == short_hostname());
    CHECK(placement["partition"] == partition);
    CHECK(placement["array_job_id"] == job);
    CHECK(placement["array_task_id"] == i);
    CHECK(placement["threads"] == 1);  // the CPU Slurm gave the task
    CHECK(std::filesystem::is_regular_file(placement["log"].get<std::string>()));
  }
  // Collecting again is harmless and gives the same file.
  const std::string first = testing::read_text_file(collected);
  CHECK(run_decodelab({"collect", run.string(), "--json", collected.string(), "-q"}).exit_code == 0);
  CHECK(testing::read_text_file(collected) == first);
}

TEST_CASE("slurm: a task cancelled mid-run shows as failed and comes back with --resubmit", "[.slurm]") {
  const TempDir dir;
  // Point 1 is slow (the emulated dispatch cost), so that it can be cancelled while it runs.
  const auto scenario = dir.write("slow.yaml",
                                  "model: lab-tiny\n"
                                  "dtype: fp32\n"
                                  "backend: cpu\n"
                                  "workload:\n"
                                  "  requests: 1\n"
                                  "  batch_size: 1\n"
                                  "  prompt_tokens: 4\n"
                                  "  new_tokens: 32\n"
                                  "  host_overhead_us: [0, 2500, 0]\n"
                                  "run: {warmup: 0, repeats: 1}\n")
                            .string();
  const auto run = dir.path() / "run";
  const CommandResult submitted = run_decodelab({"sweep", scenario, "--slurm", "--run-dir", run.string()});
  REQUIRE(submitted.exit_code == 0);
  const std::string job = submitted_job(submitted);

  // Cancel point 1 once its task has started (its record says so).
  const auto record = run / "tasks" / "default" / "00001.json";
  REQUIRE(wait_until(
      [&] {
        const nlohmann::json json = nlohmann::json::parse(testing::read_text_file(record), nullptr, false);
        return !json.is_discarded() && json.value("state", "") == "running";
      },
      120.0));
  const ProcessOutput cancelled = run_program({"scancel", job + "_1"});
  REQUIRE(cancelled.exit_code == 0);

  // Settled: the other two points are in, the cancelled one is over.
  const CommandResult failed = collect_until(run, 120, [](const CommandResult& result) {
    return result.err.find("2 of 3 rows collected") != std::string::npos;
  });
  INFO(failed.err);
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err, Contains("default point 1 (host_overhead_us=2500): failed: CANCELLED") &&
                             Contains("log " + (run / "logs" / "default" / (job + "_1.out")).string()) &&
                             Contains("2 of 3 rows collected") && Contains("--resubmit"));
  CHECK_FALSE(std::filesystem::exists(run / "rows" / "default" / "00001.json"));

  const CommandResult resubmitted = run_decodelab({"collect", run.string(), "--resubmit"});
  CHECK(resubmitted.exit_code == 3);  // the point is queued again: rows still to come
  CHECK_THAT(resubmitted.out, Contains("resubmitted 1 points of default as job"));
  const nlohmann::json manifest = read_json(run / "manifest.json");
  REQUIRE(manifest["submissions"].size() == 2);
  CHECK(manifest["submissions"][1]["points"] == "1");

  const auto collected = dir.path() / "collected.json";
  const CommandResult done = collect_when_settled(run, 180, {"--json", collected.string()});
  INFO(done.err);
  REQUIRE(done.exit_code == 0);
  const nlohmann::json rows = read_json(collected);
  const nlohmann::json local = local_rows(scenario, dir, "slow");
  REQUIRE(rows.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(without_figures(rows[i]) == without_figures(local[i]));
  CHECK(rows[1]["placement"]["array_job_id"] == manifest["submissions"][1]["job_id"]);
}

TEST_CASE("slurm: a partition that does not exist is refused in Slurm's words, nothing queued", "[.slurm]") {
  const TempDir dir;
  const auto scenario = dir.write("two.yaml",
                                  "model: lab-tiny\ndtype: fp32\nbackend: cpu\n"
                                  "workload: {requests: 1, batch_size: 1, prompt_tokens: 4, new_tokens: [2, 3]}\n"
                                  "run: {warmup: 0, repeats: 1}\n")
                            .string();
  const ProcessOutput before = run_program({"squeue", "-h", "-o", "%i"});
  REQUIRE(before.exit_code == 0);
  for (const std::string& partitions_option :
       {std::string("no-such-partition"), partitions().first + ",no-such-partition"}) {
    const auto run = dir.path() / "run";
    const CommandResult refused =
        run_decodelab({"sweep", scenario, "--slurm", "--partitions", partitions_option, "--run-dir", run.string()});
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.err, Contains("--partition no-such-partition: Slurm refused the job") &&
                                Contains("invalid partition specified: no-such-partition"));
    CHECK_FALSE(std::filesystem::exists(run));
  }
  // The valid partition of the pair was not queued either: the study is refused whole.
  CHECK(run_program({"squeue", "-h", "-o", "%i"}).out == before.out);
}

TEST_CASE("slurm: a study over two partitions has one row set each, side by side", "[.slurm]") {
  const TempDir dir;
  const auto scenario = dir.write("study.yaml",
                                  "model: lab-tiny\ndtype: fp32\nbackend: cpu\n"
                                  "workload: {requests: 2, batch_size: [1, 2], prompt_tokens: 4, new_tokens: 3}\n"
                                  "run: {warmup: 0, repeats: 1}\n")
                            .string();
  const auto run = dir.path() / "run";
  const auto [first, second] = partitions();
  const CommandResult submitted =
      run_decodelab({"sweep", scenario, "--slurm", "--partitions", first + "," + second, "--run-dir", run.string()});
  REQUIRE(submitted.exit_code == 0);
  CHECK_THAT(submitted.out, Contains("to partition " + first) && Contains("to partition " + second));

  const auto collected = dir.path() / "collected.json";
  const CommandResult done = collect_when_settled(run, 180, {"--json", collected.string()});
  INFO(done.err);
  REQUIRE(done.exit_code == 0);
  // Each set's heading names the device its rows ran on (the row's own `device`, less a CPU's
  // thread count: a threads sweep is one device) and the node.
  const std::string device = std::regex_replace(
      read_json(run / "rows" / first / "00000.json")["device"].get<std::string>(), std::regex(R"(\(\d+ threads, )"), "(");
  CHECK_THAT(done.out, Contains("## partition " + first + ": " + device + " on " + short_hostname()) &&
                           Contains("## partition " + second + ": " + device + " on " + short_hostname()) &&
                           Contains("## side by side") &&
                           Contains("| batch_size | " + first + " decode tok/s | " + first + " limiter | " + second +
                                    " decode tok/s | " + second + " limiter | " + second + " / " + first + " |"));
  const nlohmann::json rows = read_json(collected);
  REQUIRE(rows.size() == 4);  // two sets of two points, set by set
  const nlohmann::json local = local_rows(scenario, dir, "study");
  for (size_t i = 0; i < 4; ++i) {
    CHECK(rows[i]["placement"]["partition"] == (i < 2 ? first : second));
    CHECK(without_figures(rows[i]) == without_figures(local[i % 2]));
  }
}

TEST_CASE("slurm: the lab as an array job gives the local lab's rows and reports", "[.slurm]") {
  const TempDir dir;
  const auto run = dir.path() / "run";
  const std::vector<std::string> lab = {
      "lab", "--only", "host_sync", "--only", "sequential_generation", "--backend", "cpu", "--set", "model=lab-tiny",
      "--set", "run={warmup: 0, repeats: 1}", "--set",
      "workload={requests: 2, batch_size: 2, prompt_tokens: 4, new_tokens: 4}"};
  std::vector<std::string> submit = lab;
  for (const char* option : {"--slurm", "--run-dir"}) submit.push_back(option);
  submit.push_back(run.string());
  REQUIRE(run_decodelab(submit).exit_code == 0);

  const auto collected = dir.path() / "lab.json";
  const auto report = dir.path() / "report";
  const CommandResult done =
      collect_when_settled(run, 300, {"--json", collected.string(), "--report", report.string()});
  INFO(done.err);
  REQUIRE(done.exit_code == 0);
  CHECK_THAT(done.out, Contains("| host_sync |") && Contains("| sequential_generation |"));
  CHECK(std::filesystem::is_regular_file(report / "index.html"));
  CHECK(std::filesystem::is_regular_file(report / "host_sync" / "report.html"));
  const nlohmann::json rows = read_json(collected);
  REQUIRE(rows.size() == 2);

  std::vector<std::string> local_command = lab;
  local_command.insert(local_command.end(), {"--threads", "1", "--json", (dir.path() / "local.json").string(), "-q"});
  REQUIRE(run_decodelab(local_command).exit_code == 0);
  const nlohmann::json local = read_json(dir.path() / "local.json");
  for (size_t i = 0; i < 2; ++i) {
    CHECK(without_figures(rows[i]) == without_figures(local[i]));
    CHECK(rows[i]["same_tokens"] == true);
  }
}
