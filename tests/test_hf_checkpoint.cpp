// Hugging Face checkpoints: config.json parsing (fields, defaults, llama3 rope scaling,
// bad configs with the key and line they name) and weight loading (single file, shards,
// a directory of *.safetensors, dtype conversion, tied heads, and every loading error).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>

#include "engine/base/errors.h"
#include "engine/checkpoint/hf_checkpoint.h"
#include "tests/support/safetensors_writer.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

ModelConfig small_config(bool tied = false) {
  ModelConfig config;
  config.vocab_size = 96;
  config.hidden_size = 32;
  config.intermediate_size = 40;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.max_position_embeddings = 128;
  config.rms_norm_eps = 1e-5;
  config.rope_theta = 10000.0;
  config.tie_word_embeddings = tied;
  REQUIRE(config.finalize_and_validate().empty());
  return config;
}

InputError catch_input_error(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& error) {
    return error;
  }
  FAIL("expected an InputError");
  throw std::logic_error("unreachable");
}

// The minimal config.json transformers would accept for a Llama model.
nlohmann::json minimal_config_json() {
  return {{"hidden_size", 64},        {"intermediate_size", 96}, {"num_hidden_layers", 2},
          {"num_attention_heads", 4}, {"vocab_size", 100},       {"max_position_embeddings", 256}};
}

}  // namespace

TEST_CASE("hf config: every field written is read back", "[hf_checkpoint]") {
  ModelConfig written = small_config(GENERATE(false, true));
  written.rms_norm_eps = 3e-6;
  written.rope_theta = 250000.0;
  ScratchDirectory directory("config");
  const auto model_directory = directory / "tiny-llama";
  std::filesystem::create_directories(model_directory);
  write_json(model_directory / "config.json", hf_config_json(written, DType::BF16));

  const ModelConfig read = read_hf_config(model_directory / "config.json");

  CHECK(read.name == "tiny-llama");
  CHECK(read.vocab_size == written.vocab_size);
  CHECK(read.hidden_size == written.hidden_size);
  CHECK(read.intermediate_size == written.intermediate_size);
  CHECK(read.num_hidden_layers == written.num_hidden_layers);
  CHECK(read.num_attention_heads == written.num_attention_heads);
  CHECK(read.num_key_value_heads == written.num_key_value_heads);
  CHECK(read.head_dim == written.head_dim);
  CHECK(read.max_position_embeddings == written.max_position_embeddings);
  CHECK(read.rms_norm_eps == written.rms_norm_eps);
  CHECK(read.rope_theta == written.rope_theta);
  CHECK(read.tie_word_embeddings == written.tie_word_embeddings);
  CHECK(!read.rope_scaling.enabled);
  CHECK(is_hf_checkpoint_directory(model_directory));
  CHECK(!is_hf_checkpoint_directory(directory.path()));
}

TEST_CASE("hf config: absent optional fields take Llama's defaults", "[hf_checkpoint]") {
  ScratchDirectory directory("defaults");
  write_json(directory / "config.json", minimal_config_json());

  const ModelConfig config = read_hf_config(directory / "config.json");

  CHECK(config.num_key_value_heads == 4);  // = num_attention_heads
  CHECK(config.head_dim == 16);            // = hidden_size / num_attention_heads
  CHECK(config.rms_norm_eps == 1e-6);      // LlamaConfig's default
  CHECK(config.rope_theta == 10000.0);
  CHECK(!config.tie_word_embeddings);
  CHECK(!config.rope_scaling.enabled);

  SECTION("null counts as absent, and an explicit head_dim wins over hidden/heads") {
    nlohmann::json json = minimal_config_json();
    json["num_key_value_heads"] = nullptr;
    json["rope_scaling"] = nullptr;
    json["head_dim"] = 32;
    write_json(directory / "config.json", json);
    const ModelConfig explicit_head = read_hf_config(directory / "config.json");
    CHECK(explicit_head.num_key_value_heads == 4);
    CHECK(explicit_head.head_dim == 32);
    CHECK(explicit_head.q_width() == 128);
  }
}

TEST_CASE("hf config: llama3 rope_scaling gives the hand-computed inverse frequencies", "[hf_checkpoint]") {
  // Llama 3.2-like: head_dim 64, theta 500000, factor 32, low 1, high 4, original 8192.
  nlohmann::json json = minimal_config_json();
  json["hidden_size"] = 256;
  json["rope_theta"] = 500000.0;
  const nlohmann::json scaling = {{"rope_type", "llama3"},
                                  {"factor", 32.0},
                                  {"low_freq_factor", 1.0},
                                  {"high_freq_factor", 4.0},
                                  {"original_max_position_embeddings", 8192}};
  const bool newer_layout = GENERATE(false, true);
  if (newer_layout) {  // transformers >= 5 keeps theta and scaling in one object
    json.erase("rope_theta");
    json["rope_parameters"] = scaling;
    json["rope_parameters"]["rope_theta"] = 500000.0;
  } else {
    json["rope_scaling"] = scaling;
  }
  ScratchDirectory directory("llama3");
  write_json(directory / "config.json", json);

  const ModelConfig config = read_hf_config(directory / "config.json");
  const std::vector<float> inverse_frequencies = rope_inverse_frequencies(config);

  REQUIRE(config.rope_scaling.enabled);
  CHECK(config.rope_theta == 500000.0);
  CHECK(config.rope_scaling.factor == 32.0);
  CHECK(config.rope_scaling.original_max_position_embeddings == 8192);
  REQUIRE(inverse_frequencies.size() == 32);
  // By hand: wavelength 2π/f below 8192/4 keeps f, above 8192/1 divides it by 32, and in
  // between blends the two with s = (8192/wavelength - 1) / (4 - 1).
  int kept = 0, divided = 0, blended = 0;
  for (int j = 0; j < 32; ++j) {
    const double base = 1.0 / std::pow(500000.0, 2.0 * j / 64.0);
    const double wavelength = 2 * M_PI / base;
    double expected;
    if (wavelength < 2048) {
      expected = base;
      ++kept;
    } else if (wavelength > 8192) {
      expected = base / 32;
      ++divided;
    } else {
      const double s = (8192 / wavelength - 1) / 3;
      expected = (1 - s) * base / 32 + s * base;
      ++blended;
    }
    INFO("j = " << j);
    CHECK(inverse_frequencies[j] == Approx(expected).epsilon(2e-6));
  }
  CHECK(kept > 0);  // the three bands are all exercised
  CHECK(divided > 0);
  CHECK(blended > 0);
}

TEST_CASE("hf config: bad configs name the key, its line and what was expected", "[hf_checkpoint][errors]") {
  struct BadConfig {
    const char* what;
    std::function<void(nlohmann::json&)> edit;
    const char* key;
    const char* problem;
    bool edit_removes_top_level_key = false;
  };
  const std::vector<BadConfig> cases = {
      {"integer given as a string", [](nlohmann::json& json) { json["hidden_size"] = "64"; }, "hidden_size",
       "expected an integer, got string \"64\""},
      {"integer given as a float", [](nlohmann::json& json) { json["num_hidden_layers"] = 2.5; }, "num_hidden_layers",
       "expected an integer, got number 2.5"},
      {"negative count", [](nlohmann::json& json) { json["num_attention_heads"] = -4; }, "num_attention_heads",
       "expected a positive integer, got -4"},
      {"zero kv heads", [](nlohmann::json& json) { json["num_key_value_heads"] = 0; }, "num_key_value_heads",
       "expected a positive integer, got 0"},
      {"required field missing", [](nlohmann::json& json) { json.erase("vocab_size"); }, "vocab_size",
       "missing (expected a positive integer)", true},
      {"boolean given as a string", [](nlohmann::json& json) { json["tie_word_embeddings"] = "yes"; },
       "tie_word_embeddings", "expected true or false, got string \"yes\""},
      {"eps given as a string", [](nlohmann::json& json) { json["rms_norm_eps"] = "1e-5"; }, "rms_norm_eps",
       "expected a number, got string \"1e-5\""},
      {"other activation", [](nlohmann::json& json) { json["hidden_act"] = "gelu"; }, "hidden_act",
       "\"gelu\" is not supported (expected \"silu\")"},
      {"other architecture", [](nlohmann::json& json) { json["model_type"] = "mistral"; }, "model_type",
       "\"mistral\" is not supported (expected \"llama\")"},
      {"attention bias", [](nlohmann::json& json) { json["attention_bias"] = true; }, "attention_bias",
       "bias tensors are not supported (expected false)"},
      {"other rope scaling",
       [](nlohmann::json& json) {
         json["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
       },
       "rope_scaling.rope_type", "\"yarn\" is not supported (expected \"llama3\", or no rope scaling)"},
      {"legacy rope scaling key",
       [](nlohmann::json& json) {
         json["rope_scaling"] = {{"type", "linear"}};
       },
       "rope_scaling.type", "\"linear\" is not supported (expected \"llama3\", or no rope scaling)"},
      {"llama3 without factor",
       [](nlohmann::json& json) {
         json["rope_scaling"] = {{"rope_type", "llama3"},
                                 {"low_freq_factor", 1.0},
                                 {"high_freq_factor", 4.0},
                                 {"original_max_position_embeddings", 8192}};
       },
       "rope_scaling.factor", "missing (expected a number)"},
      {"rope_scaling not an object", [](nlohmann::json& json) { json["rope_scaling"] = "llama3"; }, "rope_scaling",
       "expected an object or null, got string \"llama3\""},
      {"kv heads do not divide heads", [](nlohmann::json& json) { json["num_key_value_heads"] = 3; }, "",
       "num_key_value_heads (3) must divide num_attention_heads (4)"},
      {"odd head_dim", [](nlohmann::json& json) { json["head_dim"] = 15; }, "", "head_dim (15) must be even for RoPE"},
  };
  for (const BadConfig& bad : cases) {
    SECTION(bad.what) {
      nlohmann::json json = minimal_config_json();
      bad.edit(json);
      ScratchDirectory directory("bad-config");
      const auto path = directory / "config.json";
      write_json(path, json);

      const InputError error = catch_input_error([&] { read_hf_config(path); });

      CHECK(error.file() == path.string());
      CHECK(error.key() == bad.key);
      CHECK(error.problem() == bad.problem);
      // Every key of a dump(2) file sits below the opening brace; a missing top-level key has no line.
      if (bad.edit_removes_top_level_key)
        CHECK(error.line() == 0);
      else
        CHECK(error.line() > 1);
    }
  }
}

TEST_CASE("hf config: the line of a bad key and of a JSON syntax error", "[hf_checkpoint][errors]") {
  ScratchDirectory directory("lines");
  const auto path = directory / "config.json";
  SECTION("wrong type on line 3") {
    std::ofstream(path) << "{\n  \"vocab_size\": 100,\n  \"hidden_size\": \"64\",\n  \"intermediate_size\": 96\n}\n";
    const InputError error = catch_input_error([&] { read_hf_config(path); });
    CHECK(error.line() == 3);
    CHECK(error.key() == "hidden_size");
  }
  SECTION("syntax error on line 4") {
    std::ofstream(path) << "{\n  \"vocab_size\": 100,\n  \"hidden_size\": 64,\n  \"intermediate_size\": ,\n}\n";
    const InputError error = catch_input_error([&] { read_hf_config(path); });
    CHECK(error.line() == 4);
    CHECK(error.problem().rfind("not valid JSON: ", 0) == 0);
  }
  SECTION("missing file") {
    const InputError error = catch_input_error([&] { read_hf_config(directory / "absent.json"); });
    CHECK(error.problem() == "cannot open (expected a Hugging Face config.json)");
  }
  SECTION("not an object") {
    std::ofstream(path) << "[1, 2]";
    const InputError error = catch_input_error([&] { read_hf_config(path); });
    CHECK(error.problem() == "expected a JSON object of model settings");
  }
}

namespace {

// A device tensor read back to the host as floats.
std::vector<float> download(Backend& backend, const Tensor& tensor) {
  std::vector<uint8_t> host(tensor.bytes());
  backend.copy_to_host(host.data(), tensor.data, host.size(), /*pinned=*/true, /*id=*/0);
  backend.take_timings();
  std::vector<float> values(static_cast<size_t>(tensor.numel()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = load_as_float(host.data(), tensor.dtype, i);
  return values;
}

// Every loaded tensor equals the written values rounded to the run dtype.
void require_loaded(Backend& backend, const ModelConfig& config, ModelWeights& weights,
                    const std::vector<HostTensor>& written, DType run_dtype) {
  std::map<std::string, const HostTensor*> by_name;
  for (const HostTensor& tensor : written) by_name[tensor.name] = &tensor;
  int visited = 0;
  weights.for_each(config, [&](const std::string& name, const Tensor& tensor) {
    ++visited;
    INFO(name);
    REQUIRE(by_name.count(name) == 1);
    const HostTensor& expected = *by_name[name];
    CHECK(tensor.dtype == run_dtype);
    REQUIRE(tensor.numel() == expected.numel());
    const std::vector<float> loaded = download(backend, tensor);
    size_t mismatches = 0;
    for (size_t i = 0; i < loaded.size(); ++i) {
      if (loaded[i] != round_to(run_dtype, expected.values[i])) ++mismatches;
    }
    CHECK(mismatches == 0);
  });
  CHECK(visited == 2 + 9 * config.num_hidden_layers + (config.tie_word_embeddings ? 0 : 1));

  // The parts of each fused projection are consecutive rows of one buffer, so the matmul
  // over them reads the checkpoint's tensors concatenated: [q_proj; k_proj; v_proj] and
  // [gate_proj; up_proj], each as the checkpoint holds it.
  for (const LayerWeights& layer : weights.layers) {
    for (const std::vector<const Tensor*>& parts : std::vector<std::vector<const Tensor*>>{
             {&layer.q_proj, &layer.k_proj, &layer.v_proj}, {&layer.gate_proj, &layer.up_proj}}) {
      const char* next = static_cast<const char*>(parts.front()->data);
      int64_t rows = 0;
      for (const Tensor* part : parts) {
        CHECK(part->data == next);
        next += part->bytes();
        rows += part->shape[0];
      }
      const Tensor stacked = Tensor::contiguous(parts.front()->data, run_dtype, {rows, config.hidden_size});
      std::vector<float> expected;
      for (const Tensor* part : parts) {
        const std::vector<float> values = download(backend, *part);
        expected.insert(expected.end(), values.begin(), values.end());
      }
      CHECK(download(backend, stacked) == expected);
    }
  }
}

}  // namespace

TEST_CASE("hf checkpoint: single file, two shards and a bare directory load every tensor", "[hf_checkpoint]") {
  auto backend = make_backend(BackendKind::Cpu, {});
  const ModelConfig config = small_config();
  ScratchDirectory directory("load");
  const int shards = GENERATE(1, 2);
  const DType dtype = GENERATE(DType::F32, DType::BF16);
  const std::vector<HostTensor> written =
      write_checkpoint(directory.path(), config, {.dtype = dtype, .seed = 5, .shards = shards});

  SECTION("as written") {
    ModelWeights weights = load_hf_weights(*backend, directory.path(), config, dtype);
    CHECK(weights.dtype == dtype);
    require_loaded(*backend, config, weights, written, dtype);
  }
  if (shards == 2) {
    SECTION("without the index, every *.safetensors file is read") {
      std::filesystem::remove(directory / "model.safetensors.index.json");
      ModelWeights weights = load_hf_weights(*backend, directory.path(), config, dtype);
      require_loaded(*backend, config, weights, written, dtype);
    }
  }
}

TEST_CASE("hf checkpoint: tensors are converted to the run dtype", "[hf_checkpoint]") {
  auto backend = make_backend(BackendKind::Cpu, {});
  const ModelConfig config = small_config();
  const DType stored = GENERATE(DType::F32, DType::F16, DType::BF16);
  const DType run = GENERATE(DType::F32, DType::F16, DType::BF16);
  ScratchDirectory directory("convert");
  const std::vector<HostTensor> written = write_checkpoint(directory.path(), config, {.dtype = stored, .seed = 8});

  ModelWeights weights = load_hf_weights(*backend, directory.path(), config, run);

  INFO("stored " << dtype_name(stored) << ", run " << dtype_name(run));
  require_loaded(*backend, config, weights, written, run);
}

TEST_CASE("hf checkpoint: a tied model ignores lm_head.weight, and extra tensors are fine", "[hf_checkpoint]") {
  auto backend = make_backend(BackendKind::Cpu, {});
  const ModelConfig config = small_config(/*tied=*/true);
  ScratchDirectory directory("tied");
  const std::vector<HostTensor> written = write_checkpoint(
      directory.path(), config, {.dtype = DType::F16, .seed = 9, .lm_head_when_tied = true, .extra_tensors = true});
  REQUIRE(std::any_of(written.begin(), written.end(), [](const HostTensor& t) { return t.name == "lm_head.weight"; }));

  ModelWeights weights = load_hf_weights(*backend, directory.path(), config, DType::F16);

  CHECK(weights.lm_head.data == weights.embed_tokens.data);
  require_loaded(*backend, config, weights, written, DType::F16);
}

TEST_CASE("hf checkpoint: loading errors name the file, the tensor and what was expected", "[hf_checkpoint][errors]") {
  auto backend = make_backend(BackendKind::Cpu, {});
  const ModelConfig config = small_config();
  ScratchDirectory directory("load-errors");
  auto load = [&] { load_hf_weights(*backend, directory.path(), config, DType::F32); };

  SECTION("a missing tensor, single file") {
    write_checkpoint(directory.path(), config,
                     {.defect = Defect::MissingTensor, .defect_target = "model.layers.1.mlp.up_proj.weight"});
    const InputError error = catch_input_error(load);
    CHECK(error.file() == directory.path().string());
    CHECK(error.key() == "model.layers.1.mlp.up_proj.weight");
    CHECK(error.problem() == "tensor missing (searched model.safetensors)");
  }
  SECTION("a missing tensor, two shards") {
    write_checkpoint(directory.path(), config,
                     {.shards = 2, .defect = Defect::MissingTensor, .defect_target = "model.norm.weight"});
    const InputError error = catch_input_error(load);
    CHECK(error.key() == "model.norm.weight");
    CHECK(error.problem() ==
          "tensor missing (searched model-00001-of-00002.safetensors, model-00002-of-00002.safetensors)");
  }
  SECTION("an untied model without lm_head.weight") {
    write_checkpoint(directory.path(), config, {.defect = Defect::MissingTensor, .defect_target = "lm_head.weight"});
    const InputError error = catch_input_error(load);
    CHECK(error.key() == "lm_head.weight");
  }
  SECTION("config.json disagrees with a tensor's shape") {
    write_checkpoint(
        directory.path(), config,
        {.defect = Defect::ShapeDisagreesWithConfig, .defect_target = "model.layers.0.self_attn.k_proj.weight"});
    const InputError error = catch_input_error(load);
    CHECK(error.file() == (directory / "model.safetensors").string());
    CHECK(error.key() == "model.layers.0.self_attn.k_proj.weight");
    CHECK(error.problem() == "shape [17,32] in the checkpoint, but config.json implies [16,32]");
  }
  SECTION("an unsupported dtype in a shard") {
    write_checkpoint(directory.path(), config,
                     {.shards = 2, .defect = Defect::UnsupportedDtype, .defect_target = "model.norm.weight"});
    const InputError error = catch_input_error(load);
    CHECK(error.file() == (directory / "model-00002-of-00002.safetensors").string());
    CHECK(error.key() == "model.norm.weight");
    CHECK(error.problem() == "dtype \"I32\" is not supported (expected F32, F16 or BF16)");
  }
  SECTION("a truncated file") {
    write_checkpoint(directory.path(), config, {.defect = Defect::Truncated, .defect_target = "lm_head.weight"});
    const InputError error = catch_input_error(load);
    CHECK(error.file() == (directory / "model.safetensors").string());
    CHECK(error.key() == "lm_head.weight");
  }
  SECTION("the index names a shard that is not there") {
    write_checkpoint(directory.path(), config, {.shards = 2});
    std::filesystem::remove(directory / "model-00002-of-00002.safetensors");
    const InputError error = catch_input_error(load);
    CHECK(error.file() == (directory / "model-00002-of-00002.safetensors").string());
    CHECK(error.problem() == "shard listed in model.safetensors.index.json is missing");
  }
  SECTION("the index places a tensor in the wrong shard") {
    write_checkpoint(directory.path(), config, {.shards = 2});
    nlohmann::json index;
    std::ifstream(directory / "model.safetensors.index.json") >> index;
    index["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors";
    write_json(directory / "model.safetensors.index.json", index);
    const InputError error = catch_input_error(load);
    CHECK(error.key() == "model.norm.weight");
    CHECK(error.problem() == "listed in model.safetensors.index.json but not in this shard");
  }
  SECTION("the index has no weight_map") {
    write_checkpoint(directory.path(), config, {.shards = 2});
    write_json(directory / "model.safetensors.index.json", {{"metadata", nlohmann::json::object()}});
    const InputError error = catch_input_error(load);
    CHECK(error.key() == "weight_map");
  }
  SECTION("the index points outside the directory") {
    write_checkpoint(directory.path(), config, {.shards = 2});
    write_json(directory / "model.safetensors.index.json",
               {{"weight_map", {{"model.norm.weight", "../elsewhere.safetensors"}}}});
    const InputError error = catch_input_error(load);
    CHECK(error.key() == "weight_map.model.norm.weight");
  }
  SECTION("a tensor in two files") {
    write_checkpoint(directory.path(), config, {.shards = 2});
    std::filesystem::remove(directory / "model.safetensors.index.json");
    write_safetensors(directory / "extra.safetensors", {seeded_tensor("model.norm.weight", DType::F32, {32}, 1, 1.0f)});
    const InputError error = catch_input_error(load);
    CHECK(error.key() == "model.norm.weight");
    CHECK(error.problem().find("also present in") == 0);
  }
  SECTION("no safetensors file at all") {
    write_json(directory / "config.json", hf_config_json(config, DType::F32));
    const InputError error = catch_input_error(load);
    CHECK(error.file() == directory.path().string());
    CHECK(error.problem() ==
          "no model.safetensors, model.safetensors.index.json or *.safetensors file in the directory");
  }
}
