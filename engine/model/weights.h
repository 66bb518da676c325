// The model's parameters on the device, with Hugging Face's names and shapes
// (a Linear weight is [out, in]). ModelWeights owns its buffers; the tensors are views.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "engine/device_buffer.h"
#include "engine/model/model_config.h"
#include "engine/base/tensor.h"

namespace decodelab {

struct LayerWeights {
  Tensor input_layernorm;           // [hidden]
  Tensor q_proj;                    // [heads*head_dim, hidden]
  Tensor k_proj;                    // [kv_heads*head_dim, hidden]
  Tensor v_proj;                    // [kv_heads*head_dim, hidden]
  Tensor o_proj;                    // [hidden, heads*head_dim]
  Tensor post_attention_layernorm;  // [hidden]
  Tensor gate_proj;                 // [intermediate, hidden]
  Tensor up_proj;                   // [intermediate, hidden]
  Tensor down_proj;                 // [hidden, intermediate]
};

struct ModelWeights {
  DType dtype = DType::F32;
  Tensor embed_tokens;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  Tensor norm;          // [hidden]
  Tensor lm_head;       // [vocab, hidden]; the same view as embed_tokens when tied
  std::vector<DeviceBuffer> storage;

  // Allocates every tensor (uninitialised) with the config's shapes.
  static ModelWeights allocate(Backend& backend, const ModelConfig& config, DType dtype);
  // The same tensors with no memory behind them (data == nullptr): their names and shapes,
  // for checking a checkpoint before anything is allocated.
  static ModelWeights describe(const ModelConfig& config, DType dtype);
  // Visits every tensor with its Hugging Face name ("model.layers.0.self_attn.q_proj.weight");
  // lm_head is skipped when tied.
  template <typename Visitor>
  void for_each(const ModelConfig& config, Visitor&& visit);
  // The same, read only: the visitor takes (const std::string&, const Tensor&).
  template <typename Visitor>
  void for_each(const ModelConfig& config, Visitor&& visit) const {
    const_cast<ModelWeights*>(this)->for_each(config, [&](const std::string& name, const Tensor& tensor) {
      visit(name, tensor);
    });
  }
};

// Fills a device tensor with seeded values uniform in [-√3·stddev, √3·stddev) (standard
// deviation `stddev`), the same for a given stream on every backend; generated on the host
// in parallel, then uploaded. Benchmarks and roof measurements fill their operands with it.
void fill_uniform(const Tensor& tensor, Backend& backend, uint64_t stream, float stddev);

// Seeded random parameters, the same for a given (config, dtype, seed) on every backend:
// projections uniform with std 1/sqrt(fan_in), embeddings with std 1, norm weights 1.
ModelWeights random_weights(Backend& backend, const ModelConfig& config, DType dtype, uint64_t seed);

template <typename Visitor>
void ModelWeights::for_each(const ModelConfig& config, Visitor&& visit) {
  visit("model.embed_tokens.weight", embed_tokens);
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string prefix = "model.layers." + std::to_string(i) + ".";
    LayerWeights& layer = layers[i];
    visit(prefix + "input_layernorm.weight", layer.input_layernorm);
    visit(prefix + "self_attn.q_proj.weight", layer.q_proj);
    visit(prefix + "self_attn.k_proj.weight", layer.k_proj);
    visit(prefix + "self_attn.v_proj.weight", layer.v_proj);
    visit(prefix + "self_attn.o_proj.weight", layer.o_proj);
    visit(prefix + "post_attention_layernorm.weight", layer.post_attention_layernorm);
    visit(prefix + "mlp.gate_proj.weight", layer.gate_proj);
    visit(prefix + "mlp.up_proj.weight", layer.up_proj);
    visit(prefix + "mlp.down_proj.weight", layer.down_proj);
  }
  visit("model.norm.weight", norm);
  if (!config.tie_word_embeddings) visit("lm_head.weight", lm_head);
}

}  // namespace decodelab
