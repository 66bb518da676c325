// The CPU backend's kernels, one op family per file (the file is named after the op).
// Each op has a host-side check (runs at enqueue, throws std::invalid_argument) and the
// kernel itself (runs on the stream's worker thread, parallel with OpenMP). Kernels take
// the same arguments and have the same semantics as the Backend methods in
// engine/backend.h; the notes here add only what that header leaves open.
#pragma once

#include "engine/base/tensor.h"

namespace decodelab::cpu {

// matmul.cpp — out[M, N] = x[M, K] · weight[N, K]ᵀ. One accumulation order per output
// element whatever M, the tile it falls in, or the dtypes (see simd.h).
void check_matmul(const Tensor& x, const Tensor& weight, const Tensor& out);
void matmul(const Tensor& x, const Tensor& weight, const Tensor& out);

// attention.cpp — causal GQA over a KV cache with any strides; a query row's result does
// not depend on M, rows_per_sequence or the cache layout.
void check_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions,
                     int rows_per_sequence, const Tensor& out);
void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions,
               int rows_per_sequence, float scale, const Tensor& out);

// kv_store.cpp — new keys/values into the caches (converting dtype if they differ).
void check_kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache,
                    const Tensor& positions, int rows_per_sequence);
void kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache,
              const Tensor& positions, int rows_per_sequence);

// rmsnorm.cpp — n = round_to(x dtype, x·r), out = round_to(out dtype, w·n).
void check_rmsnorm(const Tensor& x, const Tensor& weight, const Tensor& out);
void rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out);

// rope.cpp — rotate-half RoPE in place, cos/sin rounded to each tensor's dtype.
void check_rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq, int head_dim);
void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq, int head_dim);

// embedding.cpp — rows of the table gathered by the token history.
void check_embedding(const Tensor& table, const Tensor& tokens, const Tensor& positions, int rows_per_sequence,
                     const Tensor& out);
void embedding(const Tensor& table, const Tensor& tokens, const Tensor& positions, int rows_per_sequence,
               const Tensor& out);

// argmax.cpp — greedy sampling. NaN counts as the largest value (as torch.argmax): a row
// holding NaN yields the index of its first NaN.
void check_argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions);
void argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions);

// elementwise.cpp — add, swiglu, cast, copy (rank <= 4, any strides; copy keeps the
// dtype, cast converts), and the int32 position helpers.
void check_add(const Tensor& a, const Tensor& b, const Tensor& out);
void add(const Tensor& a, const Tensor& b, const Tensor& out);
void check_swiglu(const Tensor& gate, const Tensor& up, const Tensor& out);
void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out);
void check_cast(const Tensor& x, const Tensor& out);
void cast(const Tensor& x, const Tensor& out);
void check_copy(const Tensor& src, const Tensor& out);
void copy(const Tensor& src, const Tensor& out);
void check_positions(const Tensor& positions, const char* op);
void fill_positions(const Tensor& out, int start, int period);
void advance_positions(const Tensor& positions);

// Independent FMA chains in registers on every OpenMP thread, `rounds` rounds each: the
// arithmetic roof. fma_probe_flops: the FLOPs of one probe on `threads` threads.
void fma_probe(int64_t rounds);
double fma_probe_flops(int64_t rounds, int threads);

}  // namespace decodelab::cpu
