// scripts/gpu-check.sh's readings (scripts/gpu_check_report.py): each check must be
// able to fail. Fed small JSON documents shaped like decodelab's (run, roofline, lab), it
// passes what holds and fails, with exit 1 and the reason, what does not: a bug that is
// not slower or changed the tokens, an implausible bandwidth share, differing tokens; and
// the summary names what each stage did and did not check, and fails a check whose stage
// failed, found no time, or passed without saying what it checked; and gpu-check.sh itself
// stops at preflight when the driver cannot run what it would use.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

using decodelab::testing::CommandResult;
using decodelab::testing::TempDir;

namespace {

const std::string kScripts = std::string(DECODELAB_SOURCE_DIR) + "/scripts/";

// scripts/gpu_check_report.py with `arguments` (whitespace-separated words), run in `dir`;
// its output and errors together.
CommandResult report(const TempDir& dir, const std::string& arguments) {
  std::vector<std::string> command = {"python3", kScripts + "gpu_check_report.py"};
  std::istringstream words(arguments);
  for (std::string word; words >> word;) command.push_back(word);
  CommandResult result = decodelab::testing::run_command(command, "", dir.path());
  result.out += result.err;
  return result;
}

// Documents shaped like decodelab's: a lab row, and a run's JSON.
nlohmann::json lab_row(const std::string& bug, double slowdown, bool same_tokens) {
  return {{"bug", bug},         {"bugs", bug},         {"end_to_end_slowdown", slowdown}, {"decode_slowdown", 1.5},
          {"same_tokens", same_tokens}, {"verdict", "-"}, {"backend", "cuda"},    {"device", "test"}};
}

std::string run_json(double gbps, bool graphs, const nlohmann::json& tokens) {
  const nlohmann::json run = {
      {"model", {{"name", "llama-1b"}, {"dtype", "bf16"}}},
      {"device", "test"},
      {"scenario", {{"workload", {{"batch_size", 1}}}, {"run", {{"cuda_graphs", graphs}}}}},
      {"metrics", {{"decode_bandwidth_gbps", gbps}, {"decode_wall_ms_per_step", 1.0}}},
      {"intervals", {{"decode_bandwidth_gbps", {{"relative_ci", 0.01}}}}},
      {"outputs", tokens}};
  return run.dump();
}

}  // namespace

TEST_CASE("gpu-check readings: the lab check fails a bug that is not slower or changed tokens", "[gpu_check]") {
  const TempDir dir;
  dir.write("good.json", nlohmann::json::array({lab_row("host_sync", 3.0, true), lab_row("fp32_ops", 1.4, true)}).dump());
  dir.write("faster.json",
            nlohmann::json::array({lab_row("host_sync", 3.0, true), lab_row("fp32_ops", 0.97, true)}).dump());
  dir.write("tokens.json", nlohmann::json::array({lab_row("host_sync", 3.0, false)}).dump());
  dir.write("partial.json",
            nlohmann::json{{"complete", false}, {"rows", nlohmann::json::array({lab_row("host_sync", 3.0, true)})}}.dump());

  const CommandResult good = report(dir, "lab good.json --out good.figures.json");
  INFO(good.out);
  CHECK(good.exit_code == 0);
  CHECK(std::filesystem::is_regular_file(dir.path() / "good.figures.json"));
  const CommandResult faster = report(dir, "lab faster.json");
  CHECK(faster.exit_code == 1);
  CHECK(faster.out.find("fp32_ops: slowdown 0.970x, not above 1") != std::string::npos);
  const CommandResult tokens = report(dir, "lab tokens.json");
  CHECK(tokens.exit_code == 1);
  CHECK(tokens.out.find("changed the generated tokens") != std::string::npos);
  CHECK(report(dir, "lab partial.json").exit_code == 2);  // an unfinished lab proves nothing
  CHECK(report(dir, "lab missing.json").exit_code == 2);
}

namespace {

// A `decodelab compare --json` document reduced to what the lab reading takes from it.
std::string compare_json(double low, double median, bool same_tokens) {
  const nlohmann::json measured = {{"median", median}, {"low", low}, {"high", median * 1.2}};
  return nlohmann::json{{"headline", {{"metric", "end_to_end"}, {"measured", measured}}},
                        {"end_to_end_slowdown", measured},
                        {"same_tokens", same_tokens},
                        {"token_agreement", {{"detail", same_tokens ? "identical tokens" : "tokens differ: step 3"}}}}
      .dump();
}

}  // namespace

TEST_CASE("gpu-check readings: a compared bug is judged by its interval, not its median", "[gpu_check]") {
  const TempDir dir;
  dir.write("lab.json", nlohmann::json::array({lab_row("host_sync", 3.0, true)}).dump());
  dir.write("clear.json", compare_json(1.4, 2.1, true));
  dir.write("straddles.json", compare_json(0.95, 1.3, true));  // median above 1, interval reaching below
  dir.write("tokens.json", compare_json(1.4, 2.1, false));

  const CommandResult clear = report(dir, "lab lab.json --compare no_kv_cache=clear.json --out f.json");
  INFO(clear.out);
  CHECK(clear.exit_code == 0);
  const nlohmann::json figures = nlohmann::json::parse(decodelab::testing::read_text_file(dir.path() / "f.json"));
  CHECK(figures["rows"].size() == 2);
  CHECK(figures["rows"][1]["judged_by"] == "end-to-end slowdown interval 1.40-2.52x");
  const CommandResult straddles = report(dir, "lab lab.json --compare no_kv_cache=straddles.json");
  CHECK(straddles.exit_code == 1);
  CHECK(straddles.out.find("no_kv_cache: the end-to-end slowdown's interval reaches 0.950x, not above 1") !=
        std::string::npos);
  const CommandResult tokens = report(dir, "lab lab.json --compare no_kv_cache=tokens.json");
  CHECK(tokens.exit_code == 1);
  CHECK(tokens.out.find("tokens differ: step 3") != std::string::npos);
}

TEST_CASE("gpu-check readings: bandwidth shares of the copy bandwidth, implausible ones fail", "[gpu_check]") {
  const TempDir dir;
  dir.write("roofline.json", R"({"copy": {"bandwidth_gbps": 4000.0, "timing": {"spread": 0.01}},
                                  "read": {"bandwidth_gbps": 3900.0}})");
  const nlohmann::json tokens = {{1, 2}};
  dir.write("off.json", run_json(3000.0, false, tokens));
  dir.write("on.json", run_json(3300.0, true, tokens));
  dir.write("too-fast.json", run_json(6000.0, true, tokens));

  const CommandResult good = report(dir, "bandwidth --roofline roofline.json --run off=off.json --run on=on.json --out f.json");
  INFO(good.out);
  CHECK(good.exit_code == 0);
  CHECK(good.out.find("| off | 1.000 | 3000.0 | 75.0% |") != std::string::npos);
  CHECK(good.out.find("| on | 1.000 | 3300.0 | 82.5% |") != std::string::npos);
  const CommandResult fast = report(dir, "bandwidth --roofline roofline.json --run fast=too-fast.json");
  CHECK(fast.exit_code == 1);
  CHECK(fast.out.find("implausible") != std::string::npos);
  // Where no bound holds (a CPU's copy), none is applied, and the reading says so instead
  // of passing a loose one.
  const CommandResult unjudged =
      report(dir, "bandwidth --roofline roofline.json --run fast=too-fast.json --max-share 0 --out u.json");
  CHECK(unjudged.exit_code == 0);
  CHECK(unjudged.out.find("shares not judged") != std::string::npos);
  const nlohmann::json figures = nlohmann::json::parse(decodelab::testing::read_text_file(dir.path() / "u.json"));
  CHECK(figures["max_share_judged"].is_null());
}

TEST_CASE("gpu-check readings: differing tokens fail", "[gpu_check]") {
  const TempDir dir;
  dir.write("a.json", run_json(1.0, false, {{1, 2, 3}, {4, 5, 6}}));
  dir.write("b.json", run_json(1.0, true, {{1, 2, 3}, {4, 5, 6}}));
  dir.write("c.json", run_json(1.0, true, {{1, 2, 3}, {4, 9, 6}}));
  CHECK(report(dir, "tokens a.json b.json").exit_code == 0);
  const CommandResult differ = report(dir, "tokens a.json c.json");
  CHECK(differ.exit_code == 1);
  CHECK(differ.out.find("request 1, first at token 1") != std::string::npos);
}

TEST_CASE("gpu-check summary: what each stage did and did not check, and a failed, unrun or silent pass fails",
          "[gpu_check]") {
  const TempDir dir;
  dir.write("work/environment.txt", "device=test\n");
  dir.write("work/preflight.claims", "CHECKED driver and device\n");
  dir.write("work/cuda-tests.claims", "CHECKED the [cuda] tests\nNOT_CHECKED the sanitizer\n");
  dir.write("work/nsys.claims", "NOT_CHECKED a timeline: nsys is not on the PATH\n");
  dir.write("work/stages.tsv", "preflight\tpassed\t1\t1\ncuda-tests\tpassed\t10\t1\nnsys\tskipped\t0\t1\n"
                               "memcheck\tnot run: out of time\t0\t0\n");
  const CommandResult passed = report(dir, "summary --work work --results . --mode real");
  INFO(passed.out);
  CHECK(passed.exit_code == 0);
  // What was and was not checked, per stage, in the markdown and the JSON alike.
  CHECK(passed.out.find("| cuda-tests | passed | 10 | the [cuda] tests | the sanitizer |") != std::string::npos);
  CHECK(passed.out.find("| nsys | skipped | 0 | - | a timeline: nsys is not on the PATH |") != std::string::npos);
  CHECK(passed.out.find("result: **PASS**") != std::string::npos);
  const nlohmann::json summary = nlohmann::json::parse(decodelab::testing::read_text_file(dir.path() / "summary.json"));
  CHECK(summary["passed"] == true);
  CHECK(summary["stages"][1]["not_checked"] == nlohmann::json::array({"the sanitizer"}));

  // Shares measured where no bound holds are printed, and said to be unjudged.
  dir.write("work/bandwidth.figures.json", R"({"copy_bandwidth_gbps": 7.0, "copy_spread": 0.1, "max_share_judged": null,
    "runs": [{"run": "cpu", "decode_wall_ms_per_step": 5.0, "decode_bandwidth_gbps": 9.0, "share_of_copy": 1.29}]})");
  const CommandResult unjudged = report(dir, "summary --work work --results . --mode dry-run");
  CHECK(unjudged.out.find("| cpu | 5.000 | 9.0 | 129.0% |") != std::string::npos);
  CHECK(unjudged.out.find("The shares were not judged") != std::string::npos);
  std::filesystem::remove(dir.path() / "work" / "bandwidth.figures.json");

  // A pass that does not say what it checked proves nothing.
  dir.write("work/stages.tsv", "preflight\tpassed\t1\t1\nlab\tpassed\t3\t1\n");
  CHECK(report(dir, "summary --work work --results . --mode real").exit_code == 1);

  dir.write("work/stages.tsv", "preflight\tpassed\t1\t1\nlab\tnot run: out of time\t0\t1\n");
  CHECK(report(dir, "summary --work work --results . --mode real").exit_code == 1);
  dir.write("work/stages.tsv", "preflight\tpassed\t1\t1\nlab\tfailed\t3\t1\n");
  const CommandResult failed = report(dir, "summary --work work --results . --mode dry-run");
  CHECK(failed.exit_code == 1);
  CHECK(failed.out.find("nothing here is a GPU result") != std::string::npos);
}

namespace {

// scripts/gpu-check.sh (not a dry run) on this machine with a stand-in nvidia-smi that
// reports a driver for CUDA `driver_cuda`, and a carried bundle built for CUDA 13.0.
CommandResult preflight_with_driver(const TempDir& dir, const std::string& driver_cuda) {
  std::string smi_script = "#!/usr/bin/env bash\n";
  smi_script += "if [[ \"$*\" == *--query-gpu* ]]; then\n";
  smi_script += "  echo 'NVIDIA H200, 580.159.04, 143771 MiB, 9.0, 1980 MHz, 3201 MHz'; exit 0\n";
  smi_script += "fi\n";
  smi_script += "echo '| NVIDIA-SMI 580.159.04  Driver Version: 580.159.04  CUDA Version: ";
  smi_script += driver_cuda;
  smi_script += "  |'\n";
  const auto smi = dir.write("bin/nvidia-smi", smi_script);
  std::filesystem::permissions(smi, std::filesystem::perms::owner_all);
  const auto binary = dir.write("bundle/bin/decodelab", "#!/bin/sh\nexit 0\n");
  std::filesystem::permissions(binary, std::filesystem::perms::owner_all);
  // The cuBLAS soname stands in as a library every Linux machine has, so that only the
  // driver's CUDA version decides.
  dir.write("bundle/bundle.env", "CUDA_RUNTIME_VERSION=13.0\nCUBLAS_SONAME=libc.so.6\nBUILT_ON=test\n");
  std::string environment = "PATH='";
  environment += (dir.path() / "bin").string();
  environment += ":/usr/bin:/bin' GPU_CHECK_BUNDLE='";
  environment += (dir.path() / "bundle").string();
  environment += "'";
  CommandResult result = decodelab::testing::run_command(
      {"bash", kScripts + "gpu-check.sh", "--only", "preflight", (dir.path() / "results").string()}, environment);
  result.out = decodelab::testing::read_text_file(dir.path() / "results" / "summary.md");
  return result;
}

}  // namespace

TEST_CASE("gpu-check preflight: a driver too old for the carried binaries stops the check", "[gpu_check]") {
  const TempDir dir;
  const CommandResult old_driver = preflight_with_driver(dir, "12.4");
  INFO(old_driver.out);
  CHECK(old_driver.exit_code == 1);
  CHECK(old_driver.out.find("| preflight | failed |") != std::string::npos);
  CHECK(old_driver.out.find("stop:") != std::string::npos);
  CHECK(old_driver.out.find("the carried binaries need a driver for CUDA 13.x, this one supports CUDA 12.4") !=
        std::string::npos);
  CHECK(old_driver.out.find("| cuda-tests | not run: preflight stopped the check |") != std::string::npos);

  const TempDir newer;
  const CommandResult good_driver = preflight_with_driver(newer, "13.0");
  INFO(good_driver.out);
  CHECK(good_driver.out.find("| preflight | passed |") != std::string::npos);
  CHECK(good_driver.out.find("carried binaries: usable") != std::string::npos);
  CHECK(good_driver.out.find("device: NVIDIA H200") != std::string::npos);
}
