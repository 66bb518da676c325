// When each CPU kernel fans its loop out to the OpenMP kernel threads: one threshold of
// work per kernel, below which one thread finishes before a parallel region would have
// started. The kernels decide with these (engine/cpu/kernels/parallel_for.h), and the prediction
// model counts with them the parallel regions an op opens, each priced at the region's
// measured cost (profiling/measure/stream_costs.h, docs/prediction.md "The parallel region").
#pragma once

#include <cstdint>

#include "engine/events/event_sink.h"
#include "engine/parallel_regions.h"  // parallel_regions(), which fan_out.cpp defines

namespace decodelab::cpu {

// matmul: widening x's rows to fp32 (rows × K elements), then the product (multiply-adds).
inline bool matmul_widen_fans_out(int64_t rows, int64_t k) { return rows * k > (int64_t{1} << 16); }
inline bool matmul_fans_out(int64_t rows, int64_t n, int64_t k) { return rows * n * k > (int64_t{1} << 16); }
// attention: its multiply-adds (2 × query-key pairs × query width).
inline bool attention_fans_out(int64_t multiply_adds) { return multiply_adds > (int64_t{1} << 15); }
// add, swiglu, cast, copy: the elements of the output.
inline bool elementwise_fans_out(int64_t elements) { return elements > (int64_t{1} << 15); }
inline bool rmsnorm_fans_out(int64_t rows, int64_t hidden) { return rows * hidden > (int64_t{1} << 15); }
inline bool rope_fans_out(int64_t rows, int64_t q_width, int64_t k_width) {
  return rows * (q_width + k_width) > (int64_t{1} << 14);
}
// kv_store: the K and V elements written.
inline bool kv_store_fans_out(int64_t elements) { return elements > (int64_t{1} << 15); }
inline bool embedding_fans_out(int64_t rows, int64_t hidden) { return rows * hidden > (int64_t{1} << 16); }
inline bool argmax_fans_out(int64_t rows, int64_t vocab) { return rows * vocab > (int64_t{1} << 16); }

}  // namespace decodelab::cpu
