// Small builders for profiling tests: tensor descriptions and op descriptions with the
// engine's op names, so tests read like the ops the engine reports.
#pragma once

#include <initializer_list>

#include "engine/events/event_sink.h"
#include "profiling/trace.h"

namespace decodelab::testing {

inline TensorInfo tensor(DType dtype, std::initializer_list<int64_t> dims) {
  TensorInfo info;
  info.dtype = dtype;
  info.rank = static_cast<int>(dims.size());
  int axis = 0;
  for (int64_t dim : dims) info.shape[static_cast<size_t>(axis++)] = dim;
  int64_t stride = 1;
  for (int i = info.rank - 1; i >= 0; --i) {
    info.strides[static_cast<size_t>(i)] = stride;
    stride *= info.shape[static_cast<size_t>(i)];
  }
  return info;
}

inline OpDesc op(OpId id, const char* name, const char* label, OpCategory category, std::vector<TensorInfo> inputs,
                 std::vector<TensorInfo> outputs) {
  OpDesc desc;
  desc.id = id;
  desc.name = name;
  desc.label = label;
  desc.category = category;
  desc.inputs = std::move(inputs);
  desc.outputs = std::move(outputs);
  return desc;
}

// x[M, K] · W[N, K]ᵀ -> out[M, N]
inline OpDesc matmul(OpId id, int64_t m, int64_t n, int64_t k, DType dtype, const char* label = "q_proj") {
  return op(id, "matmul", label, OpCategory::Matmul, {tensor(dtype, {m, k}), tensor(dtype, {n, k})},
            {tensor(dtype, {m, n})});
}

inline OpDesc elementwise_add(OpId id, int64_t elements, DType dtype) {
  return op(id, "add", "residual", OpCategory::Elementwise, {tensor(dtype, {elements}), tensor(dtype, {elements})},
            {tensor(dtype, {elements})});
}

inline OpDesc marker(OpId id) { return op(id, "marker", "step", OpCategory::Marker, {}, {}); }

// A Llama-shaped generation (prefill, then decode steps, the engine's op names and
// ranges) timed by a simple device model: each op takes max(FLOPs at peak, bytes at
// bandwidth) ÷ efficiency + a fixed launch cost. It exercises analysis and printers
// without an engine; the knobs reproduce what some bugs look like to a profiler.
struct SyntheticRun {
  int layers = 2;
  int hidden = 512;
  int intermediate = 1376;
  int heads = 8;
  int kv_heads = 4;
  int vocab = 8000;
  DType dtype = DType::F16;
  int prompt = 16;
  int steps = 8;
  double host_gap_us = 0;       // idle before each step's first op (a host-bound loop)
  bool sync_each_step = false;  // a device-to-host read inside every step
  bool fp32_matmuls = false;    // matmuls on fp32 copies of the weights
  bool recompute_prefix = false;  // no KV cache: each decode step runs the whole sequence so far
  bool contiguous_copies = false;  // non_contiguous (copy): K and V's used cache copied before each attention
};
DeviceSpec synthetic_cpu_device();
Trace synthetic_run_trace(const SyntheticRun& run, const DeviceSpec& device);

}  // namespace decodelab::testing
