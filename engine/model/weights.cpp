// Allocation of the parameter tensors, and seeded random initialisation.
// Random values come from a counter-based hash of (seed, tensor index, element index),
// so they are identical on every backend and can be generated in parallel.
// The one non-obvious choice: q_proj, k_proj and v_proj are consecutive rows of one
// buffer, and gate_proj and up_proj of another, so that the forward pass runs each group
// as one matmul over the concatenated weights (engine/model/model.cpp), as serving engines do.
// Seeded init and checkpoint loading write each Hugging Face tensor into its rows: the
// concatenation happens at load time, costs no copy, and every parameter is counted once.
#include "engine/model/weights.h"
#include "engine/base/host_parallel.h"

#include <cmath>
#include <vector>

namespace decodelab {

namespace {

// A tensor with memory from `backend`, or (backend == nullptr) a shape with no memory.
Tensor allocate_tensor(Backend* backend, std::vector<DeviceBuffer>& storage, DType dtype,
                       std::initializer_list<int64_t> dims) {
  if (!backend) return Tensor::contiguous(nullptr, dtype, dims);
  int64_t count = 1;
  for (int64_t dim : dims) count *= dim;
  storage.emplace_back(*backend, static_cast<size_t>(count) * dtype_size(dtype));
  return Tensor::contiguous(storage.back().get(), dtype, dims);
}

// Matrices of `rows[i]` rows each, stacked in one allocation: [parts...; width].
std::vector<Tensor> allocate_stacked(Backend* backend, std::vector<DeviceBuffer>& storage, DType dtype,
                                     std::initializer_list<int64_t> rows, int64_t width) {
  int64_t total = 0;
  for (int64_t count : rows) total += count;
  const Tensor whole = allocate_tensor(backend, storage, dtype, {total, width});
  std::vector<Tensor> parts;
  int64_t first = 0;
  for (int64_t count : rows) {
    Tensor part = Tensor::contiguous(whole.data, dtype, {count, width});
    if (whole.data) part.data = static_cast<char*>(whole.data) + first * width * static_cast<int64_t>(dtype_size(dtype));
    parts.push_back(part);
    first += count;
  }
  return parts;
}

ModelWeights make_weights(Backend* backend, const ModelConfig& config, DType dtype) {
  ModelWeights weights;
  weights.dtype = dtype;
  auto& storage = weights.storage;
  const int64_t hidden = config.hidden_size;
  const int64_t intermediate = config.intermediate_size;
  weights.storage.reserve(4 + 6 * static_cast<size_t>(config.num_hidden_layers));
  weights.embed_tokens = allocate_tensor(backend, storage, dtype, {config.vocab_size, hidden});
  weights.layers.resize(config.num_hidden_layers);
  for (LayerWeights& layer : weights.layers) {
    layer.input_layernorm = allocate_tensor(backend, storage, dtype, {hidden});
    const std::vector<Tensor> qkv =
        allocate_stacked(backend, storage, dtype, {config.q_width(), config.kv_width(), config.kv_width()}, hidden);
    layer.q_proj = qkv[0];
    layer.k_proj = qkv[1];
    layer.v_proj = qkv[2];
    layer.o_proj = allocate_tensor(backend, storage, dtype, {hidden, config.q_width()});
    layer.post_attention_layernorm = allocate_tensor(backend, storage, dtype, {hidden});
    const std::vector<Tensor> gate_up = allocate_stacked(backend, storage, dtype, {intermediate, intermediate}, hidden);
    layer.gate_proj = gate_up[0];
    layer.up_proj = gate_up[1];
    layer.down_proj = allocate_tensor(backend, storage, dtype, {hidden, intermediate});
  }
  weights.norm = allocate_tensor(backend, storage, dtype, {hidden});
  weights.lm_head = config.tie_word_embeddings ? weights.embed_tokens
                                               : allocate_tensor(backend, storage, dtype, {config.vocab_size, hidden});
  return weights;
}

uint64_t splitmix64(uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

void fill_ones(const Tensor& tensor, Backend& backend) {
  std::vector<uint8_t> host(tensor.bytes());
  for (int64_t i = 0; i < tensor.numel(); ++i) store_from_float(host.data(), tensor.dtype, static_cast<size_t>(i), 1.0f);
  backend.upload(tensor.data, host.data(), host.size());
}

}  // namespace

void fill_uniform(const Tensor& tensor, Backend& backend, uint64_t stream, float stddev) {
  const int64_t count = tensor.numel();
  const float half_width = stddev * std::sqrt(3.0f);
  std::vector<uint8_t> host(tensor.bytes());
  void* data = host.data();
  const DType dtype = tensor.dtype;
  host_parallel_for(count, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const uint64_t bits = splitmix64(stream ^ splitmix64(static_cast<uint64_t>(i)));
      const float unit = static_cast<float>(bits >> 40) * (1.0f / 8388608.0f) - 1.0f;  // 24 bits -> [-1, 1)
      store_from_float(data, dtype, static_cast<size_t>(i), unit * half_width);
    }
  });
  backend.upload(tensor.data, host.data(), host.size());
}

ModelWeights ModelWeights::allocate(Backend& backend, const ModelConfig& config, DType dtype) {
  return make_weights(&backend, config, dtype);
}

ModelWeights ModelWeights::describe(const ModelConfig& config, DType dtype) {
  return make_weights(nullptr, config, dtype);
}

ModelWeights random_weights(Backend& backend, const ModelConfig& config, DType dtype, uint64_t seed) {
  ModelWeights weights = ModelWeights::allocate(backend, config, dtype);
  uint64_t tensor_index = 0;
  weights.for_each(config, [&](const std::string& name, const Tensor& tensor) {
    const uint64_t stream = splitmix64(seed * 0x100000001b3ull + ++tensor_index);
    if (tensor.rank == 1) {
      fill_ones(tensor, backend);  // RMSNorm weights start at 1, as in transformers
    } else if (name == "model.embed_tokens.weight") {
      fill_uniform(tensor, backend, stream, 1.0f);
    } else {
      fill_uniform(tensor, backend, stream, 1.0f / std::sqrt(static_cast<float>(tensor.shape[1])));
    }
  });
  return weights;
}

}  // namespace decodelab
