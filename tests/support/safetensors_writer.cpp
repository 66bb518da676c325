// Writing safetensors images and checkpoint directories for tests. Values come from a
// counter-based hash (seed, element), so a tensor is the same whatever order it is made in.
#include "tests/support/safetensors_writer.h"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "engine/checkpoint/safetensors.h"

namespace decodelab::testing {

namespace {

uint64_t mix(uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

nlohmann::json& entry_of(SafetensorsImage& image, const std::string& target) {
  if (!image.header.contains(target)) throw std::invalid_argument("defect target not in the image: " + target);
  return image.header[target];
}

const char* torch_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F16:
      return "float16";
    case DType::BF16:
      return "bfloat16";
    default:
      return "float32";
  }
}

}  // namespace

int64_t HostTensor::numel() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

HostTensor seeded_tensor(std::string name, DType dtype, std::vector<int64_t> shape, uint64_t seed, float half_width,
                         float center) {
  HostTensor tensor{std::move(name), dtype, std::move(shape), {}};
  tensor.values.resize(static_cast<size_t>(tensor.numel()));
  const uint64_t stream = mix(seed);
  for (size_t i = 0; i < tensor.values.size(); ++i) {
    const uint64_t bits = mix(stream ^ mix(i));
    const float unit = static_cast<float>(bits >> 40) * (1.0f / 8388608.0f) - 1.0f;  // [-1, 1)
    tensor.values[i] = round_to(dtype, center + unit * half_width);
  }
  return tensor;
}

std::string SafetensorsImage::header_text() const {
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';  // the official writer pads so data starts aligned
  return text;
}

void SafetensorsImage::write(const std::filesystem::path& path) const {
  const std::string text = header_text();
  const uint64_t length = header_length_override.value_or(text.size());
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  if (!stream) throw std::runtime_error("cannot write " + path.string());
  uint8_t length_bytes[8];
  for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<uint8_t>(length >> (8 * i));  // little-endian
  stream.write(reinterpret_cast<const char*>(length_bytes), 8);
  stream.write(text.data(), static_cast<std::streamsize>(text.size()));
  const size_t kept = std::min(data.size(), data_bytes_kept.value_or(data.size()));
  stream.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(kept));
  if (!stream) throw std::runtime_error("cannot write " + path.string());
}

SafetensorsImage make_safetensors_image(const std::vector<HostTensor>& tensors,
                                        const std::map<std::string, std::string>& metadata) {
  SafetensorsImage image;
  image.header = nlohmann::json::object();
  if (!metadata.empty()) image.header["__metadata__"] = metadata;
  for (const HostTensor& tensor : tensors) {
    const size_t begin = image.data.size();
    const size_t bytes = tensor.values.size() * dtype_size(tensor.dtype);
    image.data.resize(begin + bytes);
    std::vector<uint8_t> stored(bytes);
    for (size_t i = 0; i < tensor.values.size(); ++i)
      store_from_float(stored.data(), tensor.dtype, i, tensor.values[i]);
    if (bytes) std::memcpy(image.data.data() + begin, stored.data(), bytes);
    image.header[tensor.name] = {{"dtype", safetensors_dtype_name(tensor.dtype)},
                                 {"shape", tensor.shape},
                                 {"data_offsets", {begin, begin + bytes}}};
  }
  return image;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<HostTensor>& tensors) {
  make_safetensors_image(tensors).write(path);
}

void apply_defect(SafetensorsImage& image, Defect defect, const std::string& target) {
  switch (defect) {
    case Defect::None:
    case Defect::ShapeDisagreesWithConfig:  // a tensor-level change, made before imaging
      return;
    case Defect::Truncated: {
      const auto offsets = entry_of(image, target)["data_offsets"];
      const uint64_t begin = offsets[0].get<uint64_t>();
      const uint64_t end = offsets[1].get<uint64_t>();
      image.data_bytes_kept = begin + (end - begin) / 2;
      return;
    }
    case Defect::HeaderLengthBeyondFile:
      image.header_length_override = 8 + image.header_text().size() + image.data.size();
      return;
    case Defect::OverlappingOffsets: {
      nlohmann::json& entry = entry_of(image, target);
      const uint64_t element = dtype_size(*parse_safetensors_dtype(entry["dtype"].get<std::string>()));
      const uint64_t begin = entry["data_offsets"][0].get<uint64_t>();
      const uint64_t end = entry["data_offsets"][1].get<uint64_t>();
      if (begin < element) throw std::invalid_argument("the first tensor cannot overlap a predecessor");
      entry["data_offsets"] = {begin - element, end - element};
      return;
    }
    case Defect::ShapeMismatchesBytes:
      entry_of(image, target)["shape"].push_back(2);
      return;
    case Defect::UnsupportedDtype: {
      nlohmann::json& entry = entry_of(image, target);
      entry["dtype"] = entry["dtype"] == "F32" ? "I32" : "I16";
      return;
    }
    case Defect::MissingTensor:
      entry_of(image, target);
      image.header.erase(target);
      return;
  }
}

std::vector<HostTensor> llama_tensors(const ModelConfig& config, DType dtype, uint64_t seed, bool lm_head_when_tied) {
  std::vector<HostTensor> tensors;
  uint64_t index = 0;
  const int64_t hidden = config.hidden_size;
  const int64_t intermediate = config.intermediate_size;
  auto projection = [&](const std::string& name, int64_t rows, int64_t columns) {
    // uniform with std 1/sqrt(fan_in): half-width sqrt(3)/sqrt(fan_in)
    tensors.push_back(seeded_tensor(name, dtype, {rows, columns}, seed * 1000003u + ++index,
                                    std::sqrt(3.0f / static_cast<float>(columns))));
  };
  auto norm = [&](const std::string& name) {
    tensors.push_back(seeded_tensor(name, dtype, {hidden}, seed * 1000003u + ++index, 0.25f, 1.0f));
  };
  tensors.push_back(seeded_tensor("model.embed_tokens.weight", dtype, {config.vocab_size, hidden},
                                  seed * 1000003u + ++index, std::sqrt(3.0f)));
  for (int layer = 0; layer < config.num_hidden_layers; ++layer) {
    const std::string prefix = "model.layers." + std::to_string(layer) + ".";
    norm(prefix + "input_layernorm.weight");
    projection(prefix + "self_attn.q_proj.weight", config.q_width(), hidden);
    projection(prefix + "self_attn.k_proj.weight", config.kv_width(), hidden);
    projection(prefix + "self_attn.v_proj.weight", config.kv_width(), hidden);
    projection(prefix + "self_attn.o_proj.weight", hidden, config.q_width());
    norm(prefix + "post_attention_layernorm.weight");
    projection(prefix + "mlp.gate_proj.weight", intermediate, hidden);
    projection(prefix + "mlp.up_proj.weight", intermediate, hidden);
    projection(prefix + "mlp.down_proj.weight", hidden, intermediate);
  }
  norm("model.norm.weight");
  if (!config.tie_word_embeddings || lm_head_when_tied) projection("lm_head.weight", config.vocab_size, hidden);
  return tensors;
}

nlohmann::json hf_config_json(const ModelConfig& config, DType dtype) {
  nlohmann::json json = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"hidden_act", "silu"},
      {"vocab_size", config.vocab_size},
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
      {"tie_word_embeddings", config.tie_word_embeddings},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"torch_dtype", torch_dtype_name(dtype)},
      {"bos_token_id", 1},
      {"eos_token_id", {2, 3}},
  };
  if (config.rope_scaling.enabled) {
    json["rope_scaling"] = {
        {"rope_type", "llama3"},
        {"factor", config.rope_scaling.factor},
        {"low_freq_factor", config.rope_scaling.low_freq_factor},
        {"high_freq_factor", config.rope_scaling.high_freq_factor},
        {"original_max_position_embeddings", config.rope_scaling.original_max_position_embeddings},
    };
  }
  return json;
}

void write_json(const std::filesystem::path& path, const nlohmann::json& value) {
  std::ofstream stream(path, std::ios::trunc);
  stream << value.dump(2) << "\n";
  if (!stream) throw std::runtime_error("cannot write " + path.string());
}

std::vector<HostTensor> write_checkpoint(const std::filesystem::path& directory, const ModelConfig& config,
                                         const CheckpointOptions& options) {
  std::filesystem::create_directories(directory);
  write_json(directory / "config.json", hf_config_json(config, options.dtype));

  std::vector<HostTensor> tensors = llama_tensors(config, options.dtype, options.seed, options.lm_head_when_tied);
  if (options.extra_tensors) {
    for (int layer = 0; layer < config.num_hidden_layers; ++layer) {
      HostTensor inv_freq{"model.layers." + std::to_string(layer) + ".self_attn.rotary_emb.inv_freq",
                          DType::F32,
                          {config.head_dim / 2},
                          {}};
      for (float value : rope_inverse_frequencies(config)) inv_freq.values.push_back(value);
      tensors.push_back(std::move(inv_freq));
    }
  }
  if (options.defect == Defect::ShapeDisagreesWithConfig) {
    for (HostTensor& tensor : tensors) {
      if (tensor.name != options.defect_target) continue;
      std::vector<int64_t> shape = tensor.shape;
      shape[0] += 1;
      tensor = seeded_tensor(tensor.name, tensor.dtype, shape, options.seed, 0.5f);
    }
  }

  // Shards: the first half of the tensors, then the rest (HF fills shards in order too).
  const int shard_count = options.shards;
  if (shard_count != 1 && shard_count != 2) throw std::invalid_argument("write_checkpoint writes 1 or 2 shards");
  nlohmann::json weight_map = nlohmann::json::object();
  size_t total_size = 0;
  for (int shard = 0; shard < shard_count; ++shard) {
    const size_t begin = tensors.size() * shard / shard_count;
    const size_t end = tensors.size() * (shard + 1) / shard_count;
    const std::vector<HostTensor> part(tensors.begin() + static_cast<ptrdiff_t>(begin),
                                       tensors.begin() + static_cast<ptrdiff_t>(end));
    const std::string file_name =
        shard_count == 1 ? "model.safetensors" : "model-0000" + std::to_string(shard + 1) + "-of-00002.safetensors";
    SafetensorsImage image = make_safetensors_image(part);
    for (const HostTensor& tensor : part) {
      // A missing tensor is missing from the index too; otherwise the index would name it.
      if (!(options.defect == Defect::MissingTensor && tensor.name == options.defect_target))
        weight_map[tensor.name] = file_name;
      total_size += tensor.values.size() * dtype_size(tensor.dtype);
      if (tensor.name == options.defect_target) apply_defect(image, options.defect, tensor.name);
    }
    image.write(directory / file_name);
  }
  if (shard_count == 2) {
    write_json(directory / "model.safetensors.index.json",
               {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}});
  }
  return tensors;
}

ScratchDirectory::ScratchDirectory(const std::string& label) {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("decodelab-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + label);
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace decodelab::testing
