// Derived sizes and validation of a model shape; RoPE inverse frequencies.
#include "engine/model/model_config.h"

#include <cmath>
#include <cstdio>

namespace decodelab {

std::string ModelConfig::finalize_and_validate() {
  auto positive = [](const char* key, int64_t value) -> std::string {
    if (value <= 0) return std::string(key) + " must be a positive integer (got " + std::to_string(value) + ")";
    return "";
  };
  for (auto [key, value] : {std::pair<const char*, int64_t>{"vocab_size", vocab_size},
                            {"hidden_size", hidden_size},
                            {"intermediate_size", intermediate_size},
                            {"num_hidden_layers", num_hidden_layers},
                            {"num_attention_heads", num_attention_heads},
                            {"max_position_embeddings", max_position_embeddings}}) {
    if (auto problem = positive(key, value); !problem.empty()) return problem;
  }
  if (num_key_value_heads == 0) num_key_value_heads = num_attention_heads;
  if (num_key_value_heads < 0) return "num_key_value_heads must be a positive integer";
  if (head_dim == 0) {
    if (hidden_size % num_attention_heads != 0)
      return "num_attention_heads (" + std::to_string(num_attention_heads) + ") must divide hidden_size (" +
             std::to_string(hidden_size) + ")";
    head_dim = hidden_size / num_attention_heads;
  }
  if (head_dim < 0) return "head_dim must be a positive integer";
  if (head_dim % 2 != 0) return "head_dim (" + std::to_string(head_dim) + ") must be even for RoPE";
  if (num_attention_heads % num_key_value_heads != 0)
    return "num_key_value_heads (" + std::to_string(num_key_value_heads) + ") must divide num_attention_heads (" +
           std::to_string(num_attention_heads) + ")";
  // Derived widths are ints in the engine; the parameter count must stay far from int64's end.
  if (int64_t{num_attention_heads} * head_dim > INT32_MAX)
    return "num_attention_heads × head_dim (" + std::to_string(int64_t{num_attention_heads} * head_dim) +
           ") must be at most 2^31 - 1";
  const double hidden = hidden_size, layers = num_hidden_layers;
  const double parameters = 2.0 * vocab_size * hidden + hidden +
                            layers * (2.0 * hidden + 2.0 * hidden * q_width() + 2.0 * hidden * kv_width() +
                                      3.0 * hidden * intermediate_size);
  if (parameters > kMaxParameters) {
    char text[160];
    std::snprintf(text, sizeof text, "hidden_size (%d) and the other sizes give %.3g parameters; decodelab plans up to %.0e",
                  hidden_size, parameters, kMaxParameters);
    return text;
  }
  if (!(rms_norm_eps > 0)) return "rms_norm_eps must be positive";
  if (!(rope_theta > 0)) return "rope_theta must be positive";
  if (rope_scaling.enabled) {
    if (!(rope_scaling.factor > 0)) return "rope_scaling.factor must be positive";
    if (!(rope_scaling.high_freq_factor > rope_scaling.low_freq_factor))
      return "rope_scaling.high_freq_factor must exceed low_freq_factor";
    if (rope_scaling.original_max_position_embeddings <= 0)
      return "rope_scaling.original_max_position_embeddings must be positive";
  }
  return "";
}

int64_t ModelConfig::parameter_count() const {
  const int64_t hidden = hidden_size;
  const int64_t per_layer = 2 * hidden                                   // two norms
                            + hidden * q_width() + 2 * hidden * kv_width()  // q, k, v
                            + int64_t{q_width()} * hidden                   // o
                            + 3 * hidden * intermediate_size;               // gate, up, down
  const int64_t embedding = int64_t{vocab_size} * hidden;
  return embedding + (tie_word_embeddings ? 0 : embedding) + hidden + per_layer * num_hidden_layers;
}

int64_t ModelConfig::streamed_parameters_per_step() const {
  const int64_t embedding = int64_t{vocab_size} * hidden_size;
  return parameter_count() - (tie_word_embeddings ? 0 : embedding);
}

int64_t ModelConfig::kv_bytes_per_position(DType dtype) const {
  return 2LL * num_hidden_layers * kv_width() * static_cast<int64_t>(dtype_size(dtype));
}

std::vector<float> rope_inverse_frequencies(const ModelConfig& config) {
  const int half = config.head_dim / 2;
  std::vector<float> inverse_frequencies(half);
  const double pi = 3.14159265358979323846;
  for (int j = 0; j < half; ++j) {
    // torch computes inv_freq in fp32: 1 / theta^(arange(0, d, 2) / d)
    const float exponent = static_cast<float>(2 * j) / static_cast<float>(config.head_dim);
    float inv_freq = 1.0f / std::pow(static_cast<float>(config.rope_theta), exponent);
    if (config.rope_scaling.enabled) {
      const RopeScaling& s = config.rope_scaling;
      const double low_freq_wavelen = s.original_max_position_embeddings / s.low_freq_factor;
      const double high_freq_wavelen = s.original_max_position_embeddings / s.high_freq_factor;
      const double wavelen = 2 * pi / inv_freq;
      if (wavelen > low_freq_wavelen) {
        inv_freq = static_cast<float>(inv_freq / s.factor);
      } else if (wavelen >= high_freq_wavelen) {
        const double smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor) /
                              (s.high_freq_factor - s.low_freq_factor);
        inv_freq = static_cast<float>((1 - smooth) * inv_freq / s.factor + smooth * inv_freq);
      }
    }
    inverse_frequencies[j] = inv_freq;
  }
  return inverse_frequencies;
}

}  // namespace decodelab
