// The Llama model: config, weights, KV cache and activation workspace, and the forward
// pass written once against the op front layer. `forward` runs `rows_per_sequence`
// consecutive tokens of each sequence in a group (a prompt for prefill, one token for a
// decode step, the whole prefix when the cache is not used), writes their keys/values,
// and leaves the next token of every sequence in the token history.
#pragma once

#include <memory>
#include <vector>

#include "bugs/bug_set.h"
#include "engine/device_buffer.h"
#include "engine/model/kv_cache.h"
#include "engine/model/model_config.h"
#include "engine/ops.h"
#include "engine/model/weights.h"

namespace decodelab {

// The matmuls of one layer as the forward pass runs them: q/k/v and gate/up fused, one
// matmul each over the weights concatenated by rows (as serving engines do; ModelWeights
// allocates the parts as consecutive rows, so these are views of the same memory).
struct LayerProjections {
  Tensor qkv_proj;      // [(heads + 2*kv_heads)*head_dim, hidden] = [q_proj; k_proj; v_proj]
  Tensor o_proj;        // [hidden, heads*head_dim]
  Tensor gate_up_proj;  // [2*intermediate, hidden] = [gate_proj; up_proj]
  Tensor down_proj;     // [hidden, intermediate]
};

// fp32 copies of weights (kept only when a bug computes norms or matmuls in fp32).
struct Fp32Weights {
  std::vector<LayerProjections> projections;  // when matmuls run in fp32
  std::vector<LayerWeights> layers;           // norms only; when norms run in fp32
  Tensor norm;
  Tensor lm_head;
  std::vector<DeviceBuffer> storage;
};

// One call of the forward pass over a group of sequences.
struct ForwardPass {
  int sequences = 1;          // S: sequences in the group
  int rows_per_sequence = 1;  // R: consecutive tokens per sequence in this pass
  int first_position = 0;     // position of each sequence's first row (all sequences share it)
  Tensor positions;           // [S*R] int32 on the device: first_position + row % R
  Tensor tokens;              // [S, max_positions] int32 token history of the group
  Tensor logits;              // [S, vocab] output rows of the group
};

class Model {
 public:
  Model(Backend& backend, const ModelConfig& config, ModelWeights weights, const BugSet& bugs);
  // Weights another model on the same backend already holds: a model only reads its
  // weights (the bugs' fp32 copies are its own), so models of one config may share them.
  Model(Backend& backend, const ModelConfig& config, std::shared_ptr<const ModelWeights> weights, const BugSet& bugs);

  const ModelConfig& config() const { return config_; }
  DType dtype() const { return weights_->dtype; }
  const std::shared_ptr<const ModelWeights>& weights() const { return weights_; }
  const BugSet& bugs() const { return bugs_; }

  // Makes room for groups of `sequences` sequences of up to `max_positions` tokens, and
  // forward passes of up to `max_rows` rows. Reuses what it has when it is big enough.
  // Also asks the backend to reserve decode attention's scratch (Backend::reserve_attention).
  void reserve(int sequences, int max_positions, int max_rows);

  // The buffers reserve() allocates besides the KV cache, in bytes. Memory planning and
  // reserve() both read these sizes, so the plan cannot drift from what is allocated.
  struct WorkspaceSizes {
    std::vector<int64_t> activations;  // one per activation buffer, in the order of Model::Rows
    int64_t contiguous_copy = 0;       // each of K and V scratch of the cache-copy bug
    int64_t fp32_in = 0, fp32_out = 0;  // scratch of the fp32 bug
    int64_t total() const;
  };
  static WorkspaceSizes workspace_sizes(const ModelConfig& config, DType dtype, const BugSet& bugs,
                                        int64_t sequences, int64_t max_positions, int64_t max_rows);
  // Bytes the model holds whatever the workload: RoPE inverse frequencies.
  static int64_t constant_bytes(const ModelConfig& config);
  // Bytes of the extra weight copies the bugs keep.
  static int64_t extra_weight_bytes(const ModelConfig& config, const BugSet& bugs);

  // Embedding -> layers -> final norm -> LM head -> argmax into the token history.
  void forward(Ops& ops, const ForwardPass& pass);

  // --check-numerics: throws NumericalError naming the first parameter tensor (HF name)
  // that holds a NaN or an Inf (a bad checkpoint, before any op is blamed).
  void check_weights_finite(Ops& ops);

 private:
  struct Rows;  // activation views for one pass
  Rows rows(int count) const;
  void decoder_layer(Ops& ops, int layer, const ForwardPass& pass, const Rows& a);
  void attend(Ops& ops, int layer, const ForwardPass& pass, const Rows& a);
  void norm(Ops& ops, const Tensor& x, const Tensor& weight, const Tensor& fp32_weight, const Tensor& out,
            const char* label);
  void project(Ops& ops, const Tensor& x, const Tensor& weight, const Tensor& fp32_weight, const Tensor& out,
               const char* label);
  void prepare_fp32_weights();

  Backend& backend_;
  ModelConfig config_;
  std::shared_ptr<const ModelWeights> weights_;  // read only, possibly shared with other models
  std::vector<LayerProjections> projections_;     // views of *weights_
  BugSet bugs_;
  Fp32Weights fp32_weights_;
  DeviceBuffer inv_freq_;  // [head_dim/2] fp32
  KvCache kv_cache_;
  int reserved_rows_ = 0;
  std::vector<DeviceBuffer> workspace_;
  DeviceBuffer contiguous_keys_, contiguous_values_;  // scratch of the cache-copy bug
  DeviceBuffer fp32_in_, fp32_out_;                    // scratch of the fp32 bug
  std::vector<Tensor> activation_views_;
};

}  // namespace decodelab
