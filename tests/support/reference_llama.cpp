// The double-precision reference forward. Every step is a loop over plain vectors,
// in the order FORMATS.md states the model; only the last position's logits are formed
// (the others are never needed by greedy decoding).
#include "tests/support/reference_llama.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "engine/checkpoint/safetensors.h"

namespace decodelab::testing {

namespace {

using Matrix = std::vector<double>;  // row-major, dims carried by the caller

// Every parameter slot with its Hugging Face name and expected element count.
struct NamedSlot {
  std::string name;
  std::vector<double>* values;
  size_t count;
};

std::vector<NamedSlot> named_slots(ReferenceWeights& weights, const ModelConfig& config) {
  const size_t hidden = config.hidden_size;
  const size_t vocab = config.vocab_size;
  const size_t q_width = static_cast<size_t>(config.num_attention_heads) * config.head_dim;
  const size_t kv_width = static_cast<size_t>(config.num_key_value_heads) * config.head_dim;
  const size_t intermediate = config.intermediate_size;
  weights.layers.resize(config.num_hidden_layers);
  std::vector<NamedSlot> slots = {{"model.embed_tokens.weight", &weights.embed_tokens, vocab * hidden}};
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    ReferenceLayer& layer = weights.layers[i];
    const std::string prefix = "model.layers." + std::to_string(i) + ".";
    slots.push_back({prefix + "input_layernorm.weight", &layer.input_layernorm, hidden});
    slots.push_back({prefix + "self_attn.q_proj.weight", &layer.q_proj, q_width * hidden});
    slots.push_back({prefix + "self_attn.k_proj.weight", &layer.k_proj, kv_width * hidden});
    slots.push_back({prefix + "self_attn.v_proj.weight", &layer.v_proj, kv_width * hidden});
    slots.push_back({prefix + "self_attn.o_proj.weight", &layer.o_proj, hidden * q_width});
    slots.push_back({prefix + "post_attention_layernorm.weight", &layer.post_attention_layernorm, hidden});
    slots.push_back({prefix + "mlp.gate_proj.weight", &layer.gate_proj, intermediate * hidden});
    slots.push_back({prefix + "mlp.up_proj.weight", &layer.up_proj, intermediate * hidden});
    slots.push_back({prefix + "mlp.down_proj.weight", &layer.down_proj, hidden * intermediate});
  }
  slots.push_back({"model.norm.weight", &weights.norm, hidden});
  if (!config.tie_word_embeddings) slots.push_back({"lm_head.weight", &weights.lm_head, vocab * hidden});
  return slots;
}

// y[rows_out] = W[rows_out, columns] · x[columns]
void linear(const Matrix& weight, const double* x, size_t rows_out, size_t columns, double* y) {
  for (size_t row = 0; row < rows_out; ++row) {
    const double* w = weight.data() + row * columns;
    double sum = 0;
    for (size_t c = 0; c < columns; ++c) sum += w[c] * x[c];
    y[row] = sum;
  }
}

// w * (x / sqrt(mean(x²) + eps))
void rmsnorm(const double* x, const std::vector<double>& weight, double eps, size_t size, double* out) {
  double sum_of_squares = 0;
  for (size_t i = 0; i < size; ++i) sum_of_squares += x[i] * x[i];
  const double inverse_rms = 1.0 / std::sqrt(sum_of_squares / static_cast<double>(size) + eps);
  for (size_t i = 0; i < size; ++i) out[i] = weight[i] * (x[i] * inverse_rms);
}

// Rotate-half RoPE on one head vector: pairs (j, j + d/2).
void rotate_half(double* head, const std::vector<double>& inverse_frequencies, int position) {
  const size_t half = inverse_frequencies.size();
  for (size_t j = 0; j < half; ++j) {
    const double angle = position * inverse_frequencies[j];
    const double cosine = std::cos(angle), sine = std::sin(angle);
    const double first = head[j], second = head[j + half];
    head[j] = first * cosine - second * sine;
    head[j + half] = second * cosine + first * sine;
  }
}

double silu(double z) { return z / (1.0 + std::exp(-z)); }

}  // namespace

ReferenceWeights reference_weights_from_checkpoint(const std::filesystem::path& directory, const ModelConfig& config) {
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::map<std::string, const SafetensorsTensor*> tensors;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.path().extension() != ".safetensors") continue;
    files.push_back(std::make_unique<SafetensorsFile>(entry.path()));
    for (const auto& [name, tensor] : files.back()->tensors()) tensors[name] = &tensor;
  }
  ReferenceWeights weights;
  for (const NamedSlot& slot : named_slots(weights, config)) {
    const auto found = tensors.find(slot.name);
    if (found == tensors.end()) throw std::runtime_error("reference: checkpoint lacks " + slot.name);
    const SafetensorsTensor& tensor = *found->second;
    if (static_cast<size_t>(tensor.numel()) != slot.count) throw std::runtime_error("reference: size of " + slot.name);
    std::vector<float> values(slot.count);
    tensor.convert_to(DType::F32, values.data());  // exact for F32/F16/BF16
    slot.values->assign(values.begin(), values.end());
  }
  return weights;
}

ReferenceWeights reference_weights_from_device(Backend& backend, const ModelConfig& config, ModelWeights& weights) {
  std::map<std::string, Tensor> device_tensors;
  weights.for_each(config, [&](const std::string& name, const Tensor& tensor) { device_tensors[name] = tensor; });
  ReferenceWeights reference;
  for (const NamedSlot& slot : named_slots(reference, config)) {
    const Tensor& tensor = device_tensors.at(slot.name);
    if (static_cast<size_t>(tensor.numel()) != slot.count) throw std::runtime_error("reference: size of " + slot.name);
    std::vector<uint8_t> host(tensor.bytes());
    backend.copy_to_host(host.data(), tensor.data, host.size(), /*pinned=*/true, /*id=*/0);
    slot.values->resize(slot.count);
    for (size_t i = 0; i < slot.count; ++i) (*slot.values)[i] = load_as_float(host.data(), tensor.dtype, i);
  }
  backend.take_timings();  // the reads above are not part of any measured run
  return reference;
}

ReferenceLlama::ReferenceLlama(const ModelConfig& config, ReferenceWeights weights)
    : config_(config), weights_(std::move(weights)) {
  const int head_dim = config_.head_dim;
  const double pi = std::acos(-1.0);
  for (int j = 0; j < head_dim / 2; ++j) {
    double inverse_frequency = std::pow(config_.rope_theta, -2.0 * j / head_dim);
    if (config_.rope_scaling.enabled) {
      // llama3: long wavelengths slowed by `factor`, short ones kept, a linear blend between.
      const RopeScaling& scaling = config_.rope_scaling;
      const double original_length = scaling.original_max_position_embeddings;
      const double wavelength = 2 * pi / inverse_frequency;
      if (wavelength < original_length / scaling.high_freq_factor) {
        // high frequency: unchanged
      } else if (wavelength > original_length / scaling.low_freq_factor) {
        inverse_frequency /= scaling.factor;
      } else {
        const double smooth = (original_length / wavelength - scaling.low_freq_factor) /
                              (scaling.high_freq_factor - scaling.low_freq_factor);
        inverse_frequency = (1 - smooth) * inverse_frequency / scaling.factor + smooth * inverse_frequency;
      }
    }
    inverse_frequencies_.push_back(inverse_frequency);
  }
}

std::vector<double> ReferenceLlama::last_logits(const std::vector<int32_t>& tokens) const {
  const size_t length = tokens.size();
  if (length == 0) throw std::invalid_argument("reference: empty sequence");
  const size_t hidden = config_.hidden_size;
  const size_t heads = config_.num_attention_heads;
  const size_t kv_heads = config_.num_key_value_heads;
  const size_t head_dim = config_.head_dim;
  const size_t queries_per_kv = heads / kv_heads;
  const size_t intermediate = config_.intermediate_size;
  const size_t vocab = config_.vocab_size;
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));

  Matrix residual(length * hidden);  // (position, hidden)
  for (size_t t = 0; t < length; ++t) {
    if (tokens[t] < 0 || static_cast<size_t>(tokens[t]) >= vocab) throw std::out_of_range("reference: token id");
    std::copy_n(weights_.embed_tokens.begin() + static_cast<ptrdiff_t>(tokens[t] * hidden), hidden,
                residual.begin() + static_cast<ptrdiff_t>(t * hidden));
  }

  Matrix normed(length * hidden), q(length * heads * head_dim), k(length * kv_heads * head_dim),
      v(length * kv_heads * head_dim), attended(length * heads * head_dim), projected(hidden);
  Matrix gate(intermediate), up(intermediate), scores(length);
  for (const ReferenceLayer& layer : weights_.layers) {
    // Attention block: h = h + o_proj(attention(rmsnorm(h)))
    for (size_t t = 0; t < length; ++t) {
      double* x = &normed[t * hidden];
      rmsnorm(&residual[t * hidden], layer.input_layernorm, config_.rms_norm_eps, hidden, x);
      linear(layer.q_proj, x, heads * head_dim, hidden, &q[t * heads * head_dim]);
      linear(layer.k_proj, x, kv_heads * head_dim, hidden, &k[t * kv_heads * head_dim]);
      linear(layer.v_proj, x, kv_heads * head_dim, hidden, &v[t * kv_heads * head_dim]);
      for (size_t h = 0; h < heads; ++h) rotate_half(&q[(t * heads + h) * head_dim], inverse_frequencies_, int(t));
      for (size_t h = 0; h < kv_heads; ++h)
        rotate_half(&k[(t * kv_heads + h) * head_dim], inverse_frequencies_, int(t));
    }
    for (size_t t = 0; t < length; ++t) {
      for (size_t h = 0; h < heads; ++h) {
        const size_t kv_head = h / queries_per_kv;
        const double* query = &q[(t * heads + h) * head_dim];
        double largest = -INFINITY;
        for (size_t s = 0; s <= t; ++s) {  // causal: keys at positions 0..t
          const double* key = &k[(s * kv_heads + kv_head) * head_dim];
          double dot = 0;
          for (size_t d = 0; d < head_dim; ++d) dot += query[d] * key[d];
          scores[s] = dot * scale;
          largest = std::max(largest, scores[s]);
        }
        double total = 0;
        for (size_t s = 0; s <= t; ++s) total += scores[s] = std::exp(scores[s] - largest);
        double* out = &attended[(t * heads + h) * head_dim];
        std::fill_n(out, head_dim, 0.0);
        for (size_t s = 0; s <= t; ++s) {
          const double* value = &v[(s * kv_heads + kv_head) * head_dim];
          for (size_t d = 0; d < head_dim; ++d) out[d] += scores[s] / total * value[d];
        }
      }
    }
    for (size_t t = 0; t < length; ++t) {
      linear(layer.o_proj, &attended[t * heads * head_dim], hidden, heads * head_dim, projected.data());
      for (size_t i = 0; i < hidden; ++i) residual[t * hidden + i] += projected[i];
    }
    // MLP block: h = h + down(silu(gate(x)) * up(x)), x = rmsnorm(h)
    for (size_t t = 0; t < length; ++t) {
      double* x = &normed[t * hidden];
      rmsnorm(&residual[t * hidden], layer.post_attention_layernorm, config_.rms_norm_eps, hidden, x);
      linear(layer.gate_proj, x, intermediate, hidden, gate.data());
      linear(layer.up_proj, x, intermediate, hidden, up.data());
      for (size_t i = 0; i < intermediate; ++i) gate[i] = silu(gate[i]) * up[i];
      linear(layer.down_proj, gate.data(), hidden, intermediate, projected.data());
      for (size_t i = 0; i < hidden; ++i) residual[t * hidden + i] += projected[i];
    }
  }

  std::vector<double> final_hidden(hidden), logits(vocab);
  rmsnorm(&residual[(length - 1) * hidden], weights_.norm, config_.rms_norm_eps, hidden, final_hidden.data());
  const Matrix& head = config_.tie_word_embeddings ? weights_.embed_tokens : weights_.lm_head;
  linear(head, final_hidden.data(), vocab, hidden, logits.data());
  return logits;
}

ReferenceLlama::Generation ReferenceLlama::generate_greedy(const std::vector<int32_t>& prompt, int new_tokens) const {
  Generation generation;
  std::vector<int32_t> sequence = prompt;
  for (int step = 0; step < new_tokens; ++step) {
    std::vector<double> logits = last_logits(sequence);
    const int32_t next = argmax_index(logits);
    generation.tokens.push_back(next);
    generation.step_logits.push_back(std::move(logits));
    sequence.push_back(next);
  }
  return generation;
}

int32_t argmax_index(const std::vector<double>& values) {
  size_t best = 0;
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i] > values[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

double top2_gap(const std::vector<double>& values) {
  double first = -INFINITY, second = -INFINITY;
  for (double value : values) {
    if (value > first) {
      second = first;
      first = value;
    } else if (value > second) {
      second = value;
    }
  }
  return first - second;
}

}  // namespace decodelab::testing
