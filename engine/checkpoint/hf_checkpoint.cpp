// Loading a Hugging Face checkpoint's tensors into ModelWeights: find the safetensors
// file(s), check every tensor the model needs (present, shape as config.json implies)
// before any upload, then convert to the run dtype and upload. A tensor already in the
// run dtype is uploaded straight from the mapping, with no host copy.
#include "engine/checkpoint/hf_checkpoint.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/base/errors.h"
#include "engine/base/json_errors.h"
#include "engine/checkpoint/safetensors.h"

namespace decodelab {

namespace {

namespace fs = std::filesystem;

struct LocatedTensor {
  const SafetensorsTensor* tensor = nullptr;
  const SafetensorsFile* file = nullptr;
};

// The checkpoint's safetensors files, and where each tensor name lives.
struct CheckpointFiles {
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::map<std::string, LocatedTensor> tensors;

  std::string file_list() const {
    std::string text;
    for (const auto& file : files) {
      if (!text.empty()) text += ", ";
      text += file->path().filename().string();
    }
    return text;
  }
};

const SafetensorsFile& open_file(CheckpointFiles& checkpoint, const fs::path& path) {
  checkpoint.files.push_back(std::make_unique<SafetensorsFile>(path));
  return *checkpoint.files.back();
}

// model.safetensors.index.json: {"metadata": {...}, "weight_map": {"tensor": "shard file"}}.
CheckpointFiles open_sharded(const fs::path& directory, const fs::path& index_path) {
  const std::string index_file = index_path.string();
  if (!fs::is_regular_file(index_path)) throw InputError(index_file, 0, "", "not a regular file");
  std::ifstream stream(index_path, std::ios::binary);
  if (!stream) throw InputError(index_file, 0, "", "cannot open");
  std::ostringstream text;
  text << stream.rdbuf();
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& error) {
    throw InputError(index_file, 0, "", json_parse_problem(error, text.str().size()));
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw InputError(index_file, 0, "weight_map", "missing (expected an object mapping tensor names to shard files)");

  std::map<std::string, std::vector<std::string>> names_by_shard;
  for (const auto& [name, shard] : index["weight_map"].items()) {
    if (!shard.is_string()) throw InputError(index_file, 0, "weight_map." + name, "expected a shard file name");
    const std::string shard_name = shard.get<std::string>();
    const fs::path shard_path(shard_name);
    const bool escapes =
        std::any_of(shard_path.begin(), shard_path.end(), [](const fs::path& part) { return part == ".."; });
    if (shard_name.empty() || shard_path.is_absolute() || escapes)
      throw InputError(index_file, 0, "weight_map." + name,
                       "\"" + shard_name + "\" is not a file name inside the checkpoint directory");
    names_by_shard[shard_name].push_back(name);
  }

  CheckpointFiles checkpoint;
  for (const auto& [shard_name, names] : names_by_shard) {
    const fs::path shard_path = directory / shard_name;
    if (!fs::exists(shard_path))
      throw InputError(shard_path.string(), 0, "", "shard listed in model.safetensors.index.json is missing");
    const SafetensorsFile& file = open_file(checkpoint, shard_path);
    for (const std::string& name : names) {
      const SafetensorsTensor* tensor = file.find(name);
      if (!tensor)
        throw InputError(shard_path.string(), 0, name, "listed in model.safetensors.index.json but not in this shard");
      checkpoint.tensors[name] = {tensor, &file};
    }
  }
  return checkpoint;
}

// Without an index: model.safetensors alone, else every *.safetensors (names must be unique).
CheckpointFiles open_unsharded(const fs::path& directory) {
  std::vector<fs::path> paths;
  if (fs::is_regular_file(directory / "model.safetensors")) {
    paths.push_back(directory / "model.safetensors");
  } else {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(directory, error)) {
      if (entry.is_regular_file() && entry.path().extension() == ".safetensors") paths.push_back(entry.path());
    }
    std::sort(paths.begin(), paths.end());
  }
  if (paths.empty())
    throw InputError(directory.string(), 0, "",
                     "no model.safetensors, model.safetensors.index.json or *.safetensors file in the directory");

  CheckpointFiles checkpoint;
  for (const fs::path& path : paths) {
    const SafetensorsFile& file = open_file(checkpoint, path);
    for (const auto& [name, tensor] : file.tensors()) {
      const auto [where, inserted] = checkpoint.tensors.emplace(name, LocatedTensor{&tensor, &file});
      if (!inserted)
        throw InputError(path.string(), 0, name,
                         "also present in " + where->second.file->path().filename().string() +
                             " (a tensor must live in exactly one file)");
    }
  }
  return checkpoint;
}

}  // namespace

ModelWeights load_hf_weights(Backend& backend, const std::filesystem::path& directory, const ModelConfig& config,
                             DType dtype) {
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    throw std::invalid_argument(std::string("model weights cannot be stored as ") + dtype_name(dtype));
  if (!fs::is_directory(directory)) throw InputError(directory.string(), 0, "", "not a checkpoint directory");
  const fs::path index_path = directory / "model.safetensors.index.json";
  const CheckpointFiles checkpoint =
      fs::exists(index_path) ? open_sharded(directory, index_path) : open_unsharded(directory);

  // Check everything first, against shapes alone, so that a bad checkpoint fails before
  // anything is allocated or converted.
  ModelWeights expected = ModelWeights::describe(config, dtype);
  expected.for_each(config, [&](const std::string& name, const Tensor& destination) {
    const auto found = checkpoint.tensors.find(name);
    if (found == checkpoint.tensors.end())
      throw InputError(directory.string(), 0, name, "tensor missing (searched " + checkpoint.file_list() + ")");
    const SafetensorsTensor& source = *found->second.tensor;
    const bool same_shape = static_cast<int>(source.shape.size()) == destination.rank &&
                            std::equal(source.shape.begin(), source.shape.end(), destination.shape.begin());
    if (!same_shape)
      throw InputError(found->second.file->path().string(), 0, name,
                       "shape " + source.shape_string() + " in the checkpoint, but config.json implies " +
                           destination.shape_string());
  });

  struct Transfer {
    const SafetensorsTensor* source;
    Tensor destination;
  };
  std::vector<Transfer> transfers;
  ModelWeights weights = ModelWeights::allocate(backend, config, dtype);
  weights.for_each(config, [&](const std::string& name, const Tensor& destination) {
    transfers.push_back({checkpoint.tensors.at(name).tensor, destination});
  });
  // A tied model's lm_head.weight, when a checkpoint carries one anyway, is ignored:
  // transformers ties it to embed_tokens after loading.

  std::vector<uint8_t> staging;
  for (const Transfer& transfer : transfers) {
    if (transfer.source->dtype == dtype) {
      backend.upload(transfer.destination.data, transfer.source->data, transfer.source->bytes);
    } else {
      staging.resize(transfer.destination.bytes());
      transfer.source->convert_to(dtype, staging.data());
      backend.upload(transfer.destination.data, staging.data(), staging.size());
    }
  }
  return weights;
}

}  // namespace decodelab
