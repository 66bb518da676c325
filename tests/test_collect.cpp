// Run folders without a scheduler: `sweep/lab --slurm --dry-run` writes the folder, every
// point is run by hand (`run-point`, what each Slurm task runs), and `collect` must give
// the rows, the table and the results file the local command gives (figures aside), name
// what is missing, and refuse what it cannot do. The same on a real Slurm is tested by
// tests/test_slurm_cluster.cpp (ctest slurm_cluster).
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "lab/report/collect_report.h"
#include "support/cli_runner.h"
#include "support/result_rows.h"
#include "support/temp_dir.h"

using namespace decodelab::testing;
using Catch::Matchers::Contains;

namespace {

const char* const kScenario =
    "model: lab-tiny\n"
    "dtype: fp32\n"
    "backend: cpu\n"
    "workload:\n"
    "  requests: 2\n"
    "  batch_size: [1, 2]\n"
    "  prompt_tokens: 4\n"
    "  new_tokens: [3, 4]\n"
    "run: {warmup: 0, repeats: 1}\n";

size_t line_count(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("collect: points run by hand give the local sweep's rows, table and results file", "[collect][cli]") {
  const TempDir dir;
  const auto scenario = dir.write("sweep.yaml", kScenario).string();
  const auto run = dir.path() / "run";
  const CommandResult submitted =
      run_decodelab({"sweep", scenario, "--slurm", "--dry-run", "--run-dir", run.string(), "--threads", "1"});
  REQUIRE(submitted.exit_code == 0);
  CHECK_THAT(submitted.out, Contains("dry run: nothing submitted") && Contains("sbatch --parsable") &&
                                Contains("--array=0-3") && Contains("collect " + run.string() + " --resubmit"));
  const nlohmann::json manifest = read_json(run / "manifest.json");
  CHECK(manifest["command"] == "sweep");
  REQUIRE(manifest["points"].size() == 4);
  CHECK(manifest["points"][3]["label"] == "batch_size=2 new_tokens=4");
  CHECK(manifest["submissions"].empty());

  // Nothing ran yet: every point is named as never submitted, and the file says it is partial.
  const auto collected = dir.path() / "collected.json";
  CommandResult early = run_decodelab({"collect", run.string(), "--json", collected.string()});
  CHECK(early.exit_code == 1);
  CHECK_THAT(early.err, Contains("default point 0 (batch_size=1 new_tokens=3): failed: never submitted") &&
                            Contains("0 of 4 rows collected") && Contains("--resubmit"));
  CHECK(read_json(collected)["complete"] == false);

  for (int point = 0; point < 4; ++point) {
    const CommandResult ran =
        run_decodelab({"run-point", run.string(), "--set", "default", "--point", std::to_string(point)});
    REQUIRE(ran.exit_code == 0);
  }
  const CommandResult done = run_decodelab({"collect", run.string(), "--json", collected.string()});
  REQUIRE(done.exit_code == 0);
  CHECK_THAT(done.err, Contains("4 of 4 rows collected"));
  const nlohmann::json rows = read_json(collected);
  REQUIRE(rows.is_array());  // complete: the plain list, as a finished local sweep writes
  REQUIRE(rows.size() == 4);

  const auto local_file = dir.path() / "local.json";
  const CommandResult local = run_decodelab({"sweep", scenario, "--threads", "1", "--json", local_file.string()});
  REQUIRE(local.exit_code == 0);
  const nlohmann::json local_rows = read_json(local_file);
  REQUIRE(local_rows.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(without_figures(rows[i]) == without_figures(local_rows[i]));
    CHECK(rows[i]["outputs"] == local_rows[i]["outputs"]);  // the generated tokens themselves
    CHECK(rows[i]["placement"]["node"] == short_hostname());
    CHECK(rows[i]["placement"]["set"] == "default");
    CHECK(rows[i]["placement"]["threads"] == 1);
    CHECK_FALSE(rows[i]["placement"].contains("job_id"));
  }
  // The same table: a header, a rule and one line per row, starting with the same cells.
  REQUIRE(line_count(done.out) == line_count(local.out));
  CHECK(done.out.substr(0, done.out.find('\n')) == local.out.substr(0, local.out.find('\n')));

  // Collecting again changes nothing; the local sweep resumes from the collected rows.
  const std::string first = read_text_file(collected);
  CHECK(run_decodelab({"collect", run.string(), "--json", collected.string(), "--quiet"}).exit_code == 0);
  CHECK(read_text_file(collected) == first);
  const CommandResult resumed =
      run_decodelab({"sweep", scenario, "--threads", "1", "--json", collected.string(), "--resume"});
  CHECK(resumed.exit_code == 0);
  CHECK_THAT(resumed.err, Contains("4 of 4 rows reused"));
}

TEST_CASE("collect: a lab over two partitions, side by side, with its report", "[collect][cli]") {
  const TempDir dir;
  const auto run = dir.path() / "run";
  const std::vector<std::string> lab = {
      "lab", "--only", "host_sync", "--backend", "cpu", "--threads", "1", "--set", "model=lab-tiny", "--set",
      "run={warmup: 0, repeats: 1}", "--set", "workload={requests: 2, batch_size: 2, prompt_tokens: 4, new_tokens: 4}"};
  std::vector<std::string> submit = lab;
  for (const char* option : {"--slurm", "--dry-run", "--partitions", "a,b", "--run-dir"}) submit.push_back(option);
  submit.push_back(run.string());
  const CommandResult submitted = run_decodelab(submit);
  REQUIRE(submitted.exit_code == 0);
  CHECK_THAT(submitted.out, Contains("--partition=a") && Contains("--partition=b"));
  for (const char* set : {"a", "b"})
    REQUIRE(run_decodelab({"run-point", run.string(), "--set", set, "--point", "0"}).exit_code == 0);

  const auto collected = dir.path() / "lab.json";
  const auto report = dir.path() / "report";
  const CommandResult done =
      run_decodelab({"collect", run.string(), "--json", collected.string(), "--report", report.string()});
  REQUIRE(done.exit_code == 0);
  CHECK_THAT(done.out, Contains("## partition a: ") && Contains("## partition b: ") && Contains("## side by side") &&
                           Contains("| bug | a slowdown | a verdict | b slowdown | b verdict |") &&
                           Contains("| host_sync |"));
  const nlohmann::json rows = read_json(collected);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["placement"]["set"] == "a");
  CHECK(rows[1]["placement"]["set"] == "b");
  for (const char* page :
       {"index.html", "a/index.html", "b/index.html", "a/host_sync/report.html", "b/host_sync/attribution.html"})
    CHECK(std::filesystem::is_regular_file(report / page));

  // The rows are the local lab's (figures aside).
  const auto local_file = dir.path() / "local.json";
  std::vector<std::string> local_command = lab;
  local_command.push_back("--json");
  local_command.push_back(local_file.string());
  REQUIRE(run_decodelab(local_command).exit_code == 0);
  const nlohmann::json local_rows = read_json(local_file);
  REQUIRE(local_rows.size() == 1);
  for (const nlohmann::json& row : rows) {
    CHECK(without_figures(row) == without_figures(local_rows[0]));
    CHECK(row["same_tokens"] == true);
  }
}

TEST_CASE("collect: a task that fails is named with its error", "[collect][cli]") {
  const TempDir dir;
  const auto scenario = dir.write("sweep.yaml", kScenario).string();
  const auto run = dir.path() / "run";
  REQUIRE(run_decodelab({"sweep", scenario, "--slurm", "--dry-run", "--run-dir", run.string(), "-q"}).exit_code == 0);
  const CommandResult past = run_decodelab({"run-point", run.string(), "--set", "default", "--point", "4"});
  CHECK(past.exit_code == 2);
  CHECK_THAT(past.err, Contains("--point: 4 is past the last point (3)"));
  CHECK(run_decodelab({"run-point", run.string(), "--set", "h200", "--point", "0"}).exit_code == 2);

  // A binary other than the one that wrote the folder refuses to run its points.
  nlohmann::json manifest = read_json(run / "manifest.json");
  manifest["decodelab_version"] = "0.0.1";
  dir.write("run/manifest.json", manifest.dump());
  const CommandResult refused = run_decodelab({"run-point", run.string(), "--set", "default", "--point", "1"});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Contains("written by decodelab 0.0.1"));
  const CommandResult collected = run_decodelab({"collect", run.string()});
  CHECK(collected.exit_code == 1);
  CHECK_THAT(collected.err, Contains("default point 1 (batch_size=1 new_tokens=4): failed: exit 2: the run folder was "
                                     "written by decodelab 0.0.1"));
}

TEST_CASE("sweep --slurm and collect refuse what they cannot do, leaving nothing behind", "[collect][cli]") {
  const TempDir dir;
  const auto scenario = dir.write("sweep.yaml", kScenario).string();
  const auto run = dir.path() / "run";

  // No Slurm on this PATH: refused before anything is written.
  const CommandResult no_slurm =
      run_decodelab({"sweep", scenario, "--slurm", "--run-dir", run.string()}, "PATH=/nonexistent");
  CHECK(no_slurm.exit_code == 2);
  CHECK_THAT(no_slurm.err, Contains("cannot run sbatch") && Contains("is Slurm installed"));
  CHECK_FALSE(std::filesystem::exists(run));

  dir.write("run/something", "x");
  const CommandResult taken = run_decodelab({"sweep", scenario, "--slurm", "--dry-run", "--run-dir", run.string()});
  CHECK(taken.exit_code == 2);
  CHECK_THAT(taken.err, Contains("already exists and is not empty"));

  CHECK(run_decodelab({"sweep", scenario, "--partition", "a"}).exit_code == 2);             // needs --slurm
  CHECK(run_decodelab({"sweep", scenario, "--slurm", "--json", "x.json"}).exit_code == 2);  // collect writes rows
  CHECK(run_decodelab({"lab", "--slurm", "--report", "r"}).exit_code == 2);
  CHECK(run_decodelab({"sweep", scenario, "--slurm", "--dry-run", "--partitions", "a,a", "--run-dir",
                       (dir.path() / "r2").string()})
            .exit_code == 2);
  CHECK(run_decodelab({"sweep", scenario, "--slurm", "--dry-run", "--partitions", "a/b", "--run-dir",
                       (dir.path() / "r3").string()})
            .exit_code == 2);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "r2"));

  const CommandResult not_a_run = run_decodelab({"collect", dir.path().string()});
  CHECK(not_a_run.exit_code == 2);
  CHECK_THAT(not_a_run.err, Contains("holds no manifest.json"));
  const auto sweep_run = dir.path() / "sweep-run";
  REQUIRE(run_decodelab({"sweep", scenario, "--slurm", "--dry-run", "--run-dir", sweep_run.string(), "-q"}).exit_code ==
          0);
  const CommandResult report =
      run_decodelab({"collect", sweep_run.string(), "--report", (dir.path() / "rep").string()});
  CHECK(report.exit_code == 2);
  CHECK_THAT(report.err, Contains("only a lab run has a report"));
}

TEST_CASE("collect: a threads sweep on one CPU is one device in its set", "[collect]") {
  const nlohmann::json one = {{"device", "AMD EPYC (1 threads, AVX2)"}};
  const nlohmann::json two = {{"device", "AMD EPYC (2 threads, AVX2)"}};
  const nlohmann::json other = {{"device", "NVIDIA H200"}};
  const std::string threads = decodelab::set_heading({{"default", ""}, {&one, &two}});
  CHECK(threads.find("different devices") == std::string::npos);
  CHECK(threads.find("AMD EPYC (AVX2)") != std::string::npos);
  // Two real devices in one set are still said.
  CHECK(decodelab::set_heading({{"default", ""}, {&one, &other}}).find("2 different devices") != std::string::npos);
}
