// The built `decodelab` binary as a user meets it: exit codes (0 ok, 2 bad input),
// one-line errors naming file, line and key, no output file left behind by a failed
// run, `list`, DECODELAB_HOME, a tiny `run` writing JSON and .npy files, and the
// practice loop: `lab --mystery` → `diagnose` → `lab --reveal`.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "lab/run/mystery.h"
#include "lab/npy.h"
#include "support/temp_dir.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using decodelab::testing::TempDir;

namespace {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string quoted(const std::string& text) {
  std::string result = "'";
  for (char c : text) result += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return result + "'";
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `prefix decodelab arguments...` through the shell; stdout and stderr go to files
// outside `dir`, so that the test can count what the command left in `dir`.
CommandResult run_decodelab(const std::vector<std::string>& arguments, const std::string& prefix = "") {
  static const TempDir capture;
  std::string command = prefix + quoted(DECODELAB_BINARY);
  for (const std::string& argument : arguments) command.append(" ").append(quoted(argument));
  const auto out = capture.path() / "stdout", err = capture.path() / "stderr";
  command += " >" + quoted(out.string()) + " 2>" + quoted(err.string());
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_text(out);
  result.err = read_text(err);
  return result;
}

std::string example(const char* name) {
  return (std::filesystem::path(DECODELAB_SOURCE_DIR) / "scenarios" / "examples" / name).string();
}

}  // namespace

TEST_CASE("cli: --version and a missing subcommand", "[cli]") {
  const CommandResult version = run_decodelab({"--version"});
  CHECK(version.exit_code == 0);
  CHECK_THAT(version.out, StartsWith("decodelab "));
  CHECK(run_decodelab({}).exit_code == 2);
  CHECK(run_decodelab({"frobnicate"}).exit_code == 2);
  CHECK(run_decodelab({"run", example("quickstart.yaml"), "--no-such-flag"}).exit_code == 2);
  CHECK(run_decodelab({"run", example("quickstart.yaml"), "--backend", "tpu"}).exit_code == 2);
}

TEST_CASE("cli: a malformed scenario exits 2 with file:line: key and leaves no output", "[cli]") {
  const TempDir dir;
  const auto scenario = dir.write("bad.yaml",
                                  "model: lab-tiny\n"
                                  "dtype: fp32\n"
                                  "workload:\n"
                                  "  requests: 2\n"
                                  "  batch_size: x\n"
                                  "  prompt_tokens: 4\n"
                                  "  new_tokens: 4\n");
  const CommandResult result = run_decodelab({"run", scenario.string(), "--json", (dir.path() / "out.json").string(),
                                              "--dump-logits", (dir.path() / "logits.npy").string()});
  CHECK(result.exit_code == 2);
  CHECK(result.err ==
        "decodelab: error: " + scenario.string() + ":5: workload.batch_size: expected an integer ≥ 1, got 'x'\n");
  CHECK(result.out.empty());
  CHECK(dir.entry_count() == 1);  // only the scenario: no output, no temporary
}

TEST_CASE("cli: bytes that are not YAML still give one clean line", "[cli]") {
  const TempDir dir;
  const auto scenario = dir.write("garbage.yaml", "model: \"\\\x1b\"\n\x01\x02\xff\n");
  const CommandResult result = run_decodelab({"run", scenario.string()});
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, StartsWith("decodelab: error: " + scenario.string() + ":1: not valid YAML"));
  CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  CHECK(result.err.find('\x1b') == std::string::npos);
}

TEST_CASE("cli: bad --set, missing files and bad sizes are input errors (exit 2)", "[cli]") {
  const TempDir dir;
  const CommandResult bad_set =
      run_decodelab({"run", example("quickstart.yaml"), "--set", "bugs.host_sync={per: step}"});
  CHECK(bad_set.exit_code == 2);
  CHECK_THAT(bad_set.err, Contains("bugs.host_sync.per: expected one of token | layer | sequence, got 'step'") &&
                              Contains("--set bugs.host_sync={per: step}"));

  const CommandResult missing = run_decodelab({"run", (dir.path() / "nope.yaml").string()});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Contains("nope.yaml") && Contains("no such scenario file"));

  const CommandResult size = run_decodelab({"run", example("quickstart.yaml"), "--max-memory", "lots"});
  CHECK(size.exit_code == 2);
  CHECK_THAT(size.err, Contains("--max-memory"));

  const CommandResult folder =
      run_decodelab({"run", example("quickstart.yaml"), "--json", (dir.path() / "no" / "r.json").string()});
  CHECK(folder.exit_code == 2);
  CHECK_THAT(folder.err, Contains("does not exist"));
}

TEST_CASE("cli: a plan above --max-memory exits 2 with the numbers and writes nothing", "[cli]") {
  const TempDir dir;
  const CommandResult result = run_decodelab(
      {"run", example("quickstart.yaml"), "--max-memory", "64KiB", "--json", (dir.path() / "r.json").string()});
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Contains("needs") && Contains("--max-memory allows 64.00 KiB"));
  CHECK(dir.entry_count() == 0);
}

TEST_CASE("cli: list shows scenarios, models with sizes, devices", "[cli]") {
  const TempDir dir;
  // From another working directory: the data root does not depend on it.
  const CommandResult result = run_decodelab({"list"}, "cd " + quoted(dir.path().string()) + " && ");
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("examples/quickstart.yaml") && Contains("lab-tiny") && Contains("llama-8b") &&
                             Contains("1.24B") && Contains("14.96 GiB") && Contains("Devices"));
}

TEST_CASE("cli: DECODELAB_HOME points list at another data folder", "[cli]") {
  const TempDir dir;
  dir.write("configs/models/mini.yaml",
            "description: a mini model\nvocab_size: 64\nhidden_size: 32\nintermediate_size: 48\n"
            "num_hidden_layers: 1\nnum_attention_heads: 2\nmax_position_embeddings: 32\n");
  dir.write("scenarios/mine.yaml", "description: my scenario\nmodel: mini\n");
  const CommandResult result = run_decodelab({"list"}, "DECODELAB_HOME=" + quoted(dir.path().string()) + " ");
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out,
             Contains("mine.yaml") && Contains("my scenario") && Contains("mini") && Contains("a mini model"));
  CHECK_THAT(result.out, !Contains("lab-tiny"));

  const CommandResult missing = run_decodelab({"list"}, "DECODELAB_HOME=" + quoted((dir.path() / "x").string()) + " ");
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Contains("DECODELAB_HOME"));
}

TEST_CASE("cli: a tiny run prints its row and writes JSON and logits", "[cli]") {
  const TempDir dir;
  const auto json_file = dir.path() / "result.json", logits_file = dir.path() / "logits.npy";
  const CommandResult result = run_decodelab({"run", "quickstart", "--backend", "cpu", "--threads", "1", "--set",
                                              "run={warmup: 0, repeats: 2}", "--set", "workload.new_tokens=4", "--json",
                                              json_file.string(), "--dump-logits", logits_file.string()});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("| backend | model |") && Contains("| cpu | lab-tiny | fp32 | 4 | 16 | 4 |"));
  CHECK(dir.entry_count() == 2);

  const nlohmann::json json = nlohmann::json::parse(read_text(json_file));
  for (const char* key :
       {"schema_version", "scenario", "backend", "device", "model", "workload", "bugs", "metrics", "outputs"}) {
    CHECK(json.contains(key));
  }
  CHECK(json["backend"] == "cpu");
  CHECK(json["model"]["name"] == "lab-tiny");
  CHECK(json["model"]["params"] == 500352);
  CHECK(json["model"]["weight_bytes"] == 4 * 500352);
  CHECK(json["model"]["dtype"] == "fp32");
  CHECK(json["workload"]["requests"] == 4);
  CHECK(json["workload"]["new_tokens"] == 4);
  CHECK(json["bugs"]["host_sync"] == false);
  for (const char* metric :
       {"decode_tokens_per_s", "decode_wall_ms_per_step", "decode_busy_ms_per_step", "ttft_ms", "end_to_end_s",
        "decode_bandwidth_gbps"}) {
    REQUIRE(json["metrics"][metric].is_number());
    CHECK(json["metrics"][metric].get<double>() > 0);
  }
  CHECK(json["repeats"].size() == 2);
  REQUIRE(json["outputs"].size() == 4);
  for (const auto& tokens : json["outputs"]) CHECK(tokens.size() == 4);

  const decodelab::NpyMatrix logits = decodelab::read_npy(logits_file);
  CHECK(logits.shape == std::vector<int64_t>{4, 512});
  // The last token of each request is the argmax of the logits it came from.
  for (int request = 0; request < 4; ++request) {
    const float* row = logits.values.data() + request * 512;
    const int argmax = static_cast<int>(std::max_element(row, row + 512) - row);
    CHECK(json["outputs"][request].back() == argmax);
  }
}

TEST_CASE("cli: a mystery's trace, diagnosed blind, matches what --reveal tells", "[cli][mystery][diagnosis]") {
  // A small lab-tiny case with at least two hidden bugs.
  uint64_t seed = 0;
  for (;; ++seed) {
    const decodelab::MysteryCase mystery = decodelab::mystery_case(seed);
    const int hidden = mystery.bugs.no_kv_cache + mystery.bugs.non_contiguous + mystery.bugs.host_sync +
                       mystery.bugs.fp32_ops + mystery.bugs.sequential_generation;
    if (mystery.model == "lab-tiny" && hidden >= 2 && mystery.requests * mystery.new_tokens <= 200) break;
  }
  const TempDir dir;
  const auto trace = dir.path() / "mystery.json", findings = dir.path() / "findings.json";
  const CommandResult run = run_decodelab({"lab", "--mystery", "--seed", std::to_string(seed), "--trace",
                                           trace.string(), "--backend", "cpu", "--threads", "1"});
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.out, Contains("mystery " + std::to_string(seed)) && Contains("--reveal --seed " + std::to_string(seed)));
  for (const char* name : {"no_kv_cache", "non_contiguous", "host_sync", "fp32_ops", "sequential_generation"})
    CHECK_THAT(run.out + read_text(trace), !Contains(name));  // neither the output nor the trace names a bug

  const CommandResult diagnosis = run_decodelab({"diagnose", trace.string(), "--json", findings.string()});
  INFO(diagnosis.out << diagnosis.err);
  REQUIRE(diagnosis.exit_code == 0);
  const nlohmann::json json = nlohmann::json::parse(read_text(findings));
  const CommandResult reveal = run_decodelab({"lab", "--reveal", "--seed", std::to_string(seed)});
  REQUIRE(reveal.exit_code == 0);
  INFO(reveal.out);
  REQUIRE(json["bugs"].size() >= 2);
  for (const auto& bug : json["bugs"]) {
    const std::string name = bug["name"];
    CHECK_THAT(reveal.out, Contains("* " + name));
    CHECK_THAT(diagnosis.out, Contains(name));
  }
  const size_t revealed = static_cast<size_t>(std::count(reveal.out.begin(), reveal.out.end(), '*'));
  CHECK(revealed == json["bugs"].size());
}

TEST_CASE("cli: diagnose and the practice flags refuse bad input with exit 2", "[cli][diagnosis]") {
  const TempDir dir;
  CHECK(run_decodelab({"diagnose", (dir.path() / "missing.json").string()}).exit_code == 2);
  const auto not_a_trace = dir.write("other.json", "{\"traceEvents\": []}");
  const CommandResult foreign = run_decodelab({"diagnose", not_a_trace.string()});
  CHECK(foreign.exit_code == 2);
  CHECK_THAT(foreign.err, Contains("otherData"));
  CHECK(run_decodelab({"diagnose"}).exit_code == 2);
  CHECK(run_decodelab({"lab", "--reveal"}).exit_code == 2);
  CHECK(run_decodelab({"lab", "--seed", "3"}).exit_code == 2);
  CHECK(run_decodelab({"lab", "--mystery", "--reveal", "--seed", "3"}).exit_code == 2);
  CHECK(run_decodelab({"lab", "--mystery", "--json", (dir.path() / "x.json").string()}).exit_code == 2);
  CHECK(run_decodelab({"lab", "--reveal", "--seed", "3", "--trace", (dir.path() / "t.json").string()}).exit_code == 2);
  CHECK(dir.entry_count() == 1);
}

namespace {

std::string nsight_fixture(const char* tool, const char* name) {
  return (std::filesystem::path(DECODELAB_SOURCE_DIR) / "tests" / "fixtures" / tool / name).string();
}

}  // namespace

TEST_CASE("cli: ncu reads an export, writes JSON, and refuses a broken one with exit 2", "[cli]") {
  const TempDir dir;
  const auto json_file = dir.path() / "ncu.json";
  const CommandResult result =
      run_decodelab({"ncu", nsight_fixture("ncu", "seed_kernels_raw.csv"), "--json", json_file.string()});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("688 TFLOP/s at 2000 FLOP/B; roof 989 TFLOP/s -> 70% of roofline"));
  const nlohmann::json json = nlohmann::json::parse(read_text(json_file));
  CHECK(json["kernels"].size() == 5);

  const auto broken = dir.write("broken.csv", "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"0\",\"k\"\n");
  const CommandResult refused = run_decodelab({"ncu", broken.string()});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Contains("broken.csv:2: column 3 \"gpu__time_duration.sum\": the row ends after 2 of 3 columns"));
  CHECK(run_decodelab({"ncu", nsight_fixture("ncu", "seed_kernels_raw.csv"), "--device", "tpu-v9"}).exit_code == 2);
}

TEST_CASE("cli: nsys reads several reports and filters by NVTX range", "[cli]") {
  const CommandResult result = run_decodelab({"nsys", nsight_fixture("nsys", "decode_cuda_gpu_trace.csv"),
                                              nsight_fixture("nsys", "decode_cuda_api_trace.csv"),
                                              nsight_fixture("nsys", "decode_nvtx_pushpop_trace.csv"), "--nvtx",
                                              "step [0-9]+"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("NVTX ranges matching \"step [0-9]+\": 3"));
  CHECK_THAT(result.out, Contains("verdict: overhead-bound"));

  const CommandResult no_match =
      run_decodelab({"nsys", nsight_fixture("nsys", "decode_cuda_gpu_trace.csv"), "--nvtx", "step [0-9]+"});
  CHECK(no_match.exit_code == 2);
  CHECK_THAT(no_match.err, Contains("nvtx_pushpop_trace"));
}
