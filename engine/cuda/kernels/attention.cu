// attention: split-KV attention with an online softmax, then a combine step.
//
// Kernel 1 (partial): one block per (query row, KV head, group of up to 8 query heads
// sharing that KV head, split of the key range). Keys are consumed in tiles of 128
// positions, three phases per tile:
//   1. scores: a few lanes per key compute q·k for every query head of the group (the
//      KV head is read once for the whole group), reduced with warp shuffles;
//   2. softmax: one warp per head updates the running max and sum (online softmax);
//   3. values: each thread owns one or two of head_dim's columns and accumulates p·v.
// Kernel 2 (combine, only when a row has several splits): rescales each split's partial
// output by exp(its max - the row max) and divides by the combined sum.
// The one non-obvious choice: K is read in 16-byte packs when the cache is contiguous in
// head_dim; any other layout (the head_dim-strided bug view included) takes the scalar
// path with the same arithmetic, so the two paths differ in speed only.
#include <algorithm>
#include <stdexcept>

#include "engine/cuda/kernels/attention.cuh"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels/device_utils.cuh"

namespace decodelab::cuda {

namespace {

constexpr int kAttentionThreads = 128;
constexpr int kWarps = kAttentionThreads / 32;
constexpr int kTile = 128;                                      // key positions per tile
constexpr int kMaxGroup = kAttentionMaxGroup;                   // query heads per block
constexpr int kDimsPerThread = kAttentionMaxHeadDim / kAttentionThreads;  // head_dim columns per thread
constexpr int kMaxSplits = kAttentionMaxSplits;

struct AttentionArgs {
  KernelTensor q, k_cache, v_cache, positions, out;
  int rows_per_sequence;
  int heads, kv_heads, head_dim;
  float scale;
  int splits;
  int64_t split_length;
  float* partial_out;  // [M, heads, splits, head_dim]
  float* partial_max;  // [M, heads, splits]
  float* partial_sum;  // [M, heads, splits]
};

__device__ __forceinline__ int64_t visible_keys(const AttentionArgs& args, int64_t m) {
  const int32_t position = static_cast<const int32_t*>(args.positions.data)[m * args.positions.strides[0]];
  const int64_t keys = static_cast<int64_t>(position) + 1;
  return keys < 0 ? 0 : (keys > args.k_cache.shape[2] ? args.k_cache.shape[2] : keys);
}

template <typename TC, bool kPacked>
__global__ void __launch_bounds__(kAttentionThreads) attention_partial_kernel(AttentionArgs args, int lanes_per_key) {
  __shared__ float query[kMaxGroup][kAttentionMaxHeadDim];
  __shared__ float scores[kMaxGroup][kTile];
  __shared__ float running_max[kMaxGroup];
  __shared__ float running_sum[kMaxGroup];
  __shared__ float rescale[kMaxGroup];
  constexpr int kVec = kPacked ? Pack<TC>::size : 1;

  const int head_dim = args.head_dim;
  const int group = args.heads / args.kv_heads;
  const int group_chunks = (group + kMaxGroup - 1) / kMaxGroup;
  int64_t block = blockIdx.x;
  const int split = static_cast<int>(block % args.splits);
  block /= args.splits;
  const int chunk = static_cast<int>(block % group_chunks);
  block /= group_chunks;
  const int kv_head = static_cast<int>(block % args.kv_heads);
  const int64_t m = block / args.kv_heads;
  const int first_head = kv_head * group + chunk * kMaxGroup;
  const int heads_here = min(kMaxGroup, group - chunk * kMaxGroup);
  const int64_t sequence = m / args.rows_per_sequence;
  const int64_t length = visible_keys(args, m);
  const int64_t begin = split * args.split_length;
  const int64_t end = min(begin + args.split_length, length);

  for (int i = threadIdx.x; i < heads_here * head_dim; i += kAttentionThreads) {
    const int h = i / head_dim;
    const int d = i % head_dim;
    const int64_t offset = m * args.q.strides[0] + (static_cast<int64_t>(first_head + h) * head_dim + d) * args.q.strides[1];
    query[h][d] = load_any(args.q.data, args.q.dtype, offset) * args.scale;
  }
  if (threadIdx.x < kMaxGroup) {
    running_max[threadIdx.x] = -INFINITY;
    running_sum[threadIdx.x] = 0.0f;
  }
  float accumulator[kMaxGroup][kDimsPerThread];
#pragma unroll
  for (int h = 0; h < kMaxGroup; ++h) {
#pragma unroll
    for (int c = 0; c < kDimsPerThread; ++c) accumulator[h][c] = 0.0f;
  }
  __syncthreads();

  const KernelTensor& kc = args.k_cache;
  const KernelTensor& vc = args.v_cache;
  const TC* keys = static_cast<const TC*>(kc.data) + sequence * kc.strides[0] + kv_head * kc.strides[1];
  const TC* values = static_cast<const TC*>(vc.data) + sequence * vc.strides[0] + kv_head * vc.strides[1];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int keys_per_warp = 32 / lanes_per_key;
  const int key_slot = lane / lanes_per_key;
  const int lane_in_key = lane % lanes_per_key;

  for (int64_t tile = begin; tile < end; tile += kTile) {
    const int tile_length = static_cast<int>(min(static_cast<int64_t>(kTile), end - tile));

    // 1. scores[h][j] = (scale·q_h) · k_(tile+j)
    // Bounded by tile_length (block-uniform, so every lane of a warp reaches the shuffles).
    for (int base = 0; base < tile_length; base += kWarps * keys_per_warp) {
      const int j = base + warp * keys_per_warp + key_slot;
      float dot[kMaxGroup];
#pragma unroll
      for (int h = 0; h < kMaxGroup; ++h) dot[h] = 0.0f;
      if (j < tile_length) {
        const TC* key = keys + (tile + j) * kc.strides[2];
        for (int d0 = lane_in_key * kVec; d0 < head_dim; d0 += lanes_per_key * kVec) {
          float k_values[kVec];
          if constexpr (kPacked) {
            const Pack<TC> pack = load_pack(key + d0);
#pragma unroll
            for (int e = 0; e < kVec; ++e) k_values[e] = to_float(pack.values[e]);
          } else {
            k_values[0] = to_float(key[d0 * kc.strides[3]]);
          }
#pragma unroll
          for (int h = 0; h < kMaxGroup; ++h) {
            if (h < heads_here) {
#pragma unroll
              for (int e = 0; e < kVec; ++e) dot[h] += query[h][d0 + e] * k_values[e];
            }
          }
        }
      }
#pragma unroll
      for (int h = 0; h < kMaxGroup; ++h) {
        if (h < heads_here) {  // uniform across the block: every lane reaches the shuffles
          for (int offset = lanes_per_key / 2; offset > 0; offset >>= 1) {
            dot[h] += __shfl_xor_sync(0xffffffffu, dot[h], offset);
          }
          if (lane_in_key == 0 && j < tile_length) scores[h][j] = dot[h];
        }
      }
    }
    __syncthreads();

    // 2. online softmax: scores become exp(score - new max); old partial results rescale.
    for (int h = warp; h < heads_here; h += kWarps) {
      float tile_max = -INFINITY;
      for (int j = lane; j < tile_length; j += 32) tile_max = fmaxf(tile_max, scores[h][j]);
      tile_max = warp_max(tile_max);
      const float old_max = running_max[h];
      const float new_max = fmaxf(old_max, tile_max);
      float tile_sum = 0.0f;
      for (int j = lane; j < tile_length; j += 32) {
        const float weight = expf(scores[h][j] - new_max);
        scores[h][j] = weight;
        tile_sum += weight;
      }
      tile_sum = warp_sum(tile_sum);
      if (lane == 0) {
        const float factor = old_max == -INFINITY ? 0.0f : expf(old_max - new_max);
        rescale[h] = factor;
        running_sum[h] = running_sum[h] * factor + tile_sum;
        running_max[h] = new_max;
      }
    }
    __syncthreads();

    // 3. accumulator = accumulator * rescale + Σ_j weight_j · v_(tile+j)
#pragma unroll
    for (int c = 0; c < kDimsPerThread; ++c) {
      const int d = threadIdx.x + c * kAttentionThreads;
      if (d < head_dim) {
#pragma unroll
        for (int h = 0; h < kMaxGroup; ++h) accumulator[h][c] *= (h < heads_here ? rescale[h] : 0.0f);
        const TC* column = values + d * vc.strides[3];
        for (int j = 0; j < tile_length; ++j) {
          const float value = to_float(column[(tile + j) * vc.strides[2]]);
#pragma unroll
          for (int h = 0; h < kMaxGroup; ++h) {
            if (h < heads_here) accumulator[h][c] += scores[h][j] * value;
          }
        }
      }
    }
    __syncthreads();  // the next tile overwrites scores and rescale
  }

  // Write: the final row (one split) or this split's partial result.
#pragma unroll
  for (int c = 0; c < kDimsPerThread; ++c) {
    const int d = threadIdx.x + c * kAttentionThreads;
    if (d >= head_dim) continue;
#pragma unroll
    for (int h = 0; h < kMaxGroup; ++h) {
      if (h >= heads_here) continue;
      const int64_t head = first_head + h;
      if (args.splits == 1) {
        const float sum = running_sum[h];
        const float result = sum > 0.0f ? accumulator[h][c] / sum : 0.0f;
        const int64_t offset = m * args.out.strides[0] + (head * head_dim + d) * args.out.strides[1];
        store_any(args.out.data, args.out.dtype, offset, result);
      } else {
        const int64_t slot = (m * args.heads + head) * args.splits + split;
        args.partial_out[slot * head_dim + d] = accumulator[h][c];
      }
    }
  }
  if (args.splits > 1 && threadIdx.x < heads_here) {
    const int64_t slot = (m * args.heads + first_head + threadIdx.x) * args.splits + split;
    args.partial_max[slot] = running_max[threadIdx.x];
    args.partial_sum[slot] = running_sum[threadIdx.x];
  }
}

__global__ void __launch_bounds__(kAttentionThreads) attention_combine_kernel(AttentionArgs args) {
  __shared__ float weights[kMaxSplits];
  __shared__ float total;
  const int64_t row_head = blockIdx.x;  // m * heads + head
  const int64_t m = row_head / args.heads;
  const int64_t head = row_head % args.heads;
  const int splits = args.splits;
  const float* maxima = args.partial_max + row_head * splits;
  const float* sums = args.partial_sum + row_head * splits;

  if (threadIdx.x == 0) {
    float row_max = -INFINITY;
    for (int s = 0; s < splits; ++s) row_max = fmaxf(row_max, maxima[s]);
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s) {
      // An empty split (no keys) has max -inf and sum 0: weight 0.
      weights[s] = sums[s] > 0.0f ? expf(maxima[s] - row_max) : 0.0f;
      sum += weights[s] * sums[s];
    }
    total = sum;
  }
  __syncthreads();

  for (int d = threadIdx.x; d < args.head_dim; d += kAttentionThreads) {
    float value = 0.0f;
    for (int s = 0; s < splits; ++s) {
      if (weights[s] != 0.0f) value += weights[s] * args.partial_out[(row_head * splits + s) * args.head_dim + d];
    }
    const float result = total > 0.0f ? value / total : 0.0f;
    const int64_t offset = m * args.out.strides[0] + (head * args.head_dim + d) * args.out.strides[1];
    store_any(args.out.data, args.out.dtype, offset, result);
  }
}

int next_power_of_two_at_most_32(int value) {
  int power = 1;
  while (power < value && power < 32) power *= 2;
  return power;
}

}  // namespace

void launch_attention(const KernelTensor& q, const KernelTensor& k_cache, const KernelTensor& v_cache,
                      const KernelTensor& positions, int rows_per_sequence, float scale, const KernelTensor& out,
                      const AttentionPlan& plan, float* workspace, cudaStream_t stream) {
  AttentionArgs args{};
  args.q = q;
  args.k_cache = k_cache;
  args.v_cache = v_cache;
  args.positions = positions;
  args.out = out;
  args.rows_per_sequence = rows_per_sequence;
  args.head_dim = static_cast<int>(k_cache.shape[3]);
  args.kv_heads = static_cast<int>(k_cache.shape[1]);
  args.heads = static_cast<int>(q.shape[1] / args.head_dim);
  args.scale = scale;
  args.splits = plan.splits;
  args.split_length = plan.split_length;
  const int64_t rows = q.shape[0];
  if (rows == 0 || args.heads == 0) return;
  if (plan.splits < 1 || plan.splits > kMaxSplits) throw std::invalid_argument("attention: plan splits out of range");
  AttentionShape shape{rows, args.heads, args.kv_heads, args.head_dim, k_cache.shape[2]};
  if (plan.splits > 1) {
    const size_t partial_rows = static_cast<size_t>(rows) * args.heads * plan.splits;
    args.partial_out = workspace;
    args.partial_max = workspace + partial_rows * args.head_dim;
    args.partial_sum = args.partial_max + partial_rows;
  }

  const int64_t blocks = rows * args.kv_heads * attention_group_chunks(shape) * plan.splits;
  const int vec = 16 / element_bytes(k_cache.dtype);
  const bool packed = k_cache.strides[3] == 1 && aligned_to(k_cache.data, 16) && k_cache.strides[0] % vec == 0 &&
                      k_cache.strides[1] % vec == 0 && k_cache.strides[2] % vec == 0 && args.head_dim % vec == 0;
  dispatch_float_dtype(k_cache.dtype, [&](auto tag) {
    using TC = typename decltype(tag)::type;
    if (packed) {
      const int lanes = next_power_of_two_at_most_32((args.head_dim + vec - 1) / vec);
      attention_partial_kernel<TC, true>
          <<<static_cast<unsigned int>(blocks), kAttentionThreads, 0, stream>>>(args, lanes);
    } else {
      const int lanes = next_power_of_two_at_most_32(args.head_dim);
      attention_partial_kernel<TC, false>
          <<<static_cast<unsigned int>(blocks), kAttentionThreads, 0, stream>>>(args, lanes);
    }
  });
  CHECK_LAUNCH();
  if (plan.splits > 1) {
    attention_combine_kernel<<<static_cast<unsigned int>(rows * args.heads), kAttentionThreads, 0, stream>>>(args);
    CHECK_LAUNCH();
  }
}

}  // namespace decodelab::cuda
