// The model catalogue: the four configs load with the shapes they promise, parameter
// counts match the Llama formula worked out here by hand, names and paths resolve, and
// a bad model file gets an error naming its line and key.
#include <catch2/catch.hpp>
#include <filesystem>
#include <optional>

#include "engine/base/errors.h"
#include "lab/scenario/model_catalog.h"
#include "support/temp_dir.h"

using namespace decodelab;
using decodelab::testing::TempDir;

namespace {

// embed + (lm_head unless tied) + final norm + layers × (2 norms + q,k,v,o + gate,up,down).
int64_t llama_parameters(int64_t vocab, int64_t hidden, int64_t intermediate, int64_t layers, int64_t heads,
                         int64_t kv_heads, int64_t head_dim, bool tied) {
  const int64_t attention = hidden * heads * head_dim           // q
                            + 2 * hidden * kv_heads * head_dim  // k, v
                            + heads * head_dim * hidden;        // o
  const int64_t mlp = 3 * hidden * intermediate;
  const int64_t per_layer = 2 * hidden + attention + mlp;
  return vocab * hidden * (tied ? 1 : 2) + hidden + layers * per_layer;
}

ModelConfig catalog(const std::string& name) {
  const std::optional<ModelSource> source = find_model(name, ".");
  REQUIRE(source.has_value());
  REQUIRE(source->kind == ModelSourceKind::Catalog);
  return load_model_config(*source);
}

const char* const kMiniModel =
    "vocab_size: 64\nhidden_size: 32\nintermediate_size: 48\nnum_hidden_layers: 1\n"
    "num_attention_heads: 2\nmax_position_embeddings: 32\n";

}  // namespace

TEST_CASE("the catalogue lists the four models", "[model_catalog]") {
  const std::vector<std::string> names = catalog_model_names();
  for (const char* name : {"lab-tiny", "lab-small", "llama-1b", "llama-8b"}) {
    CHECK(std::find(names.begin(), names.end(), name) != names.end());
  }
  const std::vector<CatalogModel> models = catalog_models();
  CHECK(models.size() == names.size());
  for (const CatalogModel& model : models) CHECK_FALSE(model.description.empty());
}

TEST_CASE("lab-tiny and lab-small have the promised shapes and counts", "[model_catalog]") {
  const ModelConfig tiny = catalog("lab-tiny");
  CHECK(tiny.name == "lab-tiny");
  CHECK(tiny.vocab_size == 512);
  CHECK(tiny.hidden_size == 128);
  CHECK(tiny.intermediate_size == 352);
  CHECK(tiny.num_hidden_layers == 2);
  CHECK(tiny.num_attention_heads == 4);
  CHECK(tiny.num_key_value_heads == 2);
  CHECK(tiny.head_dim == 32);
  CHECK(tiny.max_position_embeddings == 1024);
  CHECK(tiny.parameter_count() == llama_parameters(512, 128, 352, 2, 4, 2, 32, false));

  const ModelConfig small = catalog("lab-small");
  CHECK(small.vocab_size == 32000);
  CHECK(small.hidden_size == 1024);
  CHECK(small.intermediate_size == 2816);
  CHECK(small.num_hidden_layers == 8);
  CHECK(small.num_attention_heads == 16);
  CHECK(small.num_key_value_heads == 16);
  CHECK(small.max_position_embeddings == 2048);
  CHECK_FALSE(small.tie_word_embeddings);
  CHECK(small.parameter_count() == llama_parameters(32000, 1024, 2816, 8, 16, 16, 64, false));
  CHECK(small.parameter_count() == Approx(168.3e6).epsilon(0.001));
}

TEST_CASE("llama-1b is the Llama-3.2-1B shape: tied, ~1.236e9 parameters", "[model_catalog]") {
  const ModelConfig config = catalog("llama-1b");
  CHECK(config.vocab_size == 128256);
  CHECK(config.hidden_size == 2048);
  CHECK(config.intermediate_size == 8192);
  CHECK(config.num_hidden_layers == 16);
  CHECK(config.num_attention_heads == 32);
  CHECK(config.num_key_value_heads == 8);
  CHECK(config.head_dim == 64);
  CHECK(config.rope_theta == 500000.0);
  CHECK(config.rms_norm_eps == 1e-5);
  CHECK(config.max_position_embeddings == 131072);
  CHECK(config.tie_word_embeddings);
  CHECK(config.rope_scaling.enabled);
  CHECK(config.rope_scaling.factor == 32.0);
  CHECK(config.rope_scaling.low_freq_factor == 1.0);
  CHECK(config.rope_scaling.high_freq_factor == 4.0);
  CHECK(config.rope_scaling.original_max_position_embeddings == 8192);
  const int64_t expected = llama_parameters(128256, 2048, 8192, 16, 32, 8, 64, true);
  CHECK(expected == 1'235'814'400);
  CHECK(config.parameter_count() == expected);
  CHECK(config.weight_bytes(DType::BF16) == 2 * expected);
  CHECK(config.weight_bytes(DType::F32) == 4 * expected);
}

TEST_CASE("llama-8b is the Llama-3.1-8B shape: untied, ~8.03e9 parameters", "[model_catalog]") {
  const ModelConfig config = catalog("llama-8b");
  CHECK(config.vocab_size == 128256);
  CHECK(config.hidden_size == 4096);
  CHECK(config.intermediate_size == 14336);
  CHECK(config.num_hidden_layers == 32);
  CHECK(config.num_attention_heads == 32);
  CHECK(config.num_key_value_heads == 8);
  CHECK(config.head_dim == 128);
  CHECK(config.rope_theta == 500000.0);
  CHECK_FALSE(config.tie_word_embeddings);
  CHECK(config.rope_scaling.factor == 8.0);
  CHECK(config.rope_scaling.original_max_position_embeddings == 8192);
  const int64_t expected = llama_parameters(128256, 4096, 14336, 32, 32, 8, 128, false);
  CHECK(expected == 8'030'261'248);
  CHECK(config.parameter_count() == expected);
  CHECK(config.weight_bytes(DType::F16) == 2 * expected);
}

TEST_CASE("find_model: catalogue names first, then paths relative to the scenario's folder", "[model_catalog]") {
  const TempDir dir;
  dir.write("lab-tiny", "not a model");  // a stray file named like a catalogue model
  dir.write("shapes/mini.yaml", kMiniModel);
  dir.write("checkpoint/config.json", "{}");
  std::filesystem::create_directories(dir.path() / "not-a-checkpoint");

  const auto by_name = find_model("lab-tiny", dir.path());
  REQUIRE(by_name.has_value());
  CHECK(by_name->kind == ModelSourceKind::Catalog);

  const auto by_path = find_model("shapes/mini.yaml", dir.path());
  REQUIRE(by_path.has_value());
  CHECK(by_path->kind == ModelSourceKind::File);
  CHECK(by_path->value == "shapes/mini.yaml");
  CHECK(std::filesystem::equivalent(by_path->path, dir.path() / "shapes/mini.yaml"));
  CHECK(load_model_config(*by_path).name == "mini");

  const auto absolute = find_model((dir.path() / "shapes/mini.yaml").string(), "/");
  REQUIRE(absolute.has_value());
  CHECK(absolute->kind == ModelSourceKind::File);

  const auto checkpoint = find_model("checkpoint", dir.path());
  REQUIRE(checkpoint.has_value());
  CHECK(checkpoint->kind == ModelSourceKind::Checkpoint);
  CHECK(std::filesystem::equivalent(checkpoint->path, dir.path() / "checkpoint"));

  CHECK_FALSE(find_model("not-a-checkpoint", dir.path()).has_value());
  CHECK_FALSE(find_model("no-such-model", dir.path()).has_value());
  CHECK_FALSE(find_model("", dir.path()).has_value());
}

TEST_CASE("a checkpoint directory's config.json gives the shape (Hugging Face names)", "[model_catalog]") {
  const TempDir dir;
  dir.write("ckpt/config.json",
            R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
                "vocab_size": 96, "hidden_size": 64, "intermediate_size": 80, "num_hidden_layers": 2,
                "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128,
                "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "tie_word_embeddings": true,
                "torch_dtype": "float32"})");
  const auto source = find_model("ckpt", dir.path());
  REQUIRE(source.has_value());
  const ModelConfig config = load_model_config(*source);
  CHECK(config.vocab_size == 96);
  CHECK(config.hidden_size == 64);
  CHECK(config.num_key_value_heads == 2);
  CHECK(config.head_dim == 16);
  CHECK(config.rms_norm_eps == 1e-6);
  CHECK(config.tie_word_embeddings);
  CHECK_FALSE(config.name.empty());
}

TEST_CASE("a model YAML may carry config.json's informational keys", "[model_catalog]") {
  const TempDir dir;
  const auto file = dir.write("m.yaml", std::string(kMiniModel) +
                                            "architectures: [LlamaForCausalLM]\ntorch_dtype: bfloat16\n"
                                            "hidden_act: silu\nattention_bias: false\nbos_token_id: 1\n"
                                            "eos_token_id: [2, 3]\nrope_scaling: null\n");
  std::string description = "unchanged";
  const ModelConfig config = load_model_yaml(file, &description);
  CHECK(config.name == "m");
  CHECK(description.empty());
  CHECK_FALSE(config.rope_scaling.enabled);
}

TEST_CASE("bad model files: the error names the file, the line and the key", "[model_catalog]") {
  struct Case {
    std::string extra;  // appended to the mini model (or replacing a key: later keys are duplicates)
    int line;
    std::string key;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {"hiden_size: 3\n", 7, "hiden_size", "unknown key (did you mean 'hidden_size'?)"},
      {"head_dim: 15\n", 7, "head_dim", "head_dim (15) must be even for RoPE"},
      {"num_key_value_heads: 0\n", 7, "num_key_value_heads", "expected an integer ≥ 1, got '0'"},
      {"hidden_act: gelu\n", 7, "hidden_act", "expected one of silu, got 'gelu'"},
      {"mlp_bias: true\n", 7, "mlp_bias", "biases are not supported (expected false)"},
      {"rope_scaling: {rope_type: yarn, factor: 4}\n", 7, "rope_scaling.rope_type",
       "expected one of llama3, got 'yarn'"},
      {"rope_scaling: {rope_type: llama3}\n", 7, "rope_scaling.factor", "missing (expected a number)"},
      {"rope_scaling: {rope_type: llama3, factor: 8, low_freq_factor: 4, high_freq_factor: 1}\n", 7, "rope_scaling",
       "rope_scaling.high_freq_factor must exceed low_freq_factor"},
      {"rms_norm_eps: 0\n", 7, "rms_norm_eps", "rms_norm_eps must be positive"},
      {"vocab_size: 65\n", 7, "vocab_size", "duplicate key"},
  };
  const TempDir dir;
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].extra);
    const auto file = dir.write(std::string("m").append(std::to_string(i)).append(".yaml"), std::string(kMiniModel) + cases[i].extra);
    try {
      load_model_yaml(file);
      FAIL("no error");
    } catch (const InputError& error) {
      CHECK(error.file() == file.string());
      CHECK(error.line() == cases[i].line);
      CHECK(error.key() == cases[i].key);
      CHECK(error.problem() == cases[i].problem);
    }
  }
  const TempDir missing_dir;
  const auto missing = missing_dir.write("m.yaml", "vocab_size: 64\n");
  CHECK_THROWS_WITH(load_model_yaml(missing),
                    Catch::Matchers::Contains("hidden_size: missing (expected an integer ≥ 1)"));
}
