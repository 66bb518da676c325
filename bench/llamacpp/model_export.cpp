// Writing one model's weights as a Hugging Face checkpoint and as GGUF (see model_export.h).
// Tensors are read back from the device one at a time while each file is written.
#include "bench/llamacpp/model_export.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "bench/llamacpp/gguf_writer.h"
#include "engine/base/errors.h"
#include "engine/checkpoint/safetensors.h"
#include "lab/scenario/model_catalog.h"

namespace decodelab::bench {

namespace {

namespace fs = std::filesystem;

constexpr uint32_t kFirstCodePoint = 0x4E00;  // CJK ideographs onwards: none are whitespace

void read_tensor(Backend& backend, const Tensor& tensor, std::vector<uint8_t>& host) {
  host.resize(tensor.bytes());
  backend.copy_to_host(host.data(), tensor.data, host.size(), true, 0);
}

// The tensor's bytes converted to fp32 (GGUF keeps norm weights in F32).
void read_as_f32(Backend& backend, const Tensor& tensor, std::vector<uint8_t>& host) {
  std::vector<uint8_t> stored;
  read_tensor(backend, tensor, stored);
  host.resize(static_cast<size_t>(tensor.numel()) * 4);
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    const float value = load_as_float(stored.data(), tensor.dtype, static_cast<size_t>(i));
    std::memcpy(host.data() + 4 * i, &value, 4);
  }
}

void read_permuted(Backend& backend, const Tensor& tensor, int head_dim, std::vector<uint8_t>& host) {
  std::vector<uint8_t> stored;
  read_tensor(backend, tensor, stored);
  host.resize(stored.size());
  const size_t row_bytes = static_cast<size_t>(tensor.shape[1]) * dtype_size(tensor.dtype);
  const std::vector<int64_t> order = rope_row_order(tensor.shape[0], head_dim);
  for (size_t row = 0; row < order.size(); ++row)
    std::memcpy(host.data() + row * row_bytes, stored.data() + static_cast<size_t>(order[row]) * row_bytes, row_bytes);
}

std::vector<int64_t> shape_of(const Tensor& tensor) { return {tensor.shape.begin(), tensor.shape.begin() + tensor.rank}; }

void append_utf8(std::string& text, uint32_t code_point) {
  if (code_point < 0x80) {
    text += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    text += static_cast<char>(0xC0 | (code_point >> 6));
    text += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    text += static_cast<char>(0xE0 | (code_point >> 12));
    text += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    text += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    text += static_cast<char>(0xF0 | (code_point >> 18));
    text += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    text += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    text += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

const char* torch_dtype(DType dtype) {
  switch (dtype) {
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    default: return "float32";
  }
}

uint32_t llama_file_type(DType dtype) {
  switch (dtype) {
    case DType::F16: return 1;   // LLAMA_FTYPE_MOSTLY_F16
    case DType::BF16: return 32;  // LLAMA_FTYPE_MOSTLY_BF16
    default: return 0;            // LLAMA_FTYPE_ALL_F32
  }
}

}  // namespace

std::vector<int64_t> rope_row_order(int64_t rows, int head_dim) {
  std::vector<int64_t> order(static_cast<size_t>(rows));
  const int64_t half = head_dim / 2;
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t head = row / head_dim, within = row % head_dim;
    order[static_cast<size_t>(row)] = head * head_dim + (within % 2) * half + within / 2;
  }
  return order;
}

std::string token_text(int32_t id) {
  std::string text;
  append_utf8(text, kFirstCodePoint + static_cast<uint32_t>(id));
  return text;
}

std::string tokens_text(const std::vector<int32_t>& ids) {
  std::string text;
  for (int32_t id : ids) text += token_text(id);
  return text;
}

std::vector<int32_t> text_tokens(const std::string& text, int32_t vocab_size, int* unknown) {
  std::vector<int32_t> ids;
  if (unknown) *unknown = 0;
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const int length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    uint32_t code_point = length == 1 ? lead : lead & (0xFF >> (length + 1));
    for (int k = 1; k < length && i + k < text.size(); ++k)
      code_point = (code_point << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    i += length;
    if (code_point >= kFirstCodePoint && code_point < kFirstCodePoint + static_cast<uint32_t>(vocab_size))
      ids.push_back(static_cast<int32_t>(code_point - kFirstCodePoint));
    else if (unknown && code_point != '\n')
      ++*unknown;
  }
  return ids;
}

void write_hf_checkpoint(const fs::path& directory, const ModelConfig& config, ModelWeights& weights, Backend& backend) {
  fs::create_directories(directory);
  nlohmann::json json = model_config_to_json(config);
  json["architectures"] = {"LlamaForCausalLM"};
  json["model_type"] = "llama";
  json["hidden_act"] = "silu";
  json["torch_dtype"] = torch_dtype(weights.dtype);
  std::ofstream config_file(directory / "config.json");
  config_file << json.dump(2) << "\n";
  if (!config_file.flush()) throw std::runtime_error("cannot write " + (directory / "config.json").string());

  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::vector<std::pair<std::string, Tensor>> tensors;
  uint64_t offset = 0;
  weights.for_each(config, [&](const std::string& name, const Tensor& tensor) {
    header[name] = {{"dtype", safetensors_dtype_name(tensor.dtype)},
                    {"shape", shape_of(tensor)},
                    {"data_offsets", {offset, offset + tensor.bytes()}}};
    offset += tensor.bytes();
    tensors.emplace_back(name, tensor);
  });
  std::string header_text = header.dump();
  while (header_text.size() % 8 != 0) header_text += ' ';  // data starts 8-byte aligned
  const fs::path file = directory / "model.safetensors";
  std::ofstream stream(file, std::ios::binary | std::ios::trunc);
  const uint64_t length = header_text.size();
  stream.write(reinterpret_cast<const char*>(&length), 8);  // little-endian hosts
  stream.write(header_text.data(), static_cast<std::streamsize>(header_text.size()));
  std::vector<uint8_t> host;
  for (const auto& [name, tensor] : tensors) {
    read_tensor(backend, tensor, host);
    stream.write(reinterpret_cast<const char*>(host.data()), static_cast<std::streamsize>(host.size()));
  }
  if (!stream.flush()) throw std::runtime_error("cannot write " + file.string());
}

void write_gguf(const fs::path& file, const ModelConfig& config, ModelWeights& weights, Backend& backend) {
  const std::string what = "--model " + config.name;
  if (config.rope_scaling.enabled)
    throw InputError("", 0, what, "rope scaling is not exported to GGUF; use a model without rope_scaling");
  if (config.head_dim * config.num_attention_heads != config.hidden_size)
    throw InputError("", 0, what, "head_dim must be hidden_size / num_attention_heads for llama.cpp's llama graph");

  GgufWriter gguf;
  gguf.add_string("general.architecture", "llama");
  gguf.add_string("general.name", "decodelab " + config.name);
  gguf.add_u32("general.file_type", llama_file_type(weights.dtype));
  gguf.add_u32("llama.vocab_size", static_cast<uint32_t>(config.vocab_size));
  gguf.add_u32("llama.context_length", static_cast<uint32_t>(config.max_position_embeddings));
  gguf.add_u32("llama.embedding_length", static_cast<uint32_t>(config.hidden_size));
  gguf.add_u32("llama.block_count", static_cast<uint32_t>(config.num_hidden_layers));
  gguf.add_u32("llama.feed_forward_length", static_cast<uint32_t>(config.intermediate_size));
  gguf.add_u32("llama.attention.head_count", static_cast<uint32_t>(config.num_attention_heads));
  gguf.add_u32("llama.attention.head_count_kv", static_cast<uint32_t>(config.num_key_value_heads));
  gguf.add_u32("llama.rope.dimension_count", static_cast<uint32_t>(config.head_dim));
  gguf.add_f32("llama.rope.freq_base", static_cast<float>(config.rope_theta));
  gguf.add_f32("llama.attention.layer_norm_rms_epsilon", static_cast<float>(config.rms_norm_eps));

  std::vector<std::string> tokens;
  for (int32_t id = 0; id < config.vocab_size; ++id) tokens.push_back(token_text(id));
  gguf.add_string("tokenizer.ggml.model", "llama");
  gguf.add_strings("tokenizer.ggml.tokens", tokens);
  gguf.add_f32s("tokenizer.ggml.scores", std::vector<float>(tokens.size(), 0.0f));
  gguf.add_i32s("tokenizer.ggml.token_type", std::vector<int32_t>(tokens.size(), 1));  // normal
  gguf.add_u32("tokenizer.ggml.bos_token_id", 1);
  gguf.add_u32("tokenizer.ggml.eos_token_id", 2);
  gguf.add_u32("tokenizer.ggml.unknown_token_id", 0);
  gguf.add_bool("tokenizer.ggml.add_bos_token", false);
  gguf.add_bool("tokenizer.ggml.add_eos_token", false);
  gguf.add_bool("tokenizer.ggml.add_space_prefix", false);

  auto plain = [&](const Tensor& tensor) {
    return [&backend, tensor](std::vector<uint8_t>& host) { read_tensor(backend, tensor, host); };
  };
  auto as_f32 = [&](const Tensor& tensor) {
    return [&backend, tensor](std::vector<uint8_t>& host) { read_as_f32(backend, tensor, host); };
  };
  auto permuted = [&](const Tensor& tensor) {
    return [&backend, tensor, head_dim = config.head_dim](std::vector<uint8_t>& host) {
      read_permuted(backend, tensor, head_dim, host);
    };
  };
  const DType dtype = weights.dtype;
  gguf.add_tensor("token_embd.weight", shape_of(weights.embed_tokens), dtype, plain(weights.embed_tokens));
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    const LayerWeights& layer = weights.layers[i];
    const std::string block = "blk." + std::to_string(i) + ".";
    gguf.add_tensor(block + "attn_norm.weight", shape_of(layer.input_layernorm), DType::F32,
                    as_f32(layer.input_layernorm));
    gguf.add_tensor(block + "attn_q.weight", shape_of(layer.q_proj), dtype, permuted(layer.q_proj));
    gguf.add_tensor(block + "attn_k.weight", shape_of(layer.k_proj), dtype, permuted(layer.k_proj));
    gguf.add_tensor(block + "attn_v.weight", shape_of(layer.v_proj), dtype, plain(layer.v_proj));
    gguf.add_tensor(block + "attn_output.weight", shape_of(layer.o_proj), dtype, plain(layer.o_proj));
    gguf.add_tensor(block + "ffn_norm.weight", shape_of(layer.post_attention_layernorm), DType::F32,
                    as_f32(layer.post_attention_layernorm));
    gguf.add_tensor(block + "ffn_gate.weight", shape_of(layer.gate_proj), dtype, plain(layer.gate_proj));
    gguf.add_tensor(block + "ffn_up.weight", shape_of(layer.up_proj), dtype, plain(layer.up_proj));
    gguf.add_tensor(block + "ffn_down.weight", shape_of(layer.down_proj), dtype, plain(layer.down_proj));
  }
  gguf.add_tensor("output_norm.weight", shape_of(weights.norm), DType::F32, as_f32(weights.norm));
  if (!config.tie_word_embeddings)
    gguf.add_tensor("output.weight", shape_of(weights.lm_head), dtype, plain(weights.lm_head));
  gguf.write(file);
}

}  // namespace decodelab::bench
