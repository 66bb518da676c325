// The bad-input catalogue, end to end through the `decodelab` binary: every way a person
// can hand the lab a broken scenario, model file, checkpoint or trace. Each case must
// exit 2 with exactly one line on stderr that names the file (and the line, key or tensor)
// and says what was expected, print nothing on stdout, and leave no output file — not
// even a temporary — in the folder its --json points to.
// Traces go through `decodelab diagnose` when the binary has it; before that command is
// merged they are read in-process by the same reader (profiling/trace/chrome_trace.h), and the
// test says so.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "engine/base/errors.h"
#include "profiling/trace/chrome_trace.h"
#include "support/cli_runner.h"
#include "support/safetensors_writer.h"
#include "support/temp_dir.h"
#include "tests/support/engine_fixtures.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

namespace fs = std::filesystem;

// A valid scenario for lab-tiny; a case replaces or adds lines. Line numbers as written.
const char* const kScenario =
    "model: lab-tiny\n"                                                             // 1
    "dtype: fp16\n"                                                                 // 2
    "backend: cpu\n"                                                                // 3
    "workload: {requests: 2, batch_size: 2, prompt_tokens: 4, new_tokens: 3}\n"     // 4
    "run: {warmup: 0, repeats: 1}\n";                                               // 5

// A valid model file: lab-tiny's shape with a short context. Line numbers as written.
const char* const kModel =
    "vocab_size: 64\n"               // 1
    "hidden_size: 32\n"              // 2
    "intermediate_size: 48\n"        // 3
    "num_hidden_layers: 1\n"         // 4
    "num_attention_heads: 4\n"       // 5
    "num_key_value_heads: 2\n"       // 6
    "max_position_embeddings: 32\n";  // 7

std::string replace_line(const std::string& text, int line, const std::string& replacement) {
  size_t begin = 0;
  for (int i = 1; i < line; ++i) begin = text.find('\n', begin) + 1;
  const size_t end = text.find('\n', begin);
  return text.substr(0, begin) + replacement + text.substr(end);
}

// What one case hands the binary and what the one error line must contain.
struct Prepared {
  std::vector<std::string> arguments;  // the command; the --json option is appended
  std::vector<std::string> expected;   // substrings of the error line
};

struct BadInput {
  const char* name;
  std::function<Prepared(const TempDir&)> prepare;
};

Prepared run_scenario_text(const TempDir& dir, const std::string& text, std::vector<std::string> expected) {
  const fs::path scenario = dir.write("scenario.yaml", text);
  for (std::string& part : expected) {
    if (part.rfind(":", 0) == 0) part = scenario.string() + part;  // ":4: workload..." -> "<file>:4: workload..."
  }
  return {{"run", scenario.string()}, expected};
}

Prepared run_model_text(const TempDir& dir, const std::string& model, std::vector<std::string> expected) {
  const fs::path file = dir.write("model.yaml", model);
  dir.write("scenario.yaml", replace_line(kScenario, 1, "model: model.yaml"));
  for (std::string& part : expected) {
    if (part.rfind(":", 0) == 0) part = file.string() + part;
  }
  return {{"run", (dir.path() / "scenario.yaml").string()}, expected};
}

ModelConfig small_config() {
  ModelConfig config = lab_tiny_config();
  config.max_position_embeddings = 32;
  return config;
}

// A checkpoint directory `ckpt` written with `options`, then `damage` applied to its
// files; the scenario runs it. Expected substrings may start with "@name" for a path
// inside the checkpoint ("@model.safetensors") or "@:" for the directory itself.
Prepared run_checkpoint(const TempDir& dir, CheckpointOptions options, std::function<void(const fs::path&)> damage,
                        std::vector<std::string> expected) {
  const fs::path checkpoint = dir.path() / "ckpt";
  options.dtype = DType::F16;
  write_checkpoint(checkpoint, small_config(), options);
  if (damage) damage(checkpoint);
  dir.write("scenario.yaml", replace_line(kScenario, 1, "model: ckpt"));
  for (std::string& part : expected) {
    if (part.rfind("@:", 0) == 0) {
      part = checkpoint.string() + part.substr(1);  // the directory itself
    } else if (part.rfind("@", 0) == 0) {
      part = (checkpoint / part.substr(1)).string();
    }
  }
  return {{"run", (dir.path() / "scenario.yaml").string()}, expected};
}

CheckpointOptions with_defect(Defect defect, const std::string& target) {
  CheckpointOptions options;
  options.defect = defect;
  options.defect_target = target;
  return options;
}

// Rewrites a checkpoint's single safetensors file with its header edited.
void edit_header(const fs::path& checkpoint, const std::function<void(SafetensorsImage&)>& edit) {
  std::vector<HostTensor> tensors = llama_tensors(small_config(), DType::F16, 1);
  SafetensorsImage image = make_safetensors_image(tensors);
  edit(image);
  image.write(checkpoint / "model.safetensors");
}

// A real trace of a tiny run, written by the binary.
fs::path tiny_trace(const TempDir& dir) {
  const fs::path trace = dir.path() / "trace.json";
  const CommandResult written =
      run_decodelab({"run", "quickstart", "--backend", "cpu", "--quiet", "--set", "run={warmup: 0, repeats: 1}",
                     "--set", "workload={requests: 1, batch_size: 1, prompt_tokens: 2, new_tokens: 2}", "--trace",
                     trace.string()});
  if (written.exit_code != 0) throw std::runtime_error("cannot write a trace: " + written.err);
  return trace;
}

Prepared diagnose_file(const fs::path& trace, std::vector<std::string> expected) {
  expected.insert(expected.begin(), trace.string());
  return {{"diagnose", trace.string()}, expected};
}

std::vector<BadInput> catalogue() {
  return {
      // --- scenario YAML ---
      {"scenario: YAML syntax error",
       [](const TempDir& dir) {
         return run_scenario_text(dir, replace_line(kScenario, 4, "workload: {requests: 2, batch_size: [2"),
                                  {":5: not valid YAML"});
       }},
      {"scenario: unknown key",
       [](const TempDir& dir) {
         return run_scenario_text(dir, std::string(kScenario) + "repeat: 3\n",
                                  {":6: repeat: unknown key (expected one of name, description, model, dtype"});
       }},
      {"scenario: wrong type",
       [](const TempDir& dir) {
         return run_scenario_text(
             dir, replace_line(kScenario, 4, "workload: {requests: 2, batch_size: two, prompt_tokens: 4, new_tokens: 3}"),
             {":4: workload.batch_size: expected an integer ≥ 1, got 'two'"});
       }},
      {"scenario: negative size",
       [](const TempDir& dir) {
         return run_scenario_text(
             dir, replace_line(kScenario, 4, "workload: {requests: -2, batch_size: 2, prompt_tokens: 4, new_tokens: 3}"),
             {":4: workload.requests: expected an integer ≥ 1, got '-2'"});
       }},
      {"scenario: zero size",
       [](const TempDir& dir) {
         return run_scenario_text(
             dir, replace_line(kScenario, 4, "workload: {requests: 2, batch_size: 2, prompt_tokens: 4, new_tokens: 0}"),
             {":4: workload.new_tokens: expected an integer ≥ 1, got '0'"});
       }},
      {"scenario: prompt + new tokens beyond the context",
       [](const TempDir& dir) {
         return run_scenario_text(
             dir,
             replace_line(kScenario, 4, "workload: {requests: 2, batch_size: 2, prompt_tokens: 1000, new_tokens: 100}"),
             {":4: workload.new_tokens: prompt (1000) + new_tokens (100) = 1100 exceeds lab-tiny's "
              "max_position_embeddings (1024)"});
       }},
      {"scenario: prompt id outside the vocab",
       [](const TempDir& dir) {
         return run_scenario_text(
             dir, replace_line(kScenario, 4, "workload: {requests: 2, batch_size: 2, prompt_ids: [1, 512], new_tokens: 3}"),
             {":4: workload.prompt_ids[1]: expected an integer", "got '512'"});
       }},
      {"scenario: a bug variant that does not exist",
       [](const TempDir& dir) {
         return run_scenario_text(dir, std::string(kScenario) + "bugs: {host_sync: {per: step}}\n",
                                  {":6: bugs.host_sync.per: expected one of token | layer | sequence, got 'step'"});
       }},
      {"scenario: a bug that does not exist",
       [](const TempDir& dir) {
         return run_scenario_text(dir, std::string(kScenario) + "bugs: {kv_cache: true}\n",
                                  {":6: bugs.kv_cache: unknown key", "did you mean 'no_kv_cache'"});
       }},
      {"scenario: fp32_ops on an fp32 model",
       [](const TempDir& dir) {
         return run_scenario_text(dir, replace_line(kScenario, 2, "dtype: fp32") + "bugs: {fp32_ops: true}\n",
                                  {":6: bugs.fp32_ops: fp32_ops runs ops of a half-precision model in fp32, but dtype "
                                   "is fp32"});
       }},
      {"scenario: unknown dtype",
       [](const TempDir& dir) {
         return run_scenario_text(dir, replace_line(kScenario, 2, "dtype: fp8"),
                                  {":2: dtype: expected one of fp32 | fp16 | bf16, got 'fp8'"});
       }},
      {"scenario: unknown model",
       [](const TempDir& dir) {
         return run_scenario_text(dir, replace_line(kScenario, 1, "model: lab-tiyn"),
                                  {":1: model: no model 'lab-tiyn'", "did you mean 'lab-tiny'"});
       }},
      {"scenario: absurd --threads",
       [](const TempDir& dir) {
         Prepared prepared = run_scenario_text(dir, kScenario, {"--threads: expected an integer from 0 to 1024, got '100000'"});
         prepared.arguments.insert(prepared.arguments.end(), {"--threads", "100000"});
         return prepared;
       }},
      // --- model YAML ---
      {"model: YAML syntax error",
       [](const TempDir& dir) { return run_model_text(dir, replace_line(kModel, 3, "intermediate_size: [48"), {":"}); }},
      {"model: unknown key",
       [](const TempDir& dir) {
         return run_model_text(dir, replace_line(kModel, 2, "hidden_sise: 32"),
                               {":2: hidden_sise: unknown key", "did you mean 'hidden_size'"});
       }},
      {"model: wrong type",
       [](const TempDir& dir) {
         return run_model_text(dir, replace_line(kModel, 2, "hidden_size: wide"),
                               {":2: hidden_size: expected an integer ≥ 1, got 'wide'"});
       }},
      {"model: zero size",
       [](const TempDir& dir) {
         return run_model_text(dir, replace_line(kModel, 4, "num_hidden_layers: 0"),
                               {":4: num_hidden_layers: expected an integer ≥ 1, got '0'"});
       }},
      {"model: negative size",
       [](const TempDir& dir) {
         return run_model_text(dir, replace_line(kModel, 1, "vocab_size: -64"),
                               {":1: vocab_size: expected an integer ≥ 1, got '-64'"});
       }},
      {"model: heads do not divide the hidden size",
       [](const TempDir& dir) {
         return run_model_text(dir, replace_line(kModel, 2, "hidden_size: 30"),
                               {":5: num_attention_heads: num_attention_heads (4) must divide hidden_size (30)"});
       }},
      {"model: KV heads do not divide the heads",
       [](const TempDir& dir) {
         return run_model_text(dir, replace_line(kModel, 6, "num_key_value_heads: 3"),
                               {":6: num_key_value_heads: num_key_value_heads (3) must divide num_attention_heads (4)"});
       }},
      {"model: too large to plan",
       [](const TempDir& dir) {
         return run_model_text(dir,
                               replace_line(replace_line(kModel, 2, "hidden_size: 1073741824"), 3,
                                            "intermediate_size: 1073741824"),
                               {":2: hidden_size: hidden_size (1073741824) and the other sizes give", "parameters"});
       }},
      // --- Hugging Face checkpoints ---
      {"checkpoint: config.json is not JSON",
       [](const TempDir& dir) {
         return run_checkpoint(
             dir, {},
             [](const fs::path& ckpt) {
               std::ofstream(ckpt / "config.json", std::ios::trunc) << "{\"vocab_size\": 512,\n  \"hidden_size\": }";
             },
             {"@config.json:2: not valid JSON"});
       }},
      {"checkpoint: config.json with a number too large for a double",
       [](const TempDir& dir) {
         return run_checkpoint(
             dir, {},
             [](const fs::path& ckpt) {
               std::ofstream(ckpt / "config.json", std::ios::trunc) << "{\"vocab_size\": 512,\n  \"rope_theta\": 1e400}";
             },
             {"@config.json: not valid JSON: number overflow parsing '1e400'"});
       }},
      {"checkpoint: config.json KV heads do not divide the heads",
       [](const TempDir& dir) {
         return run_checkpoint(
             dir, {},
             [](const fs::path& ckpt) {
               nlohmann::json config = hf_config_json(small_config(), DType::F16);
               config["num_key_value_heads"] = 3;
               write_json(ckpt / "config.json", config);
             },
             {"@config.json:", "num_key_value_heads (3) must divide num_attention_heads (4)"});
       }},
      {"checkpoint: truncated safetensors",
       [](const TempDir& dir) {
         return run_checkpoint(dir, with_defect(Defect::Truncated, "lm_head.weight"), nullptr,
                               {"@model.safetensors: lm_head.weight: data_offsets", "(file truncated?)"});
       }},
      {"checkpoint: header length beyond the file",
       [](const TempDir& dir) {
         return run_checkpoint(dir, with_defect(Defect::HeaderLengthBeyondFile, "model.norm.weight"), nullptr,
                               {"@model.safetensors: header: header length", "exceeds the"});
       }},
      {"checkpoint: overlapping offsets",
       [](const TempDir& dir) {
         return run_checkpoint(dir, with_defect(Defect::OverlappingOffsets, "model.layers.0.self_attn.k_proj.weight"),
                               nullptr,
                               {"@model.safetensors: model.layers.0.self_attn.k_proj.weight: data_offsets", "overlap"});
       }},
      {"checkpoint: offsets beyond the data",
       [](const TempDir& dir) {
         return run_checkpoint(
             dir, {},
             [](const fs::path& ckpt) {
               edit_header(ckpt, [](SafetensorsImage& image) {
                 nlohmann::json& offsets = image.header["model.norm.weight"]["data_offsets"];
                 offsets = {offsets[0].get<uint64_t>() + (1u << 20), offsets[1].get<uint64_t>() + (1u << 20)};
               });
             },
             {"@model.safetensors: model.norm.weight: data_offsets", "exceed the"});
       }},
      {"checkpoint: a tensor's shape disagrees with its bytes",
       [](const TempDir& dir) {
         return run_checkpoint(dir, with_defect(Defect::ShapeMismatchesBytes, "model.layers.0.mlp.up_proj.weight"),
                               nullptr, {"@model.safetensors: model.layers.0.mlp.up_proj.weight: data_offsets", "needs"});
       }},
      {"checkpoint: a tensor of an unsupported dtype",
       [](const TempDir& dir) {
         return run_checkpoint(dir, with_defect(Defect::UnsupportedDtype, "model.layers.0.mlp.up_proj.weight"), nullptr,
                               {"@model.safetensors: model.layers.0.mlp.up_proj.weight: dtype \"I16\" is not supported"});
       }},
      {"checkpoint: a tensor with the wrong shape",
       [](const TempDir& dir) {
         return run_checkpoint(
             dir, with_defect(Defect::ShapeDisagreesWithConfig, "model.layers.0.self_attn.o_proj.weight"), nullptr,
             {"@model.safetensors: model.layers.0.self_attn.o_proj.weight: shape [129,128] in the checkpoint, but "
              "config.json implies [128,128]"});
       }},
      {"checkpoint: a missing tensor",
       [](const TempDir& dir) {
         return run_checkpoint(dir, with_defect(Defect::MissingTensor, "model.layers.0.post_attention_layernorm.weight"),
                               nullptr,
                               {"@: model.layers.0.post_attention_layernorm.weight: tensor missing (searched "
                                "model.safetensors)"});
       }},
      {"checkpoint: config.json disagrees with the tensors",
       [](const TempDir& dir) {
         return run_checkpoint(
             dir, {},
             [](const fs::path& ckpt) {
               nlohmann::json config = hf_config_json(small_config(), DType::F16);
               config["intermediate_size"] = 256;
               write_json(ckpt / "config.json", config);
             },
             {"@model.safetensors: model.layers.0.mlp.gate_proj.weight: shape [352,128] in the checkpoint, but "
              "config.json implies [256,128]"});
       }},
      {"checkpoint: an empty safetensors file",
       [](const TempDir& dir) {
         return run_checkpoint(
             dir, {}, [](const fs::path& ckpt) { std::ofstream(ckpt / "model.safetensors", std::ios::trunc); },
             {"@model.safetensors: header: file is 0 bytes"});
       }},
      {"checkpoint: a header that is not JSON",
       [](const TempDir& dir) {
         return run_checkpoint(
             dir, {}, [](const fs::path& ckpt) { edit_header(ckpt, [](SafetensorsImage& image) { image.header_length_override = 5; }); },
             {"@model.safetensors: header: is not valid JSON"});
       }},
      // --- traces ---
      {"trace: truncated",
       [](const TempDir& dir) {
         const fs::path trace = tiny_trace(dir);
         const std::string text = read_text_file(trace);
         std::ofstream(trace, std::ios::trunc) << text.substr(0, text.size() / 2);
         return diagnose_file(trace, {"not valid JSON"});
       }},
      {"trace: a Chrome trace from another tool",
       [](const TempDir& dir) {
         const fs::path trace = dir.write("browser.json",
                                          "{\"traceEvents\": [{\"name\": \"Layout\", \"cat\": \"blink\", \"ph\": "
                                          "\"X\", \"ts\": 1, \"dur\": 2, \"pid\": 1, \"tid\": 1}]}\n");
         return diagnose_file(trace, {"otherData", "a trace written by decodelab", "or by torch.profiler"});
       }},
      {"trace: a torch.profiler event of the wrong shape",
       [](const TempDir& dir) {
         const fs::path trace = dir.write("torch.json",
                                          "{\"traceEvents\": [{\"name\": \"aten::mm\", \"cat\": \"cpu_op\", \"ph\": "
                                          "\"X\", \"ts\": 1, \"dur\": \"2\", \"pid\": 1, \"tid\": 1}]}\n");
         return diagnose_file(trace, {"traceEvents[0].dur: expected a number"});
       }},
      {"trace: not a trace at all",
       [](const TempDir& dir) {
         return diagnose_file(dir.write("list.json", "[1, 2, 3]\n"), {"expected a JSON object with traceEvents"});
       }},
      {"trace: a number too large for a double",
       [](const TempDir& dir) {
         return diagnose_file(dir.write("huge.json", "{\"traceEvents\": [{\"ts\": 1e999}]}\n"),
                              {"not valid JSON: number overflow parsing '1e999'"});
       }},
      {"trace: an event of the wrong shape",
       [](const TempDir& dir) {
         const fs::path trace = tiny_trace(dir);
         nlohmann::json json = nlohmann::json::parse(read_text_file(trace));
         for (nlohmann::json& event : json["traceEvents"]) {
           if (event.value("ph", "") == "X") {
             event["dur"] = "long";
             break;
           }
         }
         std::ofstream(trace, std::ios::trunc) << json.dump();
         return diagnose_file(trace, {"traceEvents[", ".dur: expected a number"});
       }},
  };
}

// Whether the binary's own help lists a subcommand (`X --help` would print the app's help
// and exit 0 even when there is no X).
bool binary_has_command(const std::string& command) {
  return run_decodelab({"--help"}).out.find("\n  " + command + " ") != std::string::npos;
}

}  // namespace

TEST_CASE("bad input: every case exits 2 with one line naming the file, and writes nothing", "[bad_input][cli]") {
  const bool has_diagnose = binary_has_command("diagnose");
  if (!has_diagnose) WARN("this decodelab has no `diagnose` command yet: trace cases use the reader in-process");
  for (const BadInput& bad : catalogue()) {
    INFO(bad.name);
    const TempDir dir;
    const Prepared prepared = bad.prepare(dir);
    const fs::path out = dir.path() / "out";
    fs::create_directories(out);
    const bool is_trace = prepared.arguments.front() == "diagnose";

    std::string message;
    if (is_trace && !has_diagnose) {
      try {
        read_chrome_trace(prepared.arguments[1]);
        FAIL_CHECK("the trace was accepted");
      } catch (const InputError& error) {
        message = error.what();
      }
    } else {
      std::vector<std::string> arguments = prepared.arguments;
      arguments.insert(arguments.end(), {"--json", (out / "result.json").string()});
      const CommandResult result = run_decodelab(arguments);
      CHECK(result.exit_code == 2);
      CHECK(result.out.empty());
      CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
      CHECK(result.err.rfind("decodelab: error: ", 0) == 0);
      message = result.err;
    }
    INFO(message);
    for (const std::string& part : prepared.expected) CHECK(message.find(part) != std::string::npos);
    CHECK(fs::is_empty(out));
  }
}
