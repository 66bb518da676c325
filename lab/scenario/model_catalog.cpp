// Model lookup and model-YAML parsing. A model YAML may be a config.json pasted as YAML,
// so the informational Hugging Face keys (architectures, torch_dtype, ...) are accepted
// and ignored, except those that would change the architecture (hidden_act, biases).
#include "lab/scenario/model_catalog.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <system_error>

#include "engine/base/errors.h"
#include "engine/checkpoint/hf_checkpoint.h"
#include "lab/paths.h"
#include "lab/scenario/yaml_fields.h"

namespace decodelab {

namespace fs = std::filesystem;

const char* to_string(ModelSourceKind kind) {
  switch (kind) {
    case ModelSourceKind::Catalog: return "catalog";
    case ModelSourceKind::File: return "file";
    case ModelSourceKind::Checkpoint: return "checkpoint";
  }
  return "?";
}

std::vector<std::string> catalog_model_names() {
  std::vector<std::string> names;
  std::error_code error;
  const fs::path folder = models_dir();
  if (!fs::is_directory(folder, error)) return names;
  for (const auto& entry : fs::directory_iterator(folder, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<ModelSource> find_model(const std::string& value, const fs::path& relative_to) {
  if (value.empty()) return std::nullopt;
  std::error_code error;
  if (value.find('/') == std::string::npos) {
    const fs::path file = models_dir() / (value + ".yaml");
    if (fs::is_regular_file(file, error)) return ModelSource{ModelSourceKind::Catalog, value, file};
  }
  const fs::path path = fs::path(value).is_absolute() ? fs::path(value) : relative_to / value;
  if (fs::is_directory(path, error)) {
    if (!is_hf_checkpoint_directory(path)) return std::nullopt;
    return ModelSource{ModelSourceKind::Checkpoint, value, path};
  }
  if (fs::is_regular_file(path, error)) return ModelSource{ModelSourceKind::File, value, path};
  return std::nullopt;
}

namespace {

// Keys a Hugging Face config.json carries that do not change the shape.
const std::vector<std::string> kInformationalKeys = {
    "architectures",     "model_type",     "torch_dtype", "bos_token_id",      "eos_token_id",        "pad_token_id",
    "attention_dropout", "pretraining_tp", "use_cache",   "initializer_range", "transformers_version"};

const std::vector<std::string> kShapeKeys = {"description",
                                             "vocab_size",
                                             "hidden_size",
                                             "intermediate_size",
                                             "num_hidden_layers",
                                             "num_attention_heads",
                                             "num_key_value_heads",
                                             "head_dim",
                                             "max_position_embeddings",
                                             "rms_norm_eps",
                                             "rope_theta",
                                             "rope_scaling",
                                             "tie_word_embeddings",
                                             "hidden_act",
                                             "attention_bias",
                                             "mlp_bias"};

void read_rope_scaling(const YamlField& field, RopeScaling& scaling) {
  if (field.is_null()) return;
  const YamlMapping mapping = YamlMapping::of(field, {"rope_type", "type", "factor", "low_freq_factor",
                                                      "high_freq_factor", "original_max_position_embeddings"});
  std::optional<YamlField> type = mapping.optional("rope_type");
  if (!type) type = mapping.optional("type");  // older configs spell it "type"
  if (!type) field.fail("missing rope_type (only 'llama3' rope scaling is supported)");
  type->choice({"llama3"});
  scaling.enabled = true;
  scaling.factor = mapping.required("factor", "a number").number(0.0);
  if (auto low = mapping.optional("low_freq_factor")) scaling.low_freq_factor = low->number(0.0);
  if (auto high = mapping.optional("high_freq_factor")) scaling.high_freq_factor = high->number(0.0);
  if (auto original = mapping.optional("original_max_position_embeddings")) {
    scaling.original_max_position_embeddings = static_cast<int>(original->integer(1, INT32_MAX));
  }
}

}  // namespace

ModelConfig load_model_yaml(const fs::path& file, std::string* description) {
  YamlSource source{file, {}};
  YAML::Node document;
  try {
    document = YAML::LoadFile(file.string());
  } catch (const YAML::BadFile&) {
    throw InputError(file.string(), 0, "", "cannot read the model file");
  } catch (const YAML::ParserException& error) {
    throw InputError(file.string(), error.mark.line + 1, "", "not valid YAML: " + error.msg);
  }
  std::vector<std::string> allowed = kShapeKeys;
  allowed.insert(allowed.end(), kInformationalKeys.begin(), kInformationalKeys.end());
  const YamlMapping mapping(source, document, "", line_of(document, 1), allowed);

  ModelConfig config;
  config.name = file.stem().string();
  auto required_int = [&](const char* key) {
    return static_cast<int>(mapping.required(key, "an integer ≥ 1").integer(1, INT32_MAX));
  };
  config.vocab_size = required_int("vocab_size");
  config.hidden_size = required_int("hidden_size");
  config.intermediate_size = required_int("intermediate_size");
  config.num_hidden_layers = required_int("num_hidden_layers");
  config.num_attention_heads = required_int("num_attention_heads");
  config.max_position_embeddings = required_int("max_position_embeddings");
  if (auto field = mapping.optional("num_key_value_heads"))
    config.num_key_value_heads = static_cast<int>(field->integer(1, INT32_MAX));
  if (auto field = mapping.optional("head_dim")) config.head_dim = static_cast<int>(field->integer(1, INT32_MAX));
  if (auto field = mapping.optional("rms_norm_eps")) config.rms_norm_eps = field->number(0.0);
  if (auto field = mapping.optional("rope_theta")) config.rope_theta = field->number(0.0);
  if (auto field = mapping.optional("rope_scaling")) read_rope_scaling(*field, config.rope_scaling);
  if (auto field = mapping.optional("tie_word_embeddings")) config.tie_word_embeddings = field->boolean();
  if (auto field = mapping.optional("hidden_act")) field->choice({"silu"});
  for (const char* bias : {"attention_bias", "mlp_bias"}) {
    if (auto field = mapping.optional(bias); field && field->boolean())
      field->fail("biases are not supported (expected false)");
  }
  if (description) *description = mapping.optional("description") ? mapping.optional("description")->text() : "";

  if (const std::string problem = config.finalize_and_validate(); !problem.empty()) {
    // The problem opens with the field it is about; point at that field's line.
    const std::string field_name = problem.substr(0, problem.find_first_of(" ."));
    const std::optional<YamlField> field = mapping.optional(field_name);
    throw InputError(file.string(), field ? field->line : mapping.line(), field ? field_name : "", problem);
  }
  return config;
}

ModelConfig load_model_config(const ModelSource& source) {
  switch (source.kind) {
    case ModelSourceKind::Checkpoint: {
      ModelConfig config = read_hf_config(source.path / "config.json");
      if (config.name.empty()) config.name = source.path.filename().string();
      return config;
    }
    case ModelSourceKind::File:
      if (source.path.extension() == ".json") {
        ModelConfig config = read_hf_config(source.path);
        if (config.name.empty()) config.name = source.path.parent_path().filename().string();
        return config;
      }
      return load_model_yaml(source.path);
    case ModelSourceKind::Catalog: return load_model_yaml(source.path);
  }
  throw InputError(source.value, 0, "model", "unknown model source");
}

nlohmann::json model_config_to_json(const ModelConfig& config) {
  nlohmann::json json = {{"vocab_size", config.vocab_size},
                         {"hidden_size", config.hidden_size},
                         {"intermediate_size", config.intermediate_size},
                         {"num_hidden_layers", config.num_hidden_layers},
                         {"num_attention_heads", config.num_attention_heads},
                         {"num_key_value_heads", config.num_key_value_heads},
                         {"head_dim", config.head_dim},
                         {"max_position_embeddings", config.max_position_embeddings},
                         {"rms_norm_eps", config.rms_norm_eps},
                         {"rope_theta", config.rope_theta},
                         {"rope_scaling", nullptr},
                         {"tie_word_embeddings", config.tie_word_embeddings}};
  if (config.rope_scaling.enabled) {
    const RopeScaling& scaling = config.rope_scaling;
    json["rope_scaling"] = {{"rope_type", "llama3"},
                            {"factor", scaling.factor},
                            {"low_freq_factor", scaling.low_freq_factor},
                            {"high_freq_factor", scaling.high_freq_factor},
                            {"original_max_position_embeddings", scaling.original_max_position_embeddings}};
  }
  return json;
}

std::vector<CatalogModel> catalog_models() {
  std::vector<CatalogModel> models;
  for (const std::string& name : catalog_model_names()) {
    CatalogModel model;
    model.name = name;
    model.file = models_dir() / (name + ".yaml");
    model.config = load_model_yaml(model.file, &model.description);
    models.push_back(std::move(model));
  }
  return models;
}

}  // namespace decodelab
