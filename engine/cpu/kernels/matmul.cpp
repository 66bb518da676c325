// CPU matmul: out[M, N] = x[M, K] · W[N, K]ᵀ with fp32 accumulation.
// x is widened to fp32 once; W is widened in registers. Register tiles are up to
// kBatchRows x rows × kWeightRows W rows (24 accumulators, with AVX-512's 32 registers).
// A single x row (batch-1 decode) reads W as kStreams long sequential streams, one
// accumulator each (see matvec_streams; weight_stream.h for the other variant): what batch-1 decode is bound by. Up to
// kBatchRows rows W is streamed once, in blocks of kWeightRows rows prefetched ahead as
// one sequential stream. With more rows (batched decode, prefill) threads take W panels
// that stay in L2 while every group of kPanelXRows x rows passes over them in tiles of
// kPanelXRows × kPanelWeightRows (4×3 on AVX2): what those are bound by is FMAs. The one non-obvious
// choice: each output element is one vector accumulator that starts at zero, takes one
// FMA per kLanes-wide chunk of K in order (the tail zero-padded), and is reduced by the
// vsum tree (vsum16 gives the same bits) — so an element depends only on its x row and W
// row, never on M, the tile it falls in, or the storage dtype of equal values
// (invariants the engine's tests rely on).
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "engine/cpu/kernels/checks.h"
#include "engine/cpu/fan_out.h"
#include "engine/cpu/kernels/kernels.h"
#include "engine/cpu/kernels/parallel_for.h"
#include "engine/cpu/kernels/scratch.h"
#include "engine/cpu/kernels/simd.h"
#include "engine/cpu/weight_stream.h"

namespace decodelab::cpu {

namespace {

constexpr int kWeightRows = 4;                // W rows sharing each x load
// x rows sharing each widened W chunk: 6×4 accumulators + 4 W chunks + 1 x chunk fit
// AVX-512's 32 vector registers; AVX2's 16 hold 2×4 + 4 + 1.
#if defined(DECODELAB_SIMD_AVX512)
constexpr int kBatchRows = 6;
#else
constexpr int kBatchRows = 2;
#endif
// The panel tile (several groups of x rows over a W panel held in L2). AVX-512: 6×4.
// AVX2: 4 x rows × 3 W rows, 12 accumulators + 3 widened W chunks + 1 x chunk in the 16
// registers, 3 conversions and 4 x loads per 12 FMAs where 2×4 paid 4 conversions and 2
// loads per 8 FMAs and was bound by the conversions and the 16-bit W stream from L2. 6×2
// and 5×2 lost to 4×3, and so did widening each fp16 panel once into an fp32 copy in L2
// (twice the bytes from L2 per W chunk, where the conversions were not what bound it);
// 3×4 spills. The timings that chose these tiles are in
// bench/results/2026-12-06-code-comment-measurements.md.
#if defined(DECODELAB_SIMD_AVX512)
constexpr int kPanelXRows = 6;
constexpr int kPanelWeightRows = 4;
#else
constexpr int kPanelXRows = 4;
constexpr int kPanelWeightRows = 3;
#endif
constexpr int64_t kXBlockBytes = 256 * 1024;  // x rows one pass over a W panel keeps in L2
// The share of this core's L2 a W panel takes: the panel's rows follow from the cache the OS
// reports and the row's bytes, not from a row count (a fixed 64 rows of an fp32 down projection
// is 704 KiB, beyond a 512 KiB L2, and an eighth of a 2 MiB one in fp16). A quarter leaves the
// rest to what passes through beside the panel: the x rows, the lines prefetched ahead, a second
// hyperthread. The timings of this choice: bench/results/2026-12-07-intel-xeon-panel-from-l2.md.
constexpr int64_t kPanelL2Share = 4;
// At least this many panels per kernel thread, so that a thread the machine slows hands the
// last panels to the others (guided schedule).
constexpr int64_t kPanelsPerThread = 4;
// How far ahead of its read position the first x group prefetches W: about the
// bandwidth-delay product of one core's DRAM stream, measured best among 16-128 KiB.
constexpr int64_t kPrefetchAheadBytes = 32 * 1024;
// AVX2, a single x row: W is read as kStreams sequential streams, the rows of a tile
// being n, n + q, n + 2q, ... (q = N / kStreams), so that each accumulator's next row
// follows its last in memory and a stream runs on through whole pages for q rows. The
// hardware prefetcher follows a few long streams far better than many row-long ones: the
// interleaved rows of a kWeightRows block (2 KiB fp16 rows, one software-prefetched
// stream) fell well short of fp32's GB/s, and rows of 4 KiB or more read 8 adjacent rows
// at a time (short streams that end every row). 16-bit rows also prefetch
// kStreamPrefetchBytes ahead in each stream into L1 (on one thread, a gain over the
// hardware prefetcher alone, where fp32 has none); 6 streams beat 4 and 8. At 2 threads
// no other distance (off, 256 B-2 KiB), hint (L2, non-temporal) or schedule (guided,
// dynamic) did better; what did was 2 MiB pages under the weights
// (engine/cpu/host_memory.h). The timings: bench/results/2026-12-06-code-comment-measurements.md.
// The non-temporal weight stream (weight_stream.h) reads one x row through the blocks instead.
constexpr int kStreams = 6;
constexpr int64_t kStreamPrefetchBytes = 512;

// Rows of x widened to fp32, each zero-padded to `padded_k` (a multiple of kLanes).
void widen_rows(const Tensor& x, float* destination, int64_t padded_k) {
  const int64_t rows = x.shape[0];
  const int64_t k = x.shape[1];
  const int64_t row_stride = x.strides[0];
  const size_t element = dtype_size(x.dtype);
  parallel_for(matmul_widen_fans_out(rows, k), rows, [&](int64_t m) {
    const char* row = static_cast<const char*>(x.data) + m * row_stride * static_cast<int64_t>(element);
    float* target = destination + m * padded_k;
    for (int64_t column = 0; column < padded_k; column += kLanes) {
      const int count = static_cast<int>(std::min<int64_t>(kLanes, k - column));
      vstore(target + column, count > 0 ? vload_n(x.dtype, row, column, count) : vzero());
    }
  });
}

// One kLanes-wide step of K for an MR×NR tile: x chunks at x_column, W chunks at
// w_column of rows w_stride apart, widened in registers and each reused by MR x rows.
template <DType WD, int MR, int NR>
[[gnu::always_inline]] inline void register_step(VFloat (&acc)[MR][NR], const float* x, int64_t x_stride, const void* w,
                                                 int64_t w_stride, int64_t x_column, int64_t w_column) {
  VFloat w_chunk[NR];
#pragma GCC unroll 16
  for (int n = 0; n < NR; ++n) {
    VFloat chunk = vload_as<WD>(w, n * w_stride + w_column);
    if constexpr (WD == DType::F32) keep_in_register(chunk);  // widened chunks are in registers already
    w_chunk[n] = chunk;
  }
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) {
    VFloat x_chunk = vload(x + m * x_stride + x_column);
    keep_in_register(x_chunk);
#pragma GCC unroll 16
    for (int n = 0; n < NR; ++n) acc[m][n] = vfma(x_chunk, w_chunk[n], acc[m][n]);
  }
}

// How a register tile prefetches W. kFromMemory: the tile's rows are NR interleaved short
// streams, which the hardware prefetcher follows poorly for 16-bit rows; prefetching
// kPrefetchAheadBytes ahead as if the block were one sequential stream (NR·kLanes elements
// per step), non-temporally (W is read once per pass and should not evict x from the
// caches), keeps DRAM busy: with 2 threads this reached 91-94% of a read-only STREAM where
// prefetching 16 KiB ahead into every level reached 72-86%. kFromL2: W sits in L2 (a panel
// a previous x group brought in); each row is prefetched into L1 kNearAheadBytes ahead,
// since the L1 prefetcher does not keep up with NR rows plus MR x rows at once and every
// step would otherwise wait on L2 for each of its W lines.
enum class WPrefetch { kNone, kFromMemory, kFromL2 };

// kFromL2's distance: a few cache lines per row, enough to cover an L2 hit's latency at
// one line per row per step, short enough that the lines are still in L1 when used.
constexpr int64_t kNearAheadBytes = 256;

// Dot products of MR widened x rows with NR W rows read in their storage dtype, over the
// full kLanes chunks of the columns [begin, end) (end == k: to the end, the partial last
// chunk included). A tile over all of K starts from zero and reduces; a tile over part of
// it (K-blocking, matmul_panels) starts from the accumulators `carry` holds, unless it
// begins at column 0, and leaves them there, unless it ends at k: the same FMAs in the same
// order either way. W's partial last chunk is widened (zero-filled) before the loop: a
// function call while the accumulators are live would make the compiler keep them in
// memory, and every FMA would wait on a store.
template <DType WD, int MR, int NR, WPrefetch Prefetch, bool Blocked, int DM, int DN>
void register_tile_range(const float* x, int64_t padded_k, const void* w, int64_t w_stride, int64_t k,
                         int64_t begin, int64_t end, VFloat* carry, float (&dots)[DM][DN],
                         const char* later = nullptr, int64_t later_lines = 0) {
  static_assert(MR <= DM && NR <= DN, "the tile must fit its dots");
  constexpr int64_t element = WD == DType::F32 ? 4 : 2;
  const int64_t full = k / kLanes * kLanes;
  const bool last = !Blocked || end >= k;
  const int64_t stop = last ? full : end;
  alignas(64) float tail[NR][kLanes] = {};
  if (last && full < k) {
    for (int n = 0; n < NR; ++n) vstore(tail[n], vload_partial_as<WD>(w, n * w_stride + full, static_cast<int>(k - full)));
  }
  VFloat acc[MR][NR];
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 16
    for (int n = 0; n < NR; ++n) acc[m][n] = Blocked && begin > 0 ? carry[m * NR + n] : vzero();
  const char* ahead = static_cast<const char*>(w) + kPrefetchAheadBytes;
  const char* near = static_cast<const char*>(w) + kNearAheadBytes;
  int64_t later_done = 0;  // `later_lines` cache lines from `later` into L2, one a step
  for (int64_t column = begin; column < stop; column += kLanes) {
    if (later_done < later_lines) prefetch_far(later + 64 * later_done++);
    if constexpr (Prefetch == WPrefetch::kFromMemory) {
      for (int64_t line = 0; line < NR * kLanes * element; line += 64) prefetch_stream(ahead + column * NR * element + line);
    } else if constexpr (Prefetch == WPrefetch::kFromL2) {
#pragma GCC unroll 16
      for (int n = 0; n < NR; ++n) prefetch_near(near + (n * w_stride + column) * element);
    }
    register_step<WD, MR, NR>(acc, x, padded_k, w, w_stride, column, column);
  }
  for (; later_done < later_lines; ++later_done) prefetch_far(later + 64 * later_done);
  if (Blocked && !last) {
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m)
#pragma GCC unroll 16
      for (int n = 0; n < NR; ++n) carry[m * NR + n] = acc[m][n];
    return;
  }
  if (full < k) register_step<DType::F32, MR, NR>(acc, x, padded_k, &tail[0][0], kLanes, full, 0);
#if defined(DECODELAB_SIMD_AVX512)
  if constexpr (MR * NR >= 8) {  // sixteen reductions at a time, the same sums as vsum
    constexpr int kCount = MR * NR;
#pragma GCC unroll 2
    for (int first = 0; first < kCount; first += 16) {
      VFloat batch[16];
      float sums[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) batch[i] = first + i < kCount ? acc[(first + i) / NR][(first + i) % NR] : vzero();
      vsum16(batch, sums);
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i)
        if (first + i < kCount) dots[(first + i) / NR][(first + i) % NR] = sums[i];
    }
    return;
  }
#endif
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 16
    for (int n = 0; n < NR; ++n) dots[m][n] = vsum(acc[m][n]);
}

// A tile over all of K.
template <DType WD, int MR, int NR, bool PrefetchAhead, int DM, int DN>
void register_tile(const float* x, int64_t padded_k, const void* w, int64_t w_stride, int64_t k,
                   float (&dots)[DM][DN]) {
  constexpr WPrefetch prefetch = PrefetchAhead ? WPrefetch::kFromMemory : WPrefetch::kNone;
  register_tile_range<WD, MR, NR, prefetch, false>(x, padded_k, w, w_stride, k, 0, k, nullptr, dots);
}

// Calls f.template operator()<MR, NR>() for runtime mr in 1..TM, nr in 1..TN.
template <int TM, int TN, int MR = 1, int NR = 1, typename F>
[[gnu::always_inline]] inline void dispatch_tile(int mr, int nr, F&& f) {
  if constexpr (MR < TM) {
    if (mr > MR) return dispatch_tile<TM, TN, MR + 1, NR>(mr, nr, f);
  }
  if constexpr (NR < TN) {
    if (nr > NR) return dispatch_tile<TM, TN, MR, NR + 1>(mr, nr, f);
  }
  f.template operator()<MR, NR>();
}

// A tile's dot products into out, each rounded once to out's dtype (the conversions
// store_from_float makes). The dtype is decided once per tile, not per element: the
// element-wise call cost a prefill's fp32 tiles more than their reductions. The columns
// are unrolled to the tile's width (a loop over nr became a memcpy call per row).
template <int DM, int DN>
void store_tile(const Tensor& out, int64_t m0, int64_t n0, int mr, int nr, const float (&dots)[DM][DN]) {
  const int64_t stride = out.strides[0];
  const int64_t first = m0 * stride + n0;
  auto store = [&]<typename T>(T* target, auto convert) __attribute__((always_inline)) {
    for (int m = 0; m < mr; ++m) {
#pragma GCC unroll 16
      for (int n = 0; n < DN; ++n)
        if (n < nr) target[m * stride + n] = convert(dots[m][n]);
    }
  };
  switch (out.dtype) {
    case DType::F32:
      store(static_cast<float*>(out.data) + first, [](float value) { return value; });
      return;
    case DType::F16:
      store(static_cast<uint16_t*>(out.data) + first, [](float value) { return f16_bits(value); });
      return;
    case DType::BF16:
      store(static_cast<uint16_t*>(out.data) + first, [](float value) { return float_to_bf16(value); });
      return;
    default:
      for (int m = 0; m < mr; ++m)
        for (int n = 0; n < nr; ++n) store_from_float(out.data, out.dtype, first + m * stride + n, dots[m][n]);
  }
}

// One x row against kStreams W rows w_stride apart: the same per-element arithmetic as
// register_tile (one accumulator per row from zero, one FMA per kLanes chunk in order,
// the zero-padded tail chunk last, vsum), each W chunk used once and so loaded straight
// into its FMA. 16-bit rows go a cache line per stream at a time, each stream prefetched
// kStreamPrefetchBytes ahead (the line loop only groups the same chunks in the same order).
template <DType WD>
void stream_tile(const float* x, const void* w, int64_t w_stride, int64_t k, float (&dots)[kStreams]) {
  constexpr int64_t element = WD == DType::F32 ? 4 : 2;
  constexpr bool kPrefetch = WD != DType::F32;
  constexpr int64_t kLineElements = 64 / element;
  const int64_t full = k / kLanes * kLanes;
  alignas(64) float tail[kStreams][kLanes] = {};  // widened before the loop, as in register_tile
  if (full < k) {
    for (int n = 0; n < kStreams; ++n)
      vstore(tail[n], vload_partial_as<WD>(w, n * w_stride + full, static_cast<int>(k - full)));
  }
  VFloat acc[kStreams];
#pragma GCC unroll 8
  for (int n = 0; n < kStreams; ++n) acc[n] = vzero();
  auto step = [&](int64_t column) __attribute__((always_inline)) {
    VFloat x_chunk = vload(x + column);
    keep_in_register(x_chunk);
#pragma GCC unroll 8
    for (int n = 0; n < kStreams; ++n) acc[n] = vfma(x_chunk, vload_as<WD>(w, n * w_stride + column), acc[n]);
  };
  int64_t column = 0;
  if constexpr (kPrefetch) {
    const char* bytes = static_cast<const char*>(w) + kStreamPrefetchBytes;
    for (; column + kLineElements <= full; column += kLineElements) {
#pragma GCC unroll 8
      for (int n = 0; n < kStreams; ++n) prefetch_near(bytes + (n * w_stride + column) * element);
#pragma GCC unroll 8
      for (int64_t chunk = 0; chunk < kLineElements; chunk += kLanes) step(column + chunk);
    }
  }
  for (; column < full; column += kLanes) step(column);
  if (full < k) {
    const VFloat x_chunk = vload(x + full);
#pragma GCC unroll 8
    for (int n = 0; n < kStreams; ++n) acc[n] = vfma(x_chunk, vload(tail[n]), acc[n]);
  }
#pragma GCC unroll 8
  for (int n = 0; n < kStreams; ++n) dots[n] = vsum(acc[n]);
}

// One x row, the hardware weight stream (weight_stream.h): kStreams streams of
// q = N / kStreams rows, each thread taking one contiguous range of every stream (static:
// equal bytes per thread); the last rows (fewer than kStreams) as register tiles. Returns
// false where the path does not apply.
template <DType WD>
bool matvec_streams(const float* x, int64_t padded_k, const Tensor& weight, const Tensor& out) {
  if (out.shape[0] != 1) return false;
  const int64_t n_total = weight.shape[0];
  const int64_t k = weight.shape[1];
  const int64_t w_stride = weight.strides[0];
  const int64_t element = static_cast<int64_t>(dtype_size(WD));
  const int64_t q = n_total / kStreams;
  parallel_for(matmul_fans_out(1, n_total, k), q + 1, [&](int64_t n) {
    if (n < q) {
      float dots[kStreams];
      stream_tile<WD>(x, static_cast<const char*>(weight.data) + n * w_stride * element, q * w_stride, k, dots);
      for (int i = 0; i < kStreams; ++i) store_from_float(out.data, out.dtype, n + i * q, dots[i]);
      return;
    }
    for (int64_t first = q * kStreams; first < n_total; first += kWeightRows) {  // the last rows
      const int nr = static_cast<int>(std::min<int64_t>(kWeightRows, n_total - first));
      const void* rows = static_cast<const char*>(weight.data) + first * w_stride * element;
      float dots[1][kWeightRows];
      dispatch_tile<1, kWeightRows>(1, nr, [&]<int MR, int NR>() { register_tile<WD, MR, NR, false>(x, padded_k, rows, w_stride, k, dots); });
      store_tile(out, 0, first, 1, nr, dots);
    }
  });
  return true;
}

// One group of x rows (decode): W streamed once from memory in blocks of kWeightRows,
// each widened in registers as it arrives, the blocks shared out so that both threads
// finish together (guided: large contiguous runs first, small ones at the end).
template <DType WD>
void matmul_streaming(const float* x, int64_t padded_k, const Tensor& weight, const Tensor& out) {
  const int64_t rows = out.shape[0];
  const int64_t n_total = weight.shape[0];
  const int64_t k = weight.shape[1];
  const int64_t w_stride = weight.strides[0];
  const int64_t blocks = (n_total + kWeightRows - 1) / kWeightRows;
  const int mr = static_cast<int>(rows);
  const bool non_temporal = weight_stream() == WeightStream::kNonTemporal;
  parallel_for(matmul_fans_out(rows, n_total, k), blocks, [&](int64_t block) {
    const int64_t n0 = block * kWeightRows;
    const int nr = static_cast<int>(std::min<int64_t>(kWeightRows, n_total - n0));
    const void* w = static_cast<const char*>(weight.data) + n0 * w_stride * static_cast<int64_t>(dtype_size(WD));
    float dots[kBatchRows][kWeightRows];
    dispatch_tile<kBatchRows, kWeightRows>(mr, nr, [&]<int MR, int NR>() {
      if (non_temporal)
        register_tile<WD, MR, NR, true>(x, padded_k, w, w_stride, k, dots);
      else
        register_tile<WD, MR, NR, false>(x, padded_k, w, w_stride, k, dots);
    });
    store_tile(out, 0, n0, mr, nr, dots);
  }, LoopSchedule::guided(8));
}

// A cache's size as the OS reports it (sysconf), `fallback` where it does not.
int64_t reported_cache_bytes(int name, int64_t fallback) {
  const long reported = ::sysconf(name);
  return reported > 0 ? static_cast<int64_t>(reported) : fallback;
}

// L1 data and L2 (per core), with conservative sizes where the OS reports none.
int64_t l1_data_bytes() {
  static const int64_t bytes = reported_cache_bytes(_SC_LEVEL1_DCACHE_SIZE, 32 * 1024);
  return bytes;
}
int64_t l2_bytes() {
  static const int64_t bytes = reported_cache_bytes(_SC_LEVEL2_CACHE_SIZE, 256 * 1024);
  return bytes;
}

// W rows per panel: kPanelL2Share of L2 in rows of `row_bytes`, a whole number of tiles, at least
// one tile, and small enough that every kernel thread gets kPanelsPerThread panels of n_total.
int64_t panel_rows(int64_t n_total, int64_t row_bytes, bool parallel) {
  const int64_t threads = parallel ? std::max(1, omp_get_max_threads()) : 1;
  const int64_t for_l2 = l2_bytes() / kPanelL2Share / std::max<int64_t>(1, row_bytes);
  const int64_t for_threads = (n_total + threads * kPanelsPerThread - 1) / (threads * kPanelsPerThread);
  return std::max<int64_t>(kPanelWeightRows, std::min(for_l2, for_threads) / kPanelWeightRows * kPanelWeightRows);
}

// A panel's tile: W from memory (the first panel's first x group) or from L2, where the
// panel before prefetched it (whichever thread ran that one) and earlier groups left it;
// `later_lines` lines from `later` (the next panel's) go into L2 on the way.
template <DType WD, int MR, int NR, bool Blocked, int DM, int DN>
void panel_tile(bool w_in_l2, bool non_temporal, const float* x, int64_t padded_k, const void* w, int64_t w_stride,
                int64_t k, int64_t begin, int64_t end, VFloat* carry, float (&dots)[DM][DN], const char* later,
                int64_t later_lines) {
  if (w_in_l2)
    register_tile_range<WD, MR, NR, WPrefetch::kFromL2, Blocked>(x, padded_k, w, w_stride, k, begin, end, carry, dots,
                                                                 later, later_lines);
  else if (non_temporal)
    register_tile_range<WD, MR, NR, WPrefetch::kFromMemory, Blocked>(x, padded_k, w, w_stride, k, begin, end, carry,
                                                                     dots, later, later_lines);
  else
    register_tile_range<WD, MR, NR, WPrefetch::kNone, Blocked>(x, padded_k, w, w_stride, k, begin, end, carry, dots,
                                                               later, later_lines);
}

// Several groups (batched decode, prefill): threads take panels of W rows (panel_rows); a
// panel is brought into L2 while the panel before it runs (the first one by its first group)
// and then stays in L2 while every group
// of x rows (an L2-sized block at a time) passes over it, each group's rows staying in
// L1 across the panel's tiles. Per FMA this loads little from L2 (W's chunks, prefetched
// into L1 ahead of use), where W-in-L1, x-from-L2 loaded MR fp32 x lines per step and was
// bound by L2. Where a group's rows would fill more than half of L1 (long K: the MLP's
// down projection), K is cut into equal blocks that fit, and the group passes over the
// panel once per block, its tiles' accumulators carried between blocks (the same FMAs in
// the same order, so the same bits).
template <DType WD>
void matmul_panels(const float* x, int64_t padded_k, const Tensor& weight, const Tensor& out) {
  const int64_t rows = out.shape[0];
  const int64_t n_total = weight.shape[0];
  const int64_t k = weight.shape[1];
  const int64_t w_stride = weight.strides[0];
  const bool parallel = matmul_fans_out(rows, n_total, k);
  const int64_t rows_per_panel = panel_rows(n_total, k * static_cast<int64_t>(dtype_size(WD)), parallel);
  const int64_t panels = (n_total + rows_per_panel - 1) / rows_per_panel;
  // x rows per pass over a panel: as many as fit the L2 budget, a whole number of groups.
  const int64_t x_block = std::max<int64_t>(
      kPanelXRows, kXBlockBytes / (padded_k * static_cast<int64_t>(sizeof(float))) / kPanelXRows * kPanelXRows);
  const int64_t group_bytes = kPanelXRows * padded_k * static_cast<int64_t>(sizeof(float));
  const int64_t k_blocks = (group_bytes + l1_data_bytes() / 2 - 1) / (l1_data_bytes() / 2);
  const int64_t k_block = round_up_to_lanes((k + k_blocks - 1) / k_blocks);
  const int64_t panel_tiles = (rows_per_panel + kPanelWeightRows - 1) / kPanelWeightRows;
  const bool non_temporal = weight_stream() == WeightStream::kNonTemporal;
  parallel_for(parallel, panels, [&](int64_t panel) {
    thread_local ScratchBuffer carry_scratch;  // 64-byte aligned, as a VFloat must be
    VFloat* carry_storage = k_block < k ? reinterpret_cast<VFloat*>(carry_scratch.floats(
                                              static_cast<size_t>(panel_tiles * kPanelXRows * kPanelWeightRows * kLanes)))
                                        : nullptr;
    const int64_t n_begin = panel * rows_per_panel;
    const int64_t n_end = std::min(n_total, n_begin + rows_per_panel);
    // The next panel's W goes into L2 while this one's groups run: each tile prefetches an equal
    // slice of it, a line a step. Otherwise a panel's first group waits on DRAM for all of its
    // W, which with few groups (M of 8-64: batched decode, short prefixes) is most of the time.
    // A thread's next panel is usually panel + 1 (guided chunks are runs); where it is not,
    // the lines are only read early for the thread that takes it.
    const int64_t element = static_cast<int64_t>(dtype_size(WD));
    const char* next = static_cast<const char*>(weight.data) + n_end * w_stride * element;
    const int64_t next_lines =
        panel + 1 < panels ? ((std::min(n_total, n_end + rows_per_panel) - n_end) * w_stride * element + 63) / 64 : 0;
    const int64_t slices = (rows + kPanelXRows - 1) / kPanelXRows * ((k + k_block - 1) / k_block) *
                           ((n_end - n_begin + kPanelWeightRows - 1) / kPanelWeightRows);
    const int64_t slice_lines = (next_lines + slices - 1) / slices;
    int64_t slice = 0;
    for (int64_t m_begin = 0; m_begin < rows; m_begin += x_block) {
      const int64_t m_end = std::min(rows, m_begin + x_block);
      for (int64_t m0 = m_begin; m0 < m_end; m0 += kPanelXRows) {
        const int mr = static_cast<int>(std::min<int64_t>(kPanelXRows, m_end - m0));
        const float* x_group = x + m0 * padded_k;
        for (int64_t column = 0; column < k; column += k_block) {
          const int64_t column_end = column + k_block >= k ? k : column + k_block;
          for (int64_t n0 = n_begin; n0 < n_end; n0 += kPanelWeightRows) {
            const int nr = static_cast<int>(std::min<int64_t>(kPanelWeightRows, n_end - n0));
            const void* w = static_cast<const char*>(weight.data) + n0 * w_stride * element;
            float dots[kPanelXRows][kPanelWeightRows];
            const int64_t first_line = std::min(next_lines, slice * slice_lines);
            const int64_t lines = std::min(next_lines, first_line + slice_lines) - first_line;
            const char* later = next + 64 * first_line;
            ++slice;
            const bool w_in_l2 = m0 > 0 || panel > 0;  // a later panel was prefetched by the one before
            dispatch_tile<kPanelXRows, kPanelWeightRows>(mr, nr, [&]<int MR, int NR>() {
              if (carry_storage == nullptr) {
                panel_tile<WD, MR, NR, false>(w_in_l2, non_temporal, x_group, padded_k, w, w_stride, k, 0, k, nullptr, dots,
                                              later, lines);
                return;
              }
              VFloat* carry = carry_storage + (n0 - n_begin) / kPanelWeightRows * kPanelXRows * kPanelWeightRows;
              panel_tile<WD, MR, NR, true>(w_in_l2, non_temporal, x_group, padded_k, w, w_stride, k, column, column_end,
                                           carry, dots, later, lines);
            });
            if (column_end >= k) store_tile(out, m0, n0, mr, nr, dots);
          }
        }
      }
    }
  }, LoopSchedule::guided(1));
}

template <DType WD>
void matmul_rows(const float* x, int64_t padded_k, const Tensor& weight, const Tensor& out) {
  if (matvec_streams<WD>(x, padded_k, weight, out)) return;
  if (out.shape[0] <= kBatchRows)
    matmul_streaming<WD>(x, padded_k, weight, out);
  else
    matmul_panels<WD>(x, padded_k, weight, out);
}

}  // namespace

void check_matmul(const Tensor& x, const Tensor& weight, const Tensor& out) {
  const char* op = "matmul";
  require_rank(x, 2, op, "x");
  require_rank(weight, 2, op, "weight");
  require_rank(out, 2, op, "out");
  require_float(x, op, "x");
  require_float(weight, op, "weight");
  require_float(out, op, "out");
  require_unit_inner_stride(x, op, "x");
  require_unit_inner_stride(weight, op, "weight");
  require_unit_inner_stride(out, op, "out");
  require(x.shape[1] == weight.shape[1], op, [&] {
    return "x [M, K] and weight [N, K] must agree on K, got x " + describe_tensor(x) + " and weight " +
           describe_tensor(weight);
  });
  require(out.shape[0] == x.shape[0] && out.shape[1] == weight.shape[0], op, [&] {
    return "out must be [M, N] = [" + std::to_string(x.shape[0]) + "," + std::to_string(weight.shape[0]) + "], got " +
           describe_tensor(out);
  });
}

void matmul(const Tensor& x, const Tensor& weight, const Tensor& out) {
  const int64_t rows = x.shape[0];
  const int64_t k = x.shape[1];
  if (rows == 0 || weight.shape[0] == 0) return;
  const int64_t padded_k = round_up_to_lanes(k);
  thread_local ScratchBuffer x_scratch;
  float* x_widened = x_scratch.floats(static_cast<size_t>(std::max<int64_t>(1, rows * padded_k)));
  widen_rows(x, x_widened, padded_k);
  switch (weight.dtype) {
    case DType::F16:
      matmul_rows<DType::F16>(x_widened, padded_k, weight, out);
      break;
    case DType::BF16:
      matmul_rows<DType::BF16>(x_widened, padded_k, weight, out);
      break;
    default:
      matmul_rows<DType::F32>(x_widened, padded_k, weight, out);
      break;
  }
}

}  // namespace decodelab::cpu
