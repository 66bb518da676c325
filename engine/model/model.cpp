// The Llama forward pass (Hugging Face LlamaForCausalLM semantics), written once against
// the op front layer. Each decoder layer reads like the model; the few places where the
// bugs deviate ask the BugSet and call bugs/ (see bugs/deviations.h). As serving engines
// do, q/k/v is one matmul over the concatenated weights (qkv_proj) and gate/up another
// (gate_up_proj); RoPE, the KV store and attention read q, k and v as column slices of
// qkv_proj's output, and SwiGLU reads gate and up as the two halves of gate_up_proj's.
#include "engine/model/model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "bugs/deviations.h"
#include "engine/base/saturating.h"

namespace decodelab {

struct Model::Rows {
  Tensor hidden;        // [M, hidden]: the residual stream
  Tensor normed;        // [M, hidden]
  Tensor qkv;           // [M, (heads + 2*kv_heads)*head_dim]: qkv_proj's output
  Tensor q, k, v;       // its column slices [M, heads*head_dim], [M, kv_heads*head_dim] x 2
  Tensor attn;          // [M, heads*head_dim]
  Tensor projected;     // [M, hidden]: o_proj / down_proj outputs
  Tensor gate_up;       // [M, 2*intermediate]: gate_up_proj's output
  Tensor gate, up;      // its halves [M, intermediate]
  Tensor activated;     // [M, intermediate]
  Tensor last_hidden;   // [S, hidden]: the last row of each sequence
  Tensor final_normed;  // [S, hidden]
};

namespace {

// Output widths of the fused projections: q | k | v, and gate | up.
int64_t qkv_width(const ModelConfig& c) { return int64_t{c.q_width()} + 2 * int64_t{c.kv_width()}; }
int64_t gate_up_width(const ModelConfig& c) { return 2 * int64_t{c.intermediate_size}; }

// Widths of the activation buffers: hidden, normed, qkv, attn, projected, gate_up,
// activated, last_hidden, final_normed (Model::Rows without the slices).
std::vector<int64_t> activation_widths(const ModelConfig& c) {
  return {c.hidden_size,    c.hidden_size,       qkv_width(c), c.q_width(), c.hidden_size,
          gate_up_width(c), c.intermediate_size, c.hidden_size, c.hidden_size};
}

// The widest input and output of a norm or projection (the fp32 bug's scratch).
int64_t widest_input(const ModelConfig& c) {
  return std::max<int64_t>({c.hidden_size, c.intermediate_size, c.q_width()});
}
int64_t widest_output(const ModelConfig& c) {
  return std::max<int64_t>({int64_t{c.hidden_size}, qkv_width(c), gate_up_width(c)});
}

// Columns [first, first + count) of a [rows, width] view: the same row stride.
Tensor columns(const Tensor& tensor, int64_t first, int64_t count) {
  Tensor view = tensor;
  view.data = static_cast<char*>(tensor.data) + first * static_cast<int64_t>(dtype_size(tensor.dtype));
  view.shape[1] = count;
  return view;
}

// One [sum of rows, K] view over weights that ModelWeights allocated as consecutive rows
// of one buffer; anything else is a programming error, not bad input.
Tensor stacked_rows(std::initializer_list<const Tensor*> parts) {
  const Tensor& first = **parts.begin();
  Tensor whole = first;
  whole.shape[0] = 0;
  const char* next = static_cast<const char*>(first.data);
  for (const Tensor* part : parts) {
    if (part->data != next || part->dtype != first.dtype || part->rank != 2 || part->shape[1] != first.shape[1] ||
        !part->is_contiguous())
      throw std::logic_error("fused projection weights must be consecutive rows of one buffer (ModelWeights::allocate)");
    whole.shape[0] += part->shape[0];
    next += part->bytes();
  }
  whole.strides[0] = first.shape[1];
  return whole;
}

}  // namespace

Model::Model(Backend& backend, const ModelConfig& config, ModelWeights weights, const BugSet& bugs)
    : Model(backend, config, std::make_shared<const ModelWeights>(std::move(weights)), bugs) {}

Model::Model(Backend& backend, const ModelConfig& config, std::shared_ptr<const ModelWeights> weights,
             const BugSet& bugs)
    : backend_(backend), config_(config), weights_(std::move(weights)), bugs_(bugs) {
  for (const LayerWeights& w : weights_->layers) {
    projections_.push_back({stacked_rows({&w.q_proj, &w.k_proj, &w.v_proj}), w.o_proj,
                            stacked_rows({&w.gate_proj, &w.up_proj}), w.down_proj});
  }
  const std::vector<float> inv_freq = rope_inverse_frequencies(config_);
  inv_freq_ = DeviceBuffer(backend_, inv_freq.size() * sizeof(float));
  backend_.upload(inv_freq_.get(), inv_freq.data(), inv_freq.size() * sizeof(float));
  if (bugs_.fp32_ops && is_half(weights_->dtype)) prepare_fp32_weights();
}

int64_t Model::WorkspaceSizes::total() const {
  int64_t bytes = saturating_add(saturating_mul(2, contiguous_copy), fp32_in, fp32_out);
  for (int64_t activation : activations) bytes = saturating_add(bytes, activation);
  return bytes;
}

Model::WorkspaceSizes Model::workspace_sizes(const ModelConfig& config, DType dtype, const BugSet& bugs,
                                             int64_t sequences, int64_t max_positions, int64_t max_rows) {
  max_rows = std::max(max_rows, sequences);
  WorkspaceSizes sizes;
  for (int64_t width : activation_widths(config))
    sizes.activations.push_back(saturating_mul(width, max_rows, static_cast<int64_t>(dtype_size(dtype))));
  if (bugs.non_contiguous && bugs.non_contiguous_mode == NonContiguousMode::Copy) {
    // .contiguous() of one layer's K (and V) for every position the cache holds.
    sizes.contiguous_copy = KvCache::bytes_needed(1, sequences, max_positions, config.num_key_value_heads,
                                                  config.head_dim, dtype) / 2;
  }
  if (bugs.fp32_ops && is_half(dtype)) {
    sizes.fp32_in = saturating_mul(4, widest_input(config), max_rows);
    sizes.fp32_out = saturating_mul(4, std::max(saturating_mul(widest_output(config), max_rows),
                                                saturating_mul(config.vocab_size, sequences)));
  }
  return sizes;
}

int64_t Model::constant_bytes(const ModelConfig& config) { return int64_t{config.head_dim / 2} * 4; }

int64_t Model::extra_weight_bytes(const ModelConfig& config, const BugSet& bugs) {
  if (!bugs.fp32_ops) return 0;
  int64_t parameters = 0;
  if (bugs.fp32_matmuls()) {
    parameters += config.streamed_parameters_per_step() -
                  (int64_t{config.num_hidden_layers} * 2 + 1) * config.hidden_size;  // all but the norms
    if (config.tie_word_embeddings) parameters += int64_t{config.vocab_size} * config.hidden_size;
  }
  if (bugs.fp32_norms()) parameters += (int64_t{config.num_hidden_layers} * 2 + 1) * config.hidden_size;
  return 4 * parameters;
}

void Model::prepare_fp32_weights() {
  // What the buggy code holds: fp32 parameters (the model cast to half was forgotten for
  // these parts). Made once, on the device, before anything is timed.
  Ops setup(backend_);
  auto widen = [&](const Tensor& tensor) {
    fp32_weights_.storage.emplace_back(backend_, static_cast<size_t>(tensor.numel()) * 4);
    Tensor copy = tensor;
    copy.data = fp32_weights_.storage.back().get();
    copy.dtype = DType::F32;
    setup.cast(tensor, copy, "fp32_copy");
    return copy;
  };
  if (bugs_.fp32_matmuls()) {
    for (const LayerProjections& p : projections_)  // the fused weights, as the forward pass reads them
      fp32_weights_.projections.push_back(
          {widen(p.qkv_proj), widen(p.o_proj), widen(p.gate_up_proj), widen(p.down_proj)});
  }
  fp32_weights_.layers.resize(weights_->layers.size());
  for (size_t i = 0; i < weights_->layers.size(); ++i) {
    const LayerWeights& w = weights_->layers[i];
    LayerWeights& w32 = fp32_weights_.layers[i];
    if (bugs_.fp32_norms()) {
      w32.input_layernorm = widen(w.input_layernorm);
      w32.post_attention_layernorm = widen(w.post_attention_layernorm);
    }
  }
  if (bugs_.fp32_matmuls()) fp32_weights_.lm_head = widen(weights_->lm_head);
  if (bugs_.fp32_norms()) fp32_weights_.norm = widen(weights_->norm);
  setup.synchronize();
}

void Model::reserve(int sequences, int max_positions, int max_rows) {
  max_rows = std::max(max_rows, sequences);
  const WorkspaceSizes sizes = workspace_sizes(config_, weights_->dtype, bugs_, sequences, max_positions, max_rows);
  if (kv_cache_.sequences() < sequences || kv_cache_.max_positions() < max_positions) {
    kv_cache_ = KvCache();  // free first: the old cache may be large
    contiguous_keys_ = DeviceBuffer();
    contiguous_values_ = DeviceBuffer();
    kv_cache_ = KvCache(backend_, config_.num_hidden_layers, sequences, max_positions, config_.num_key_value_heads,
                        config_.head_dim, weights_->dtype,
                        bugs_.non_contiguous ? bugs::kv_cache_layout(bugs_) : KvLayout::HeadMajor);
    if (sizes.contiguous_copy > 0) {
      contiguous_keys_ = DeviceBuffer(backend_, static_cast<size_t>(sizes.contiguous_copy));
      contiguous_values_ = DeviceBuffer(backend_, static_cast<size_t>(sizes.contiguous_copy));
    }
  }
  // Decode attention's scratch (one row per sequence), so that a captured step needs no allocation.
  backend_.reserve_attention({sequences, config_.num_attention_heads, config_.num_key_value_heads, config_.head_dim,
                              kv_cache_.max_positions()});
  if (reserved_rows_ >= max_rows && fp32_out_.bytes() >= static_cast<size_t>(sizes.fp32_out)) return;
  workspace_.clear();  // free first, as above
  fp32_in_ = DeviceBuffer();
  fp32_out_ = DeviceBuffer();
  for (int64_t bytes : sizes.activations) workspace_.emplace_back(backend_, static_cast<size_t>(bytes));
  if (sizes.fp32_in > 0) {
    fp32_in_ = DeviceBuffer(backend_, static_cast<size_t>(sizes.fp32_in));
    fp32_out_ = DeviceBuffer(backend_, static_cast<size_t>(sizes.fp32_out));
  }
  reserved_rows_ = max_rows;
}

Model::Rows Model::rows(int count) const {
  const std::vector<int64_t> widths = activation_widths(config_);
  std::vector<Tensor> views;
  for (size_t i = 0; i < widths.size(); ++i)
    views.push_back(Tensor::contiguous(workspace_[i].get(), weights_->dtype, {count, widths[i]}));
  Rows a;
  a.hidden = views[0];
  a.normed = views[1];
  a.qkv = views[2];
  a.q = columns(a.qkv, 0, config_.q_width());
  a.k = columns(a.qkv, config_.q_width(), config_.kv_width());
  a.v = columns(a.qkv, int64_t{config_.q_width()} + config_.kv_width(), config_.kv_width());
  a.attn = views[3];
  a.projected = views[4];
  a.gate_up = views[5];
  a.gate = columns(a.gate_up, 0, config_.intermediate_size);
  a.up = columns(a.gate_up, config_.intermediate_size, config_.intermediate_size);
  a.activated = views[6];
  a.last_hidden = views[7];
  a.final_normed = views[8];
  return a;
}

void Model::forward(Ops& ops, const ForwardPass& pass) {
  const int S = pass.sequences, R = pass.rows_per_sequence;
  Rows a = rows(S * R);

  ops.embedding(weights_->embed_tokens, pass.tokens, pass.positions, R, a.hidden);
  for (int layer = 0; layer < config_.num_hidden_layers; ++layer) {
    ops.range_begin(RangeKind::Layer, layer);
    decoder_layer(ops, layer, pass, a);
    if (bugs_.host_sync) bugs::sync_after_layer(ops, bugs_, a.hidden);
    ops.range_end(RangeKind::Layer, layer);
  }

  // Only the last row of each sequence predicts a token (hidden[:, -1, :]).
  Tensor last = a.hidden;
  a.last_hidden = a.last_hidden.rows(0, S);
  a.final_normed = a.final_normed.rows(0, S);
  if (R > 1) {
    Tensor last_rows = a.hidden.rows(R - 1, S);
    last_rows.strides[0] *= R;
    ops.copy(last_rows, a.last_hidden, "last_token");
    last = a.last_hidden;
  }
  norm(ops, last, weights_->norm, fp32_weights_.norm, a.final_normed, "norm");
  project(ops, a.final_normed, weights_->lm_head, fp32_weights_.lm_head, pass.logits, "lm_head");

  Tensor last_positions = pass.positions.rows(R - 1, S);
  last_positions.strides[0] *= R;
  ops.argmax(pass.logits, pass.tokens, last_positions);
}

void Model::check_weights_finite(Ops& ops) {
  weights_->for_each(config_, [&](const std::string& name, const Tensor& tensor) {
    ops.check_finite(tensor, "the weights hold a non-finite value: " + name);
  });
}

void Model::decoder_layer(Ops& ops, int layer, const ForwardPass& pass, const Rows& a) {
  const LayerWeights& w = weights_->layers[layer];
  const LayerProjections& p = projections_[layer];
  static const LayerWeights no_fp32_norms;
  static const LayerProjections no_fp32_projections;
  const LayerWeights& w32 = fp32_weights_.layers.empty() ? no_fp32_norms : fp32_weights_.layers[layer];
  const LayerProjections& p32 =
      fp32_weights_.projections.empty() ? no_fp32_projections : fp32_weights_.projections[layer];
  const Tensor inv_freq = Tensor::contiguous(inv_freq_.get(), DType::F32, {config_.head_dim / 2});

  // Self-attention block.
  norm(ops, a.hidden, w.input_layernorm, w32.input_layernorm, a.normed, "input_layernorm");
  project(ops, a.normed, p.qkv_proj, p32.qkv_proj, a.qkv, "qkv_proj");  // q | k | v
  ops.rope(a.q, a.k, pass.positions, inv_freq, config_.head_dim);
  attend(ops, layer, pass, a);
  project(ops, a.attn, p.o_proj, p32.o_proj, a.projected, "o_proj");
  ops.add(a.hidden, a.projected, a.hidden, "residual");

  // MLP block: down(silu(gate(x)) * up(x)).
  norm(ops, a.hidden, w.post_attention_layernorm, w32.post_attention_layernorm, a.normed,
       "post_attention_layernorm");
  project(ops, a.normed, p.gate_up_proj, p32.gate_up_proj, a.gate_up, "gate_up_proj");  // gate | up
  ops.swiglu(a.gate, a.up, a.activated);
  project(ops, a.activated, p.down_proj, p32.down_proj, a.projected, "down_proj");
  ops.add(a.hidden, a.projected, a.hidden, "residual");
}

void Model::attend(Ops& ops, int layer, const ForwardPass& pass, const Rows& a) {
  const int S = pass.sequences, R = pass.rows_per_sequence;
  Tensor keys = kv_cache_.key(layer);
  Tensor values = kv_cache_.value(layer);
  keys.shape[0] = values.shape[0] = S;
  ops.kv_store(a.k, a.v, keys, values, pass.positions, R);

  const int positions_used = pass.first_position + R;
  bugs::KeyValueViews cache{keys, values};
  if (bugs_.non_contiguous) {
    cache = bugs::keys_values_for_attention(ops, bugs_, keys, values, positions_used, contiguous_keys_.get(),
                                            contiguous_values_.get());
  }

  AttentionExtent extent;
  extent.query_key_pairs = int64_t{S} * (int64_t{R} * pass.first_position + int64_t{R} * (R + 1) / 2);
  extent.key_positions_read = int64_t{S} * positions_used;
  extent.query_heads = config_.num_attention_heads;
  extent.kv_heads = config_.num_key_value_heads;
  extent.head_dim = config_.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(config_.head_dim));
  ops.attention(a.q, cache.keys, cache.values, pass.positions, R, scale, a.attn, extent);
}

void Model::norm(Ops& ops, const Tensor& x, const Tensor& weight, const Tensor& fp32_weight, const Tensor& out,
                 const char* label) {
  const float eps = static_cast<float>(config_.rms_norm_eps);
  if (fp32_weight.data != nullptr) {
    bugs::norm_in_fp32(ops, x, fp32_weight, eps, out, fp32_in_.get(), fp32_out_.get(), label);
    return;
  }
  ops.rmsnorm(x, weight, eps, out, label);
}

void Model::project(Ops& ops, const Tensor& x, const Tensor& weight, const Tensor& fp32_weight, const Tensor& out,
                    const char* label) {
  if (fp32_weight.data != nullptr) {
    bugs::project_in_fp32(ops, x, fp32_weight, out, fp32_in_.get(), fp32_out_.get(), label);
    return;
  }
  ops.matmul(x, weight, out, label);
}

}  // namespace decodelab
