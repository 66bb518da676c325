// Model shapes by name or by path. A scenario's `model:` is a name under configs/models
// (lab-tiny, llama-8b, ...), or a path relative to the scenario file to a model YAML
// (Hugging Face field names) or to a Hugging Face-layout checkpoint directory.
// Plain names are looked up in the catalogue first, so "lab-tiny" never means a stray
// file of that name next to the scenario.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/model_config.h"

namespace decodelab {

enum class ModelSourceKind { Catalog, File, Checkpoint };
const char* to_string(ModelSourceKind kind);

struct ModelSource {
  ModelSourceKind kind = ModelSourceKind::Catalog;
  std::string value;           // as written in the scenario: "lab-small", "../models/x.yaml"
  std::filesystem::path path;  // the model YAML / config.json, or the checkpoint directory
};

// Finds what `value` names (nullopt when nothing matches). Relative paths resolve
// against `relative_to` (the scenario's folder).
std::optional<ModelSource> find_model(const std::string& value, const std::filesystem::path& relative_to);

// The shape the source describes: a model YAML, a config.json, or a checkpoint's
// config.json (read_hf_config). Problems throw InputError naming that file and line.
ModelConfig load_model_config(const ModelSource& source);

// Parses a model YAML with Hugging Face field names; the name is the file's stem.
// `description` receives the optional description field.
ModelConfig load_model_yaml(const std::filesystem::path& file, std::string* description = nullptr);

// The shape with Hugging Face's field names (rope_scaling null when absent).
nlohmann::json model_config_to_json(const ModelConfig& config);

struct CatalogModel {
  std::string name;
  std::string description;
  std::filesystem::path file;
  ModelConfig config;
};

std::vector<std::string> catalog_model_names();  // sorted stems of configs/models/*.yaml
std::vector<CatalogModel> catalog_models();      // every catalogue model, loaded and validated

}  // namespace decodelab
