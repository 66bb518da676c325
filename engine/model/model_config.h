// The shape of a Llama-architecture model, with Hugging Face's field names, and the
// quantities derived from it (parameter count, weight bytes, KV bytes per position).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/dtype.h"

namespace decodelab {

// Llama 3.1/3.2 "llama3" rope_scaling; absent (enabled=false) for plain RoPE.
struct RopeScaling {
  bool enabled = false;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int original_max_position_embeddings = 8192;
};

// Models larger than this are refused as input errors (the largest real ones have ~1e12):
// it keeps every derived byte count far from int64 overflow.
constexpr double kMaxParameters = 1e15;

struct ModelConfig {
  std::string name;
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;  // = num_attention_heads when absent
  int head_dim = 0;             // = hidden_size / num_attention_heads when absent
  int max_position_embeddings = 0;
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;

  // Fills defaults (kv heads, head_dim) and returns "" or the first problem, naming the
  // field: "num_key_value_heads (3) must divide num_attention_heads (4)".
  std::string finalize_and_validate();

  int64_t parameter_count() const;
  int64_t weight_bytes(DType dtype) const { return parameter_count() * static_cast<int64_t>(dtype_size(dtype)); }
  // Parameters touched by one decode step: every layer and the LM head; the embedding
  // table is only gathered (one row per token).
  int64_t streamed_parameters_per_step() const;
  // K and V bytes one position occupies across all layers.
  int64_t kv_bytes_per_position(DType dtype) const;
  int q_width() const { return num_attention_heads * head_dim; }
  int kv_width() const { return num_key_value_heads * head_dim; }
};

// inv_freq[j] = theta^(-2j/head_dim), j < head_dim/2, with llama3 scaling applied.
std::vector<float> rope_inverse_frequencies(const ModelConfig& config);

}  // namespace decodelab
