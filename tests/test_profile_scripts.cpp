// scripts/ncu-profile.sh and scripts/nsys-profile.sh, run against stand-in `ncu` and `nsys`
// executables that record their arguments: the command lines the scripts build (NVTX
// filter, clocks, units, the reports) and, above all, that ncu is asked for exactly the
// metrics the reader uses, so the script and profiling/trace/ncu_reader.h cannot drift apart.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <iterator>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "profiling/trace/ncu_reader.h"
#include "support/temp_dir.h"

using decodelab::testing::TempDir;

namespace {

// Each call of the stand-in tool: its arguments, one per entry.
using Calls = std::vector<std::vector<std::string>>;

Calls read_calls(const std::filesystem::path& log) {
  Calls calls(1);
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line == "<end of call>") {
      calls.emplace_back();
    } else {
      calls.back().push_back(line);
    }
  }
  calls.pop_back();
  return calls;
}

// A stand-in that logs its arguments and, for `--import`, prints a tiny CSV.
void write_stand_in(const TempDir& dir, const std::string& tool) {
  const auto path = dir.write("bin/" + tool,
                              "#!/usr/bin/env bash\n"
                              "for argument in \"$@\"; do printf '%s\\n' \"$argument\"; done >>\"$TOOL_LOG\"\n"
                              "echo '<end of call>' >>\"$TOOL_LOG\"\n"
                              "[[ \" $* \" == *' --import '* ]] && echo '\"ID\",\"Kernel Name\"'\n"
                              "exit 0\n");
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
}

int run_script(const TempDir& dir, const std::string& script, const std::vector<std::string>& arguments) {
  std::string command = "cd '" + dir.path().string() + "' && PATH='" + (dir.path() / "bin").string() + ":/usr/bin:/bin' TOOL_LOG='" +
                        (dir.path() / "calls.log").string() + "' DECODELAB='" + DECODELAB_BINARY + "' '" +
                        (std::filesystem::path(DECODELAB_SOURCE_DIR) / "scripts" / script).string() + "'";
  for (const std::string& argument : arguments) command += " '" + argument + "'";
  command += " >'" + (dir.path() / "out.txt").string() + "' 2>&1";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool contains_pair(const std::vector<std::string>& arguments, const std::string& option, const std::string& value) {
  for (size_t i = 0; i + 1 < arguments.size(); ++i) {
    if (arguments[i] == option && arguments[i + 1] == value) return true;
  }
  return false;
}

// The reader's metrics as ncu-profile.sh asks for them.
std::vector<std::string> script_metrics() {
  std::vector<std::string> metrics;
  for (const std::string& metric : decodelab::ncu_metric::all()) {
    metrics.push_back(metric);
    if (metric == decodelab::ncu_metric::kTensorFp16) {
      metrics.push_back(decodelab::ncu_metric::kTensorFp16ToFp16);
      metrics.push_back(decodelab::ncu_metric::kTensorFp16ToFp32);
    }
  }
  return metrics;
}

std::string expected_metrics(const std::string& except = "") {
  std::string expected;
  for (const std::string& metric : script_metrics())
    if (metric != except) expected += (expected.empty() ? "" : ",") + metric;
  return expected;
}

}  // namespace

TEST_CASE("ncu-profile.sh: the decode steps' kernels, the reader's metrics, both CSV forms", "[profile_scripts]") {
  const TempDir dir;
  write_stand_in(dir, "ncu");

  const int status = run_script(dir, "ncu-profile.sh", {"quickstart", "attention", "--", "--set", "workload.new_tokens=4"});

  REQUIRE(status == 0);
  const Calls calls = read_calls(dir.path() / "calls.log");
  REQUIRE(calls.size() == 4);  // the metric listing, the profile, then two exports
  CHECK(calls[0] == std::vector<std::string>{"--query-metrics"});
  const std::vector<std::string>& profile = calls[1];
  CHECK(contains_pair(profile, "--nvtx-include", "regex:step [0-9]+/"));
  CHECK(contains_pair(profile, "--kernel-name", "regex:attention"));
  CHECK(contains_pair(profile, "--clock-control", "none"));
  CHECK(contains_pair(profile, "--export", "ncu-quickstart"));
  CHECK(contains_pair(profile, "--set", "workload.new_tokens=4"));
  // The metrics asked for are exactly the ones the reader uses (with the fp16 tensor
  // counters by destination, which it adds up), every one when ncu lists none.
  CHECK(contains_pair(profile, "--metrics", expected_metrics()));

  CHECK(contains_pair(calls[2], "--page", "raw"));
  CHECK(contains_pair(calls[2], "--print-units", "base"));
  CHECK(contains_pair(calls[3], "--print-metric-name", "name"));
  CHECK(std::filesystem::exists(dir.path() / "ncu-quickstart-raw.csv"));
  CHECK(std::filesystem::exists(dir.path() / "ncu-quickstart-details.csv"));
}

TEST_CASE("ncu-profile.sh: asks only for the metrics ncu lists for the device", "[profile_scripts]") {
  const TempDir dir;
  write_stand_in(dir, "ncu");
  // A listing in ncu's shape (base names first on a line, indented or not) without the
  // bare src_fp16.
  std::string listing = "Device GH100\nMetric Name   Metric Description\n";
  bool indent = false;
  for (const std::string& metric : script_metrics()) {
    const std::string base = metric.substr(0, metric.find('.'));
    if (metric != decodelab::ncu_metric::kTensorFp16) listing += (indent ? "  " : "") + base + "   a counter\n";
    indent = !indent;
  }
  const auto listing_path = dir.write("listing.txt", listing);
  setenv("NCU_AVAILABLE_METRICS", listing_path.c_str(), 1);
  const int status = run_script(dir, "ncu-profile.sh", {"quickstart"});
  unsetenv("NCU_AVAILABLE_METRICS");

  REQUIRE(status == 0);
  const Calls calls = read_calls(dir.path() / "calls.log");
  REQUIRE(calls.size() == 3);  // no query: the listing was given
  CHECK(contains_pair(calls[0], "--metrics", expected_metrics(decodelab::ncu_metric::kTensorFp16)));
  std::ifstream out(dir.path() / "out.txt");
  const std::string printed((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  CHECK(printed.find(std::string(decodelab::ncu_metric::kTensorFp16) + " is not among this ncu's metrics") !=
        std::string::npos);
}

TEST_CASE("nsys-profile.sh: CUDA and NVTX traced, the reports decodelab nsys reads", "[profile_scripts]") {
  const TempDir dir;
  write_stand_in(dir, "nsys");

  const int status = run_script(dir, "nsys-profile.sh", {"quickstart", "--set", "workload.new_tokens=8"});

  REQUIRE(status == 0);
  const Calls calls = read_calls(dir.path() / "calls.log");
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].at(0) == "profile");
  CHECK(std::find(calls[0].begin(), calls[0].end(), "--trace=cuda,nvtx,osrt") != calls[0].end());
  CHECK(contains_pair(calls[0], "--set", "workload.new_tokens=8"));
  CHECK(calls[1].at(0) == "stats");
  CHECK(contains_pair(calls[1], "--format", "csv"));
  CHECK(contains_pair(calls[1], "--report", "cuda_gpu_trace,cuda_api_trace,nvtx_pushpop_trace,cuda_gpu_kern_sum,cuda_api_sum"));
  CHECK(contains_pair(calls[1], "--output", "nsys-quickstart"));
}

TEST_CASE("profile scripts: without the tool on PATH they stop with exit 2", "[profile_scripts]") {
  const TempDir dir;
  std::filesystem::create_directories(dir.path() / "bin");
  // Only where the system itself has no such tool in /usr/bin or /bin (the PATH the test keeps).
  for (const char* tool : {"ncu", "nsys"}) {
    if (std::filesystem::exists(std::string("/usr/bin/") + tool) || std::filesystem::exists(std::string("/bin/") + tool)) {
      WARN("skipped: " << tool << " is installed system-wide");
      continue;
    }
    CHECK(run_script(dir, std::string(tool) + "-profile.sh", {"quickstart"}) == 2);
  }
}
