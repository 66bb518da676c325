// CPU causal grouped-query attention over a KV cache with any strides.
// Work items are (block of up to kRowBlock query rows of one sequence, KV head): the rows
// and the group of query heads sharing a KV head read each key and value once. For each
// query head of each row: s_j = (q·k_j)·scale in fp32, softmax in
// fp32 with the max subtracted, out = Σ_j p_j·v_j in fp32, rounded once to out's dtype.
// The one non-obvious choice: when a cache's head_dim axis is not unit-stride (a
// transposed view), key/value vectors are first gathered into a contiguous, zero-padded
// tile and then go through the very same arithmetic as a direct load (which zero-fills
// its tail lanes identically). A query row's output is therefore bitwise the same
// whatever M, rows_per_sequence or the cache layout.
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/cpu/kernels/checks.h"
#include "engine/cpu/fan_out.h"
#include "engine/cpu/kernels/kernels.h"
#include "engine/cpu/kernels/parallel_for.h"
#include "engine/cpu/kernels/scratch.h"
#include "engine/cpu/kernels/simd.h"

namespace decodelab::cpu {

namespace {

constexpr int kHeadBlock = 8;               // query heads whose dot products share a key load
constexpr int kMaxChunks = 512 / kLanes;    // head_dim up to 512
constexpr int kKeyBlock = 4;                // keys whose score chains run interleaved

struct CacheView {
  const char* base;  // this item's (sequence, kv head) slice
  int64_t position_stride;
  int64_t dim_stride;
};

// Supplies position j's vector as kLanes-wide chunks. Unit-stride vectors are loaded in
// place (the tail lanes zero-filled). Otherwise a block of kGatherBlock positions is
// gathered into a zero-padded fp32 tile, reading along the position axis — contiguous in
// the head_dim-strided layout, so the strided case costs extra work rather than a cache
// miss per element — and each position's tile row is loaded. Either way, the arithmetic
// downstream sees the same values in the same lanes.
template <DType D>
class VectorSource {
 public:
  static constexpr int64_t kGatherBlock = 32;

  // tile: kGatherBlock * padded_dim floats of scratch.
  VectorSource(const CacheView& cache, int64_t head_dim, int64_t padded_dim, float* tile)
      : cache_(cache), head_dim_(head_dim), padded_dim_(padded_dim), tile_(tile) {
    if (cache_.dim_stride != 1) std::fill(tile_, tile_ + kGatherBlock * padded_dim_, 0.0f);
  }

  void load(int64_t j, int64_t count, VFloat* chunks, int chunk_count) {
    if (cache_.dim_stride == 1) {
      const char* vector = cache_.base + j * cache_.position_stride * static_cast<int64_t>(dtype_size(D));
      for (int c = 0; c < chunk_count; ++c) {
        const int64_t d = static_cast<int64_t>(c) * kLanes;
        const int lanes = static_cast<int>(std::min<int64_t>(kLanes, head_dim_ - d));
        chunks[c] = lanes == kLanes ? vload_as<D>(vector, d) : vload_partial_as<D>(vector, d, lanes);
      }
      return;
    }
    if (j < block_first_ || j >= block_first_ + kGatherBlock) gather_block(j, count);
    const float* row = tile_ + (j - block_first_) * padded_dim_;
    for (int c = 0; c < chunk_count; ++c) chunks[c] = vload(row + static_cast<int64_t>(c) * kLanes);
  }

 private:
  void gather_block(int64_t first, int64_t count) {
    block_first_ = first;
    const int64_t last = std::min(count, first + kGatherBlock);
    for (int64_t d = 0; d < head_dim_; ++d) {
      const int64_t offset = d * cache_.dim_stride;
      for (int64_t p = first; p < last; ++p) {
        tile_[(p - first) * padded_dim_ + d] = load_as_float(cache_.base, D, p * cache_.position_stride + offset);
      }
    }
  }

  CacheView cache_;
  int64_t head_dim_;
  int64_t padded_dim_;
  float* tile_;
  int64_t block_first_ = -kGatherBlock - 1;
};

// Softmax of scores[0..n) in place (padded tail lanes hold -inf and become 0).
void softmax_in_place(float* scores, int64_t n) {
  const int64_t padded = round_up_to_lanes(n);
  for (int64_t j = n; j < padded; ++j) scores[j] = -std::numeric_limits<float>::infinity();
  VFloat max_lanes = vbroadcast(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < padded; j += kLanes) max_lanes = vmax(max_lanes, vload(scores + j));
  const VFloat max_value = vbroadcast(vmax_lanes(max_lanes));
  VFloat sum_lanes = vzero();
  for (int64_t j = 0; j < padded; j += kLanes) {
    const VFloat e = vexp(vsub(vload(scores + j), max_value));
    vstore(scores + j, e);
    sum_lanes = vadd(sum_lanes, e);
  }
  const VFloat sum = vbroadcast(vsum(sum_lanes));
  for (int64_t j = 0; j < padded; j += kLanes) vstore(scores + j, vdiv(vload(scores + j), sum));
}

// s_gj = (q_g·k_j)·scale for each query head g of the group: per key, C chunks loaded
// once into registers, then one dot product per head (FMAs over the chunks in order from
// zero, then vsum), the same arithmetic as generic_scores.
template <DType D, int C>
void compute_scores(VectorSource<D>& keys, const float* queries, int64_t group, int64_t n, float scale, float* scores,
                    int64_t padded_n, int64_t padded_dim) {
  VFloat chunks[kMaxChunks];
  for (int64_t j = 0; j < n; ++j) {
    keys.load(j, n, chunks, C);
    for (int64_t g = 0; g < group; ++g) {
      const float* query = queries + g * padded_dim;
      VFloat dot = vzero();
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) dot = vfma(vload(query + static_cast<int64_t>(c) * kLanes), chunks[c], dot);
      scores[g * padded_n + j] = vsum(dot) * scale;
    }
  }
}

// The same for any chunk count (head_dim above 8 chunks or not a power of two).
template <DType D>
void generic_scores(VectorSource<D>& key_source, const float* queries, int64_t group, int64_t n, float scale,
                    float* scores, int64_t padded_n, int64_t padded_dim, int chunk_count) {
  VFloat chunks[kMaxChunks];
  for (int64_t j = 0; j < n; ++j) {
    key_source.load(j, n, chunks, chunk_count);
    for (int64_t g0 = 0; g0 < group; g0 += kHeadBlock) {
      const int block = static_cast<int>(std::min<int64_t>(kHeadBlock, group - g0));
      VFloat dot[kHeadBlock];
      for (int g = 0; g < block; ++g) dot[g] = vzero();
      for (int c = 0; c < chunk_count; ++c) {
        for (int g = 0; g < block; ++g) {
          dot[g] = vfma(vload(queries + (g0 + g) * padded_dim + static_cast<int64_t>(c) * kLanes), chunks[c], dot[g]);
        }
      }
      for (int g = 0; g < block; ++g) scores[(g0 + g) * padded_n + j] = vsum(dot[g]) * scale;
    }
  }
}

// out_g = Σ_j p_gj·v_j for each query head g of the group, with head_dim = C chunks: one
// head at a time, its C accumulators in registers (kept in memory, each FMA would wait
// on the previous position's store). Per element the FMAs run over j in order from zero,
// exactly as the generic loop does, so the result is the same bit for bit.
template <DType D, int C>
void accumulate_values(VectorSource<D>& values, const float* scores, int64_t padded_n, int64_t group, int64_t n,
                       float* accumulators, int64_t padded_dim) {
  VFloat chunks[kMaxChunks];
  for (int64_t g = 0; g < group; ++g) {
    const float* weights = scores + g * padded_n;
    VFloat acc[C];
    for (int c = 0; c < C; ++c) acc[c] = vzero();
    for (int64_t j = 0; j < n; ++j) {
      values.load(j, n, chunks, C);
      const VFloat weight = vbroadcast(weights[j]);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) acc[c] = vfma(weight, chunks[c], acc[c]);
    }
    for (int c = 0; c < C; ++c) vstore(accumulators + g * padded_dim + static_cast<int64_t>(c) * kLanes, acc[c]);
  }
}

// The common layout — unit-stride head_dim, a whole number of chunks — read in place with
// nothing but full-width loads: VectorSource's general loads (partial chunks, gathered
// tiles) keep its chunks in memory, and every FMA then waits on a store. The arithmetic
// is compute_scores' and accumulate_values' exactly (each dot product and each output
// element the same FMAs in the same order), so results are bitwise the same.
//
// It runs a block of query rows of one (sequence, KV head) at a time, so that each key and
// value loaded serves several queries: one row's keys and values (its whole prefix) outgrow
// L1, and read once per row from L2, at 2 FLOPs per 4-byte element, they bound a prefill's
// attention by L2's bandwidth rather than by the FMAs. A block's queries are its rows times
// the group's heads; query i reads keys [0, n_i), n_i = its row's position + 1.
struct QueryBlock {
  const float* queries;  // [count][padded_dim]
  const int64_t* row_keys;  // keys each row reads
  int64_t group;
  int64_t count;
  int64_t padded_dim;
  float* scores;  // [count][padded_n]
  int64_t padded_n;
  float* accumulators;  // [count][padded_dim]
  int64_t keys(int64_t i) const { return row_keys[i / group]; }
  // The keys all of queries [first, first + n) read.
  int64_t shared_keys(int64_t first, int n) const {
    int64_t shared = keys(first);
    for (int i = 1; i < n; ++i) shared = std::min(shared, keys(first + i));
    return shared;
  }
  const float* query(int64_t i) const { return queries + i * padded_dim; }
  float* score_row(int64_t i) const { return scores + i * padded_n; }
};

// Rows in a block: a score tile's four queries when each KV head serves one query head.
constexpr int kRowBlock = 4;
#if defined(DECODELAB_SIMD_AVX512)
// Scores in tiles of 4 queries × 4 keys, the 16 dot products reduced together (vsum16_lanes,
// the same sums as vsum): with 32 vector registers, 16 accumulators, 4 key chunks and a query
// chunk fit.
constexpr int kTileQueries = 4;
constexpr int kValueAccumulators = 16;  // registers for the value sums of a block's queries
#else
constexpr int kTileQueries = 0;  // 16 registers: one query at a time
constexpr int kValueAccumulators = 8;
#endif

// s_ij = (q_i·k_j)·scale of one query for keys [from, n), kKeyBlock keys at a time so that
// their FMA chains (C FMAs in a row each) overlap.
template <DType D, int C>
void query_scores(const char* keys, int64_t stride, const float* query, int64_t from, int64_t n, float scale,
                  float* row) {
  int64_t j = from;
  for (; j + kKeyBlock <= n; j += kKeyBlock) {
    VFloat dots[kKeyBlock];
#pragma GCC unroll 8
    for (int key = 0; key < kKeyBlock; ++key) dots[key] = vzero();
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      VFloat query_chunk = vload(query + static_cast<int64_t>(c) * kLanes);
      keep_in_register(query_chunk);
#pragma GCC unroll 8
      for (int key = 0; key < kKeyBlock; ++key)
        dots[key] = vfma(query_chunk, vload_as<D>(keys + (j + key) * stride, c * kLanes), dots[key]);
    }
#pragma GCC unroll 8
    for (int key = 0; key < kKeyBlock; ++key) row[j + key] = vsum(dots[key]) * scale;
  }
  for (; j < n; ++j) {
    VFloat dot = vzero();
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c)
      dot = vfma(vload(query + static_cast<int64_t>(c) * kLanes), vload_as<D>(keys + j * stride, c * kLanes), dot);
    row[j] = vsum(dot) * scale;
  }
}

#if defined(DECODELAB_SIMD_AVX512)
// Keys [0, n) of the four queries from `first` in 4 × 4 tiles; returns how many keys it
// scored (a multiple of 4), the rest left to query_scores.
template <DType D, int C>
int64_t tile_scores(const char* keys, int64_t stride, const QueryBlock& block, int64_t first, int64_t n, float scale) {
  const VFloat scale_lanes = vbroadcast(scale);
  float* rows[kTileQueries];
  for (int i = 0; i < kTileQueries; ++i) rows[i] = block.score_row(first + i);
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    VFloat dots[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) dots[i] = vzero();
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      VFloat key_chunks[4];
#pragma GCC unroll 4
      for (int key = 0; key < 4; ++key) {
        key_chunks[key] = vload_as<D>(keys + (j + key) * stride, c * kLanes);
        keep_in_register(key_chunks[key]);
      }
#pragma GCC unroll 4
      for (int i = 0; i < kTileQueries; ++i) {
        VFloat query_chunk = vload(block.query(first + i) + static_cast<int64_t>(c) * kLanes);
        keep_in_register(query_chunk);
#pragma GCC unroll 4
        for (int key = 0; key < 4; ++key) dots[i * 4 + key] = vfma(query_chunk, key_chunks[key], dots[i * 4 + key]);
      }
    }
    // Lane 4i + key: query i's score of key j + key.
    const VFloat sums = vmul(vsum16_lanes(dots), scale_lanes);
    _mm_storeu_ps(rows[0] + j, _mm512_castps512_ps128(sums));
    _mm_storeu_ps(rows[1] + j, _mm512_extractf32x4_ps(sums, 1));
    _mm_storeu_ps(rows[2] + j, _mm512_extractf32x4_ps(sums, 2));
    _mm_storeu_ps(rows[3] + j, _mm512_extractf32x4_ps(sums, 3));
  }
  return j;
}
#endif

// out_i = Σ_j p_ij·v_j for Q queries from `first`: keys every one of them reads are loaded
// once for all Q, each query's C accumulators in registers; then each goes on alone over
// the keys only it reads. Per element the FMAs run over j in order from zero, as
// accumulate_values' do.
template <DType D, int C, int Q>
void block_values(const char* values, int64_t stride, const QueryBlock& block, int64_t first) {
  VFloat acc[Q][C];
  const int64_t shared = block.shared_keys(first, Q);
#pragma GCC unroll 16
  for (int i = 0; i < Q; ++i)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[i][c] = vzero();
  for (int64_t j = 0; j < shared; ++j) {
    const char* vector = values + j * stride;
    VFloat chunks[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) chunks[c] = vload_as<D>(vector, c * kLanes);
#pragma GCC unroll 16
    for (int i = 0; i < Q; ++i) {
      const VFloat weight = vbroadcast(block.score_row(first + i)[j]);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) acc[i][c] = vfma(weight, chunks[c], acc[i][c]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < Q; ++i) {
    const float* weights = block.score_row(first + i);
    const int64_t keys = block.keys(first + i);
    for (int64_t j = shared; j < keys; ++j) {
      const char* vector = values + j * stride;
      const VFloat weight = vbroadcast(weights[j]);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) acc[i][c] = vfma(weight, vload_as<D>(vector, c * kLanes), acc[i][c]);
    }
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) vstore(block.accumulators + (first + i) * block.padded_dim + c * kLanes, acc[i][c]);
  }
}

template <DType D, int C>
void direct_block(const CacheView& keys, const CacheView& values, const QueryBlock& block, float scale) {
  const int64_t element = static_cast<int64_t>(dtype_size(D));
  const int64_t key_stride = keys.position_stride * element;
  const int64_t value_stride = values.position_stride * element;
  int64_t first = 0;
#if defined(DECODELAB_SIMD_AVX512)
  for (; first + kTileQueries <= block.count; first += kTileQueries) {
    const int64_t done =
        tile_scores<D, C>(keys.base, key_stride, block, first, block.shared_keys(first, kTileQueries), scale);
    for (int i = 0; i < kTileQueries; ++i)
      query_scores<D, C>(keys.base, key_stride, block.query(first + i), done, block.keys(first + i), scale,
                         block.score_row(first + i));
  }
#endif
  for (; first < block.count; ++first)
    query_scores<D, C>(keys.base, key_stride, block.query(first), 0, block.keys(first), scale, block.score_row(first));
  for (int64_t i = 0; i < block.count; ++i) softmax_in_place(block.score_row(i), block.keys(i));
  constexpr int kQueries = std::max(1, kValueAccumulators / C);
  int64_t i = 0;
  for (; i + kQueries <= block.count; i += kQueries) block_values<D, C, kQueries>(values.base, value_stride, block, i);
  for (; i < block.count; ++i) block_values<D, C, 1>(values.base, value_stride, block, i);
}

// Calls f.template operator()<C>() with C = chunk_count when it is 1, 2, 4 or 8 (head_dim
// up to 128 with AVX-512, 64 with AVX2) and returns true; false for other counts.
template <typename F>
bool with_register_chunks(int chunk_count, F&& f) {
  switch (chunk_count) {
    case 1:
      f.template operator()<1>();
      return true;
    case 2:
      f.template operator()<2>();
      return true;
    case 4:
      f.template operator()<4>();
      return true;
    case 8:
      f.template operator()<8>();
      return true;
    default:
      return false;
  }
}

// out's heads of this (row, KV head) item, each rounded once to out's dtype.
void store_outputs(const Tensor& out, const float* accumulators, int64_t m, int64_t kv_head, int64_t group,
                   int64_t head_dim, int64_t padded_dim, int chunk_count) {
  const size_t out_element = dtype_size(out.dtype);
  for (int64_t g = 0; g < group; ++g) {
    const int64_t head = kv_head * group + g;
    char* out_head =
        static_cast<char*>(out.data) + (m * out.strides[0] + head * head_dim) * static_cast<int64_t>(out_element);
    for (int c = 0; c < chunk_count; ++c) {
      const int64_t d = static_cast<int64_t>(c) * kLanes;
      vstore_n(out.dtype, out_head, d, vload(accumulators + g * padded_dim + d),
               static_cast<int>(std::min<int64_t>(kLanes, head_dim - d)));
    }
  }
}

// Row m's query heads of this KV head, widened to fp32 and zero-padded to padded_dim.
void load_queries(const Tensor& q, int64_t m, int64_t kv_head, int64_t group, int64_t head_dim, int64_t padded_dim,
                  float* queries) {
  const size_t q_element = dtype_size(q.dtype);
  for (int64_t g = 0; g < group; ++g) {
    const int64_t head = kv_head * group + g;
    const char* q_head =
        static_cast<const char*>(q.data) + (m * q.strides[0] + head * head_dim) * static_cast<int64_t>(q_element);
    for (int64_t d = 0; d < padded_dim; d += kLanes) {
      vstore(queries + g * padded_dim + d,
             vload_n(q.dtype, q_head, d, static_cast<int>(std::min<int64_t>(kLanes, head_dim - d))));
    }
  }
}

// One row's query heads of this KV head in the general layouts (strided head_dim, partial
// chunks, long heads), their keys and values through VectorSource.
template <DType D>
void attend(const Tensor& q, const CacheView& keys, const CacheView& values, int64_t m, int64_t kv_head, int64_t group,
            int64_t head_dim, int64_t n, float scale, const Tensor& out) {
  const int64_t padded_dim = round_up_to_lanes(head_dim);
  const int chunk_count = static_cast<int>(padded_dim / kLanes);
  const int64_t padded_n = round_up_to_lanes(n);
  thread_local ScratchBuffer scratch;
  constexpr int64_t kTileRows = VectorSource<D>::kGatherBlock;
  float* queries = scratch.floats(static_cast<size_t>(group * (2 * padded_dim + padded_n) + kTileRows * padded_dim));
  float* accumulators = queries + group * padded_dim;
  float* scores = accumulators + group * padded_dim;  // [group][padded_n]
  float* tile = scores + group * padded_n;
  std::fill(accumulators, accumulators + group * padded_dim, 0.0f);

  load_queries(q, m, kv_head, group, head_dim, padded_dim, queries);

  VFloat chunks[kMaxChunks];
  VectorSource<D> key_source(keys, head_dim, padded_dim, tile);
  // Key chunks in registers for the common head sizes.
  const bool scored = with_register_chunks(chunk_count, [&]<int C>() {
    compute_scores<D, C>(key_source, queries, group, n, scale, scores, padded_n, padded_dim);
  });
  if (!scored) generic_scores<D>(key_source, queries, group, n, scale, scores, padded_n, padded_dim, chunk_count);
  for (int64_t g = 0; g < group; ++g) softmax_in_place(scores + g * padded_n, n);

  VectorSource<D> value_source(values, head_dim, padded_dim, tile);
  // Accumulators in registers for the common head sizes.
  const bool accumulated = with_register_chunks(chunk_count, [&]<int C>() {
    accumulate_values<D, C>(value_source, scores, padded_n, group, n, accumulators, padded_dim);
  });
  if (!accumulated) {
    for (int64_t j = 0; j < n; ++j) {
      value_source.load(j, n, chunks, chunk_count);
      for (int64_t g = 0; g < group; ++g) {
        const VFloat weight = vbroadcast(scores[g * padded_n + j]);
        float* acc = accumulators + g * padded_dim;
        for (int c = 0; c < chunk_count; ++c) {
          const int64_t d = static_cast<int64_t>(c) * kLanes;
          vstore(acc + d, vfma(weight, chunks[c], vload(acc + d)));
        }
      }
    }
  }

  store_outputs(out, accumulators, m, kv_head, group, head_dim, padded_dim, chunk_count);
}

template <DType D>
void attention_for(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions,
                   int rows_per_sequence, float scale, const Tensor& out, int64_t work) {
  const int64_t rows = q.shape[0];
  const int64_t kv_heads = k_cache.shape[1];
  const int64_t head_dim = k_cache.shape[3];
  const int64_t group = q.shape[1] / head_dim / kv_heads;
  const int32_t* position_data = positions.as<const int32_t>();
  const int64_t element = static_cast<int64_t>(dtype_size(D));
  if (rows == 0) return;
  // Items are blocks of up to kRowBlock consecutive rows of one sequence, for one KV head.
  const int64_t sequence_rows = std::min<int64_t>(rows_per_sequence, rows);
  const int64_t sequences = (rows + sequence_rows - 1) / sequence_rows;
  const int64_t blocks_per_sequence = (sequence_rows + kRowBlock - 1) / kRowBlock;
  const int64_t blocks = sequences * blocks_per_sequence;
  const int64_t items = kv_heads * blocks;
  const int64_t padded_dim = round_up_to_lanes(head_dim);
  const int chunk_count = static_cast<int>(padded_dim / kLanes);
  const bool direct = k_cache.strides[3] == 1 && v_cache.strides[3] == 1 && head_dim == padded_dim;
  // Items run head by head, the blocks in row order within a head: consecutive items (one
  // thread's chunk) then read the same (sequence, KV head) slice of the cache, which stays
  // in L2 from one block to the next. Row by row, consecutive items hopped from head
  // to head, and a prefill read every head's keys and values from beyond L2 once per row
  // (in the [sequence, position, head, dim] cache, one head's vectors are spread over all
  // of it); the arithmetic of each row is the same either way.
  // Guided: each thread takes half of what is left, then less, down to one item. Taken one at
  // a time (dynamic, 1), every item cost a trip to the shared counter, a cache line's round
  // trip between cores (hundreds of nanoseconds between far-apart cores): prefills and the
  // prefixes no_kv_cache recomputes, thousands of short items, took up to twice as long;
  // decode (a few long items) alike. Causal rows cost more the later they are; guided's
  // shrinking chunks still even the threads out (dealing the rows round-robin, or the
  // costliest first, was slower).
  parallel_for(attention_fans_out(work), items, [&](int64_t item) {
    const int64_t kv_head = item / blocks;
    const int64_t block = item % blocks;
    const int64_t sequence = block / blocks_per_sequence;
    const int64_t m0 = sequence * rows_per_sequence + block % blocks_per_sequence * kRowBlock;
    const int64_t m1 = std::min({m0 + kRowBlock, (sequence + 1) * static_cast<int64_t>(rows_per_sequence), rows});
    if (m0 >= m1) return;
    const CacheView keys{static_cast<const char*>(k_cache.data) +
                             (sequence * k_cache.strides[0] + kv_head * k_cache.strides[1]) * element,
                         k_cache.strides[2], k_cache.strides[3]};
    const CacheView values{static_cast<const char*>(v_cache.data) +
                               (sequence * v_cache.strides[0] + kv_head * v_cache.strides[1]) * element,
                           v_cache.strides[2], v_cache.strides[3]};
    int64_t row_keys[kRowBlock];
    int64_t longest = 0;
    for (int64_t m = m0; m < m1; ++m) {
      row_keys[m - m0] = static_cast<int64_t>(position_data[m * positions.strides[0]]) + 1;
      longest = std::max(longest, row_keys[m - m0]);
    }
    if (direct && with_register_chunks(chunk_count, [&]<int C>() {
          const int64_t count = (m1 - m0) * group;
          const int64_t padded_n = round_up_to_lanes(longest);
          thread_local ScratchBuffer scratch;
          float* queries = scratch.floats(static_cast<size_t>(count * (2 * padded_dim + padded_n)));
          float* accumulators = queries + count * padded_dim;
          float* scores = accumulators + count * padded_dim;
          for (int64_t m = m0; m < m1; ++m)
            load_queries(q, m, kv_head, group, head_dim, padded_dim, queries + (m - m0) * group * padded_dim);
          const QueryBlock query_block{queries, row_keys, group, count, padded_dim, scores, padded_n, accumulators};
          direct_block<D, C>(keys, values, query_block, scale);
          for (int64_t m = m0; m < m1; ++m)
            store_outputs(out, accumulators + (m - m0) * group * padded_dim, m, kv_head, group, head_dim, padded_dim,
                          chunk_count);
        })) {
      return;
    }
    for (int64_t m = m0; m < m1; ++m)
      attend<D>(q, keys, values, m, kv_head, group, head_dim, row_keys[m - m0], scale, out);
  }, LoopSchedule::guided(1));
}

}  // namespace

void check_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions,
                     int rows_per_sequence, const Tensor& out) {
  const char* op = "attention";
  require_rank(q, 2, op, "q");
  require_rank(out, 2, op, "out");
  require_rank(k_cache, 4, op, "k_cache");
  require_rank(v_cache, 4, op, "v_cache");
  require_float(q, op, "q");
  require_float(out, op, "out");
  require_float(k_cache, op, "k_cache");
  require_unit_inner_stride(q, op, "q");
  require_unit_inner_stride(out, op, "out");
  require_same_shape(q, out, op, "q", "out");
  require_same_shape(k_cache, v_cache, op, "k_cache", "v_cache");
  require(k_cache.dtype == v_cache.dtype, op, [&] {
    return "k_cache and v_cache must share a dtype, got " + describe_tensor(k_cache) + " and " +
           describe_tensor(v_cache);
  });
  const int64_t kv_heads = k_cache.shape[1];
  const int64_t head_dim = k_cache.shape[3];
  require(head_dim > 0 && head_dim <= kMaxChunks * kLanes, op, [&] {
    return "head_dim must be 1.." + std::to_string(kMaxChunks * kLanes) + ", got cache " + describe_tensor(k_cache);
  });
  require(kv_heads > 0 && q.shape[1] % (kv_heads * head_dim) == 0, op, [&] {
    return "q [M, heads*head_dim] must hold a whole number of heads per KV head, got q " + describe_tensor(q) +
           " and cache " + describe_tensor(k_cache);
  });
  require_rank(positions, 1, op, "positions");
  require_dtype(positions, DType::I32, op, "positions");
  require(positions.shape[0] == q.shape[0], op, [&] {
    return "positions must be [M] = [" + std::to_string(q.shape[0]) + "], got " + describe_tensor(positions);
  });
  require(rows_per_sequence > 0, op,
          [&] { return "rows_per_sequence must be positive, got " + std::to_string(rows_per_sequence); });
  require(q.shape[0] == 0 || (q.shape[0] - 1) / rows_per_sequence < k_cache.shape[0], op, [&] {
    return std::to_string(q.shape[0]) + " rows at " + std::to_string(rows_per_sequence) +
           " per sequence need more than the " + std::to_string(k_cache.shape[0]) + " sequences of the cache";
  });
}

void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions,
               int rows_per_sequence, float scale, const Tensor& out) {
  const int64_t capacity = k_cache.shape[2];
  const int32_t* position_data = positions.as<const int32_t>();
  int64_t work = 0;  // multiply-adds, to decide whether to fan out
  for (int64_t m = 0; m < q.shape[0]; ++m) {
    const int32_t position = position_data[m * positions.strides[0]];
    if (position < 0 || position >= capacity) {
      fail_on_device("attention", "row " + std::to_string(m) + " has position " + std::to_string(position) +
                                      ", outside the cache's " + std::to_string(capacity) + " positions");
    }
    work += 2 * (static_cast<int64_t>(position) + 1) * q.shape[1];
  }
  switch (k_cache.dtype) {
    case DType::F16:
      attention_for<DType::F16>(q, k_cache, v_cache, positions, rows_per_sequence, scale, out, work);
      break;
    case DType::BF16:
      attention_for<DType::BF16>(q, k_cache, v_cache, positions, rows_per_sequence, scale, out, work);
      break;
    default:
      attention_for<DType::F32>(q, k_cache, v_cache, positions, rows_per_sequence, scale, out, work);
      break;
  }
}

}  // namespace decodelab::cpu
