// scripts/gpu_check_report.py, the readings of scripts/gpu-check.sh: each check must be
// able to fail. Fed small JSON documents shaped like decodelab's (run, roofline, lab), it
// passes what holds and fails, with exit 1 and the reason, what does not: a bug that is
// not slower or changed the tokens, an implausible bandwidth share, differing tokens; and
// the summary fails a check whose stage failed or found no time.
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/temp_dir.h"

using decodelab::testing::TempDir;

namespace {

struct Outcome {
  int status = -1;
  std::string output;
};

Outcome report(const TempDir& dir, const std::string& arguments) {
  const std::string script = std::string(DECODELAB_SOURCE_DIR) + "/scripts/gpu_check_report.py";
  const std::string log = (dir.path() / "report.log").string();
  const std::string command = "cd '" + dir.path().string() + "' && python3 '" + script + "' " + arguments + " >'" + log +
                              "' 2>&1";
  const int status = std::system(command.c_str());
  Outcome outcome;
  outcome.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::ostringstream text;
  text << in.rdbuf();
  outcome.output = text.str();
  return outcome;
}

std::string lab_row(const std::string& bug, double slowdown, bool same_tokens) {
  return R"({"bug": ")" + bug + R"(", "bugs": ")" + bug + R"(", "slowdown": )" + std::to_string(slowdown) +
         R"(, "decode_slowdown": 1.5, "same_tokens": )" + (same_tokens ? "true" : "false") +
         R"(, "verdict": "-", "backend": "cuda", "device": "test"})";
}

std::string run_json(double gbps, bool graphs, const std::string& tokens) {
  return R"({"model": {"name": "llama-1b", "dtype": "bf16"}, "device": "test",
             "scenario": {"workload": {"batch_size": 1}, "run": {"cuda_graphs": )" +
         std::string(graphs ? "true" : "false") + R"(}},
             "metrics": {"achieved_bandwidth_gbps": )" + std::to_string(gbps) + R"(, "decode_ms_per_step": 1.0},
             "metrics_spread": {"achieved_bandwidth_gbps": 0.01}, "outputs": )" + tokens + "}";
}

}  // namespace

TEST_CASE("gpu-check readings: the lab check fails a bug that is not slower or changed tokens", "[gpu_check]") {
  const TempDir dir;
  dir.write("good.json", "[" + lab_row("host_sync", 3.0, true) + "," + lab_row("fp32_ops", 1.4, true) + "]");
  dir.write("faster.json", "[" + lab_row("host_sync", 3.0, true) + "," + lab_row("fp32_ops", 0.97, true) + "]");
  dir.write("tokens.json", "[" + lab_row("host_sync", 3.0, false) + "]");
  dir.write("partial.json", R"({"complete": false, "rows": [)" + lab_row("host_sync", 3.0, true) + "]}");

  const Outcome good = report(dir, "lab good.json --out good.figures.json");
  INFO(good.output);
  CHECK(good.status == 0);
  CHECK(std::ifstream(dir.path() / "good.figures.json").good());
  const Outcome faster = report(dir, "lab faster.json");
  CHECK(faster.status == 1);
  CHECK(faster.output.find("fp32_ops: slowdown 0.970x, not above 1") != std::string::npos);
  const Outcome tokens = report(dir, "lab tokens.json");
  CHECK(tokens.status == 1);
  CHECK(tokens.output.find("changed the generated tokens") != std::string::npos);
  CHECK(report(dir, "lab partial.json").status == 2);  // an unfinished lab proves nothing
  CHECK(report(dir, "lab missing.json").status == 2);
}

TEST_CASE("gpu-check readings: bandwidth shares of the copy bandwidth, implausible ones fail", "[gpu_check]") {
  const TempDir dir;
  dir.write("roofline.json", R"({"copy": {"bandwidth_gbps": 4000.0, "timing": {"spread": 0.01}},
                                  "read": {"bandwidth_gbps": 3900.0}})");
  dir.write("off.json", run_json(3000.0, false, "[[1, 2]]"));
  dir.write("on.json", run_json(3300.0, true, "[[1, 2]]"));
  dir.write("too-fast.json", run_json(6000.0, true, "[[1, 2]]"));

  const Outcome good = report(dir, "bandwidth --roofline roofline.json --run 'off=off.json' --run 'on=on.json' --out f.json");
  INFO(good.output);
  CHECK(good.status == 0);
  CHECK(good.output.find("| off | 1.000 | 3000.0 | 75.0% |") != std::string::npos);
  CHECK(good.output.find("| on | 1.000 | 3300.0 | 82.5% |") != std::string::npos);
  const Outcome fast = report(dir, "bandwidth --roofline roofline.json --run 'fast=too-fast.json'");
  CHECK(fast.status == 1);
  CHECK(fast.output.find("implausible") != std::string::npos);
}

TEST_CASE("gpu-check readings: differing tokens fail", "[gpu_check]") {
  const TempDir dir;
  dir.write("a.json", run_json(1.0, false, "[[1, 2, 3], [4, 5, 6]]"));
  dir.write("b.json", run_json(1.0, true, "[[1, 2, 3], [4, 5, 6]]"));
  dir.write("c.json", run_json(1.0, true, "[[1, 2, 3], [4, 9, 6]]"));
  CHECK(report(dir, "tokens a.json b.json").status == 0);
  const Outcome differ = report(dir, "tokens a.json c.json");
  CHECK(differ.status == 1);
  CHECK(differ.output.find("request 1, first at token 1") != std::string::npos);
}

TEST_CASE("gpu-check summary: a failed or unrun required stage fails the check", "[gpu_check]") {
  const TempDir dir;
  dir.write("work/environment.txt", "device=test\n");
  dir.write("work/cuda-tests.claims", "CHECKED the [cuda] tests\n");
  dir.write("work/stages.tsv", "preflight\tpassed\t1\t1\ncuda-tests\tpassed\t10\t1\nnsys\tskipped\t0\t1\n"
                               "memcheck\tnot run: out of time\t0\t0\n");
  const Outcome passed = report(dir, "summary --work work --results . --mode real");
  INFO(passed.output);
  CHECK(passed.status == 0);
  CHECK(passed.output.find("| cuda-tests | passed | 10 | the [cuda] tests | - |") != std::string::npos);

  dir.write("work/stages.tsv", "preflight\tpassed\t1\t1\nlab\tnot run: out of time\t0\t1\n");
  CHECK(report(dir, "summary --work work --results . --mode real").status == 1);
  dir.write("work/stages.tsv", "preflight\tpassed\t1\t1\nlab\tfailed\t3\t1\n");
  const Outcome failed = report(dir, "summary --work work --results . --mode dry-run");
  CHECK(failed.status == 1);
  CHECK(failed.output.find("nothing here is a GPU result") != std::string::npos);
}

namespace {

// scripts/gpu-check.sh (not a dry run) on this machine with a stand-in nvidia-smi that
// reports a driver for CUDA `driver_cuda`, and a carried bundle built for CUDA 13.0.
Outcome preflight_with_driver(const TempDir& dir, const std::string& driver_cuda) {
  const auto smi = dir.write("bin/nvidia-smi",
                             "#!/usr/bin/env bash\n"
                             "if [[ \"$*\" == *--query-gpu* ]]; then echo 'NVIDIA H200, 580.159.04, 143771 MiB, 9.0, 1980 MHz, 3201 MHz'; exit 0; fi\n"
                             "echo '| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: " + driver_cuda + "     |'\n");
  std::filesystem::permissions(smi, std::filesystem::perms::owner_all);
  const auto binary = dir.write("bundle/bin/decodelab", "#!/bin/sh\nexit 0\n");
  std::filesystem::permissions(binary, std::filesystem::perms::owner_all);
  // The cuBLAS soname stands in as a library every Linux machine has, so that only the
  // driver's CUDA version decides.
  dir.write("bundle/bundle.env", "CUDA_RUNTIME_VERSION=13.0\nCUBLAS_SONAME=libc.so.6\nBUILT_ON=test\n");
  const std::string script = std::string(DECODELAB_SOURCE_DIR) + "/scripts/gpu-check.sh";
  const std::string log = (dir.path() / "check.log").string();
  const std::string command = "PATH='" + (dir.path() / "bin").string() + ":/usr/bin:/bin' GPU_CHECK_BUNDLE='" +
                              (dir.path() / "bundle").string() + "' bash '" + script + "' --only preflight '" +
                              (dir.path() / "results").string() + "' >'" + log + "' 2>&1";
  const int status = std::system(command.c_str());
  Outcome outcome;
  outcome.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(dir.path() / "results" / "summary.md");
  std::ostringstream text;
  text << in.rdbuf();
  outcome.output = text.str();
  return outcome;
}

}  // namespace

TEST_CASE("gpu-check preflight: a driver too old for the carried binaries stops the check", "[gpu_check]") {
  const TempDir dir;
  const Outcome old_driver = preflight_with_driver(dir, "12.4");
  INFO(old_driver.output);
  CHECK(old_driver.status == 1);
  CHECK(old_driver.output.find("| preflight | failed |") != std::string::npos);
  CHECK(old_driver.output.find("stop:") != std::string::npos);
  CHECK(old_driver.output.find("the carried binaries need a driver for CUDA 13.x, this one supports CUDA 12.4") !=
        std::string::npos);
  CHECK(old_driver.output.find("| cuda-tests | not run: preflight stopped the check |") != std::string::npos);

  const TempDir newer;
  const Outcome good_driver = preflight_with_driver(newer, "13.0");
  INFO(good_driver.output);
  CHECK(good_driver.output.find("| preflight | passed |") != std::string::npos);
  CHECK(good_driver.output.find("carried binaries: usable") != std::string::npos);
  CHECK(good_driver.output.find("device: NVIDIA H200") != std::string::npos);
}
