// Hugging Face-layout checkpoints: config.json + one or more *.safetensors (F32/F16/BF16),
// memory-mapped and converted to the run's storage dtype. Problems throw InputError
// naming the file and the field or tensor.
#pragma once

#include <filesystem>

#include "engine/backend.h"
#include "engine/model/model_config.h"
#include "engine/model/weights.h"

namespace decodelab {

// True when the directory holds a config.json (a checkpoint candidate).
bool is_hf_checkpoint_directory(const std::filesystem::path& directory);

// Reads config.json (Llama fields; rope_scaling llama3 supported) and validates it.
ModelConfig read_hf_config(const std::filesystem::path& config_json);

// Loads every tensor of the model from the directory's safetensors file(s) (single file,
// or shards listed in model.safetensors.index.json), checking names, shapes and dtypes
// against the config, converting to `dtype`.
ModelWeights load_hf_weights(Backend& backend, const std::filesystem::path& directory, const ModelConfig& config,
                             DType dtype);

}  // namespace decodelab
