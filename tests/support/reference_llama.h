// Test oracle: a plain double-precision Llama forward pass, written from the Hugging Face
// LlamaForCausalLM semantics in FORMATS.md and sharing no code with the engine's forward
// pass. Generation recomputes the whole sequence every step (no KV cache): slow, and
// obviously right, which is the point of an oracle.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "engine/backend.h"
#include "engine/model/model_config.h"
#include "engine/model/weights.h"

namespace decodelab::testing {

// Parameters as doubles, Hugging Face layout: a Linear weight is [out, in], row-major.
struct ReferenceLayer {
  std::vector<double> input_layernorm;           // [hidden]
  std::vector<double> q_proj;                    // [heads*head_dim, hidden]
  std::vector<double> k_proj;                    // [kv_heads*head_dim, hidden]
  std::vector<double> v_proj;                    // [kv_heads*head_dim, hidden]
  std::vector<double> o_proj;                    // [hidden, heads*head_dim]
  std::vector<double> post_attention_layernorm;  // [hidden]
  std::vector<double> gate_proj;                 // [intermediate, hidden]
  std::vector<double> up_proj;                   // [intermediate, hidden]
  std::vector<double> down_proj;                 // [hidden, intermediate]
};

struct ReferenceWeights {
  std::vector<double> embed_tokens;  // [vocab, hidden]
  std::vector<ReferenceLayer> layers;
  std::vector<double> norm;     // [hidden]
  std::vector<double> lm_head;  // [vocab, hidden]; empty when tied (embed_tokens is used)
};

// From every *.safetensors file in a checkpoint directory (names must be unique).
ReferenceWeights reference_weights_from_checkpoint(const std::filesystem::path& directory, const ModelConfig& config);
// From the engine's device tensors, read back with copy_to_host.
ReferenceWeights reference_weights_from_device(Backend& backend, const ModelConfig& config, ModelWeights& weights);

class ReferenceLlama {
 public:
  ReferenceLlama(const ModelConfig& config, ReferenceWeights weights);

  // Logits [vocab] at the last position after the sequence `tokens` (positions 0..n-1).
  std::vector<double> last_logits(const std::vector<int32_t>& tokens) const;

  struct Generation {
    std::vector<int32_t> tokens;                   // [new_tokens]
    std::vector<std::vector<double>> step_logits;  // [new_tokens][vocab]: what each token came from
  };
  // Greedy decoding: argmax (first index on ties), recomputing everything each step.
  Generation generate_greedy(const std::vector<int32_t>& prompt, int new_tokens) const;

  // inv_freq [head_dim/2] in double, llama3 scaling applied.
  const std::vector<double>& inverse_frequencies() const { return inverse_frequencies_; }

 private:
  ModelConfig config_;
  ReferenceWeights weights_;
  std::vector<double> inverse_frequencies_;
};

// Index of the largest value (first on ties), and the gap between the two largest.
int32_t argmax_index(const std::vector<double>& values);
double top2_gap(const std::vector<double>& values);

}  // namespace decodelab::testing
