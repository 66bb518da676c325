// Determinism: the same scenario, seed and backend give the same tokens and the same
// logits bit for bit, run after run and whatever the CPU thread count (the kernels keep
// one accumulation order however the work is split), with and without the bugs, in every
// dtype; and through the binary, two runs with --threads 1 and 2 write identical logits.
#include <catch2/catch.hpp>

#include <cstring>

#include "lab/run/runner.h"
#include "support/cli_runner.h"
#include "support/temp_dir.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

Scenario scenario_for(const TempDir& dir, const std::string& dtype, const std::string& bugs) {
  return load_scenario(dir.write("determinism.yaml",
                                 "model: lab-tiny\ndtype: " + dtype +
                                     "\nbackend: cpu\n"
                                     "workload: {requests: 3, batch_size: 2, prompt_tokens: 7, new_tokens: 6, seed: 42}\n"
                                     "run: {warmup: 0, repeats: 1}\nbugs: " +
                                     bugs + "\n"));
}

RunResult run_with_threads(const Scenario& scenario, int threads) {
  RunOptions options;
  options.threads = threads;
  return run_scenario(scenario, options);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("same scenario and seed: the same tokens and logits every run, with 1, 2 or 3 threads", "[determinism]") {
  struct Case {
    const char* dtype;
    const char* bugs;
  };
  const std::vector<Case> cases = {
      {"fp32", "{}"},
      {"fp16", "{}"},
      {"bf16", "{}"},
      {"fp16", "{no_kv_cache: true, non_contiguous: {mode: strided}, host_sync: {per: sequence}, fp32_ops: {scope: all}, "
               "sequential_generation: true}"},
      {"bf16", "{non_contiguous: true, fp32_ops: {scope: norms}}"},
  };
  for (const Case& test_case : cases) {
    INFO(test_case.dtype << " bugs " << test_case.bugs);
    const TempDir dir;
    const Scenario scenario = scenario_for(dir, test_case.dtype, test_case.bugs);
    const RunResult reference = run_with_threads(scenario, 1);
    REQUIRE(reference.tokens.size() == 3);
    for (int threads : {1, 2, 3}) {
      INFO("threads " << threads);
      const RunResult again = run_with_threads(scenario, threads);
      CHECK(again.tokens == reference.tokens);
      CHECK(same_bits(again.last_logits, reference.last_logits));
    }
  }
}

TEST_CASE("a different seed gives different prompts, hence different tokens", "[determinism]") {
  const TempDir dir;
  Scenario scenario = scenario_for(dir, "fp32", "{}");
  const RunResult first = run_with_threads(scenario, 2);
  scenario.workload.seed = 43;
  CHECK(run_with_threads(scenario, 2).tokens != first.tokens);
}

TEST_CASE("the binary writes identical logits with --threads 1 and --threads 2", "[determinism][cli]") {
  const TempDir dir;
  std::vector<std::string> files;
  for (const char* threads : {"1", "2"}) {
    files.push_back((dir.path() / (std::string("logits-") + threads + ".npy")).string());
    const CommandResult result =
        run_decodelab({"run", "quickstart", "--backend", "cpu", "--quiet", "--threads", threads, "--set",
                       "run={warmup: 0, repeats: 1}", "--set", "workload.new_tokens=5", "--dump-logits", files.back()});
    REQUIRE(result.exit_code == 0);
  }
  const std::string one = read_text_file(files[0]), two = read_text_file(files[1]);
  CHECK(one.size() > 128);
  CHECK(one == two);
}
