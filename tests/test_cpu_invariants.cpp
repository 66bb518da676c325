// The CPU backend's bitwise invariants, which the engine's tests rely on, plus attention
// against a double reference (it shares the cache-layout helpers):
//  1. matmul: an output row depends only on its x row — batched == one row at a time
//     (K-blocked panels included);
//  2. matmul on fp32 tensors holding exact widenings of fp16/bf16 values == the same
//     matmul in fp16/bf16 (the fp32_ops bug must not change results);
//  3. attention: a query row's output is the same whatever M, rows_per_sequence and the
//     KV-cache layout (contiguous, [S, P, kv_heads, D] view, head_dim-strided view);
//  4. matmul into a half-precision out == the fp32 out rounded once (round to nearest even),
//     on every path (one row, a streamed group, panels), row strides honoured.
#include <array>
#include <catch2/catch.hpp>
#include <cmath>

#include "tests/cpu_test_support.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

std::vector<float> row_slice(const std::vector<float>& values, int64_t row, int64_t width) {
  return std::vector<float>(values.begin() + row * width, values.begin() + (row + 1) * width);
}

}  // namespace

TEST_CASE("cpu matmul rows do not depend on the batch they are in", "[cpu][invariants]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  // K = 4099: a group of x rows fills more than half of any L1 up to 192 KiB, so the panels
  // cut K into blocks and carry the accumulators between them (matmul.cpp).
  const int64_t k = GENERATE(1, 17, 1029, 4099);
  CpuFixture fixture;
  const int64_t n = 37, max_rows = 133;  // crosses 4-row groups and, at K = 1029, 60-row x blocks
  const std::vector<float> x_values = random_values(static_cast<size_t>(max_rows * k), dtype, 101);
  const Tensor x = fixture.upload(dtype, {max_rows, k}, x_values);
  const Tensor w = fixture.upload(dtype, {n, k}, random_values(static_cast<size_t>(n * k), dtype, 102));

  // Every row alone (the decode path).
  std::vector<std::vector<float>> single(max_rows);
  const Tensor one = fixture.tensor(DType::F32, {1, n});
  for (int64_t r = 0; r < max_rows; ++r) {
    fixture.backend->matmul(x.rows(r, 1), w, one, fixture.id());
    single[r] = fixture.read(one);
  }
  for (int64_t m : {2, 3, 4, 5, 8, 33, 64, 133}) {
    const Tensor out = fixture.tensor(DType::F32, {m, n});
    // Rows [max_rows - m, max_rows): a recompute whose last row is the newest token.
    fixture.backend->matmul(x.rows(max_rows - m, m), w, out, fixture.id());
    const std::vector<float> batched = fixture.read(out);
    for (int64_t r = 0; r < m; ++r) {
      const std::string report =
          compare_bitwise(row_slice(batched, r, n), single[max_rows - m + r],
                          std::string("matmul ") + dtype_name(dtype) + " K=" + std::to_string(k) +
                              " M=" + std::to_string(m) + " row " + std::to_string(r));
      INFO(report);
      REQUIRE(report.empty());
    }
  }
}

TEST_CASE("cpu batch-1 matvec: stream tiles, leftover rows and any thread count give the batched rows' bits",
          "[cpu][invariants]") {
  // One x row reads W as six streams of N / 6 rows each (AVX2), the N mod 6 rows left over as
  // register tiles, each thread a range of every stream: N below, at and past multiples of 6,
  // large enough at K = 1029 to run on both threads.
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  const int threads = GENERATE(1, 2);
  const int64_t k = GENERATE(203, 1029);
  CpuFixture fixture;
  BackendOptions options;
  options.threads = threads;
  fixture.backend = make_cpu_backend(options);
  const Tensor x = fixture.upload(dtype, {2, k}, random_values(static_cast<size_t>(2 * k), dtype, 121));
  for (int64_t n : {1, 5, 6, 7, 11, 13, 384, 389}) {
    const Tensor w = fixture.upload(dtype, {n, k}, random_values(static_cast<size_t>(n * k), dtype, 122));
    const Tensor batched = fixture.tensor(DType::F32, {2, n});
    fixture.backend->matmul(x, w, batched, fixture.id());
    const std::vector<float> expected = fixture.read(batched);
    for (int64_t r = 0; r < 2; ++r) {
      const Tensor one = fixture.tensor(DType::F32, {1, n});
      fixture.backend->matmul(x.rows(r, 1), w, one, fixture.id());
      const std::string report =
          compare_bitwise(fixture.read(one), row_slice(expected, r, n),
                          std::string("matvec ") + dtype_name(dtype) + " K=" + std::to_string(k) + " N=" +
                              std::to_string(n) + " threads " + std::to_string(threads) + " row " + std::to_string(r));
      INFO(report);
      REQUIRE(report.empty());
    }
  }
}

TEST_CASE("cpu matmul in fp32 of widened half values equals the half matmul", "[cpu][invariants]") {
  const DType half = GENERATE(DType::F16, DType::BF16);
  const int64_t m = GENERATE(1, 6);
  // K = 203 and 1029: partial last chunks, rows shorter and longer than a 4 KiB page.
  const int64_t k = GENERATE(203, 1029);
  CpuFixture fixture;
  const int64_t n = 45;
  const std::vector<float> x_values = random_values(static_cast<size_t>(m * k), half, 111);
  const std::vector<float> w_values = random_values(static_cast<size_t>(n * k), half, 112);
  const Tensor x_half = fixture.upload(half, {m, k}, x_values);
  const Tensor w_half = fixture.upload(half, {n, k}, w_values);
  const Tensor x_wide = fixture.upload(DType::F32, {m, k}, x_values);  // exact widenings
  const Tensor w_wide = fixture.upload(DType::F32, {n, k}, w_values);

  for (DType out_dtype : {DType::F32, half}) {
    const Tensor reference = fixture.tensor(out_dtype, {m, n});
    fixture.backend->matmul(x_half, w_half, reference, fixture.id());
    const std::vector<float> expected = fixture.read(reference);
    const std::pair<Tensor, Tensor> variants[] = {{x_wide, w_wide}, {x_wide, w_half}, {x_half, w_wide}};
    for (const auto& [x, w] : variants) {
      const Tensor out = fixture.tensor(out_dtype, {m, n});
      fixture.backend->matmul(x, w, out, fixture.id());
      const std::string report =
          compare_bitwise(fixture.read(out), expected,
                          std::string("matmul x ") + dtype_name(x.dtype) + " · W " + dtype_name(w.dtype) + " -> " +
                              dtype_name(out_dtype) + " vs all " + dtype_name(half) + ", M=" + std::to_string(m) +
                              " K=" + std::to_string(k));
      INFO(report);
      CHECK(report.empty());
    }
  }
}

TEST_CASE("cpu matmul into half out is the fp32 out rounded once on every path with row strides",
          "[cpu][invariants]") {
  const DType half = GENERATE(DType::F16, DType::BF16);
  // One row (streams), a group (streamed W), 13 rows (panels, a partial last group).
  const int64_t m = GENERATE(1, 5, 13);
  const int64_t k = 203, n = 45, out_stride = 50;
  CpuFixture fixture;
  const std::vector<float> x_values = random_values(static_cast<size_t>(m * k), DType::F32, 121);
  const std::vector<float> w_values = random_values(static_cast<size_t>(n * k), DType::F32, 122);
  const Tensor x = fixture.upload(DType::F32, {m, k}, x_values);
  const Tensor w = fixture.upload(DType::F32, {n, k}, w_values);
  const Tensor wide = fixture.tensor(DType::F32, {m, n});
  fixture.backend->matmul(x, w, wide, fixture.id());
  const std::vector<float> wide_values = fixture.read(wide);

  const float untouched = 7.0f;
  const Tensor storage = fixture.upload(half, {m, out_stride}, std::vector<float>(m * out_stride, untouched));
  const Tensor out = Tensor::strided(storage.data, half, {m, n}, {out_stride, 1});
  fixture.backend->matmul(x, w, out, fixture.id());
  std::vector<float> expected(static_cast<size_t>(m * out_stride), untouched);
  for (int64_t row = 0; row < m; ++row)
    for (int64_t col = 0; col < n; ++col) expected[row * out_stride + col] = round_to(half, wide_values[row * n + col]);
  const std::string report = compare_bitwise(fixture.read(storage), expected,
                                             std::string("matmul -> ") + dtype_name(half) + ", M=" + std::to_string(m));
  INFO(report);
  CHECK(report.empty());
}

namespace {

enum class CacheLayout { Contiguous, PositionMajor, HeadDimStrided };

// Values [S][kv_heads][P][D] written into a buffer laid out as `layout`; returns the
// logical [S, kv_heads, P, D] view.
Tensor make_cache(CpuFixture& fixture, DType dtype, CacheLayout layout, int64_t sequences, int64_t kv_heads,
                  int64_t capacity, int64_t head_dim, const std::vector<float>& values) {
  const int64_t count = sequences * kv_heads * capacity * head_dim;
  Tensor storage = fixture.tensor(dtype, {count});
  std::array<int64_t, 4> strides{};
  switch (layout) {
    case CacheLayout::Contiguous:
      strides = {kv_heads * capacity * head_dim, capacity * head_dim, head_dim, 1};
      break;
    case CacheLayout::PositionMajor:  // memory [S, P, kv_heads, D]
      strides = {capacity * kv_heads * head_dim, head_dim, kv_heads * head_dim, 1};
      break;
    case CacheLayout::HeadDimStrided:  // element (p, d) of a head at d * P + p
      strides = {kv_heads * capacity * head_dim, capacity * head_dim, 1, capacity};
      break;
  }
  std::vector<float> memory(count);
  for (int64_t s = 0; s < sequences; ++s)
    for (int64_t h = 0; h < kv_heads; ++h)
      for (int64_t p = 0; p < capacity; ++p)
        for (int64_t d = 0; d < head_dim; ++d) {
          memory[s * strides[0] + h * strides[1] + p * strides[2] + d * strides[3]] =
              values[((s * kv_heads + h) * capacity + p) * head_dim + d];
        }
  fixture.write(storage, memory);
  return Tensor::strided(storage.data, dtype, {sequences, kv_heads, capacity, head_dim},
                         {strides[0], strides[1], strides[2], strides[3]});
}

struct AttentionProblem {
  int64_t sequences = 3, kv_heads = 2, group = 3, capacity = 24, head_dim = 40;
  int64_t heads() const { return kv_heads * group; }
  int64_t width() const { return heads() * head_dim; }
  std::vector<float> keys, values, queries;  // queries: [S][P][heads*D], one per (sequence, position)

  AttentionProblem(DType dtype, int64_t dim) : head_dim(dim) {
    const size_t cache = static_cast<size_t>(sequences * kv_heads * capacity * head_dim);
    keys = random_values(cache, dtype, 121, -2.0f, 2.0f);
    values = random_values(cache, dtype, 122);
    queries = random_values(static_cast<size_t>(sequences * capacity * width()), dtype, 123, -2.0f, 2.0f);
  }
  const float* query(int64_t s, int64_t p) const { return &queries[(s * capacity + p) * width()]; }
};

// Runs attention for `rows` = (sequence, position) pairs, packed rows_per_sequence per
// sequence, over the caches viewed from `first_sequence` on (as a decode of one sequence
// sees them), and returns the output rows.
std::vector<float> run_attention(CpuFixture& fixture, const AttentionProblem& problem, DType dtype, CacheLayout layout,
                                 const std::vector<std::pair<int64_t, int64_t>>& rows, int rows_per_sequence,
                                 int64_t first_sequence) {
  const int64_t remaining = problem.sequences - first_sequence;
  const Tensor k_cache = make_cache(fixture, dtype, layout, problem.sequences, problem.kv_heads, problem.capacity,
                                    problem.head_dim, problem.keys)
                             .rows(first_sequence, remaining);
  const Tensor v_cache = make_cache(fixture, dtype, layout, problem.sequences, problem.kv_heads, problem.capacity,
                                    problem.head_dim, problem.values)
                             .rows(first_sequence, remaining);
  const int64_t m = static_cast<int64_t>(rows.size());
  std::vector<float> q_values;
  std::vector<int32_t> positions;
  for (const auto& [sequence, position] : rows) {
    q_values.insert(q_values.end(), problem.query(sequence, position),
                    problem.query(sequence, position) + problem.width());
    positions.push_back(static_cast<int32_t>(position));
  }
  const Tensor q = fixture.upload(dtype, {m, problem.width()}, q_values);
  const Tensor out = fixture.tensor(dtype, {m, problem.width()});
  fixture.backend->attention(q, k_cache, v_cache, fixture.upload_i32({m}, positions), rows_per_sequence,
                             1.0f / std::sqrt(static_cast<float>(problem.head_dim)), out, fixture.id());
  return fixture.read(out);
}

}  // namespace

TEST_CASE("cpu attention matches a double reference", "[cpu][ops]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  const int64_t head_dim = GENERATE(16, 40, 64);
  CpuFixture fixture;
  const AttentionProblem problem(dtype, head_dim);
  // Two sequences' prefill of 5 rows each (positions 0..4 and 7..11).
  std::vector<std::pair<int64_t, int64_t>> rows;
  for (int64_t i = 0; i < 5; ++i) rows.push_back({0, i});
  for (int64_t i = 7; i < 12; ++i) rows.push_back({1, i});
  const std::vector<float> actual = run_attention(fixture, problem, dtype, CacheLayout::Contiguous, rows, 5, 0);

  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  std::vector<double> expected(actual.size()), bound(actual.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto [sequence, position] = rows[r];
    for (int64_t h = 0; h < problem.heads(); ++h) {
      const int64_t kv = h / problem.group;
      const float* q = problem.query(sequence, position) + h * head_dim;
      auto cache_at = [&](const std::vector<float>& cache, int64_t p, int64_t d) {
        return double(cache[((sequence * problem.kv_heads + kv) * problem.capacity + p) * head_dim + d]);
      };
      std::vector<double> scores(position + 1);
      double max_score = -1e300;
      for (int64_t p = 0; p <= position; ++p) {
        double dot = 0.0;
        for (int64_t d = 0; d < head_dim; ++d) dot += q[d] * cache_at(problem.keys, p, d);
        scores[p] = dot * scale;
        max_score = std::max(max_score, scores[p]);
      }
      double total = 0.0;
      for (double& score : scores) total += (score = std::exp(score - max_score));
      for (int64_t d = 0; d < head_dim; ++d) {
        double value = 0.0;
        for (int64_t p = 0; p <= position; ++p) value += scores[p] / total * cache_at(problem.values, p, d);
        const size_t index = r * problem.width() + h * head_dim + d;
        expected[index] = value;
        bound[index] = relative_tolerance(dtype) * std::fabs(value) + 2e-6 * std::sqrt(double(head_dim));
      }
    }
  }
  const std::string report = compare(
      actual, expected, [&](size_t i) { return bound[i]; },
      std::string("attention ") + dtype_name(dtype) + " D=" + std::to_string(head_dim));
  INFO(report);
  CHECK(report.empty());
}

TEST_CASE("cpu attention rows do not depend on M, packing or the cache layout", "[cpu][invariants]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  // 16, 64 and 128: whole chunks of every vector width, read in place a block of rows at a
  // time (score tiles, shared value loads); 40: partial chunks, row by row.
  const int64_t head_dim = GENERATE(16, 40, 64, 128);
  CpuFixture fixture;
  const AttentionProblem problem(dtype, head_dim);
  // The prefill run's prompt length: blocks of rows with a short last one, rows reading a
  // few keys past the block's shared ones, and shared keys past whole tiles.
  const int64_t length = 21;

  // Decode: one row at a time, each sequence's cache a view starting at that sequence.
  std::vector<std::vector<float>> decode(problem.sequences * length);
  for (int64_t s = 0; s < problem.sequences; ++s)
    for (int64_t p = 0; p < length; ++p)
      decode[s * length + p] = run_attention(fixture, problem, dtype, CacheLayout::Contiguous, {{s, p}}, 1, s);

  for (CacheLayout layout : {CacheLayout::Contiguous, CacheLayout::PositionMajor, CacheLayout::HeadDimStrided}) {
    // Prefill: every sequence's whole prompt, `length` rows per sequence.
    std::vector<std::pair<int64_t, int64_t>> prefill_rows;
    for (int64_t s = 0; s < problem.sequences; ++s)
      for (int64_t p = 0; p < length; ++p) prefill_rows.push_back({s, p});
    const std::vector<float> prefill =
        run_attention(fixture, problem, dtype, layout, prefill_rows, static_cast<int>(length), 0);
    // Batched decode: one row per sequence, each at a different position.
    std::vector<std::pair<int64_t, int64_t>> batch_rows;
    for (int64_t s = 0; s < problem.sequences; ++s) batch_rows.push_back({s, (s * 4 + 3) % length});
    const std::vector<float> batched = run_attention(fixture, problem, dtype, layout, batch_rows, 1, 0);

    const std::string where = std::string(dtype_name(dtype)) + " D=" + std::to_string(head_dim) + " layout " +
                              std::to_string(static_cast<int>(layout));
    for (size_t r = 0; r < prefill_rows.size(); ++r) {
      const auto [s, p] = prefill_rows[r];
      const std::string report = compare_bitwise(row_slice(prefill, static_cast<int64_t>(r), problem.width()),
                                                 decode[s * length + p], "prefill vs decode, " + where);
      INFO(report);
      REQUIRE(report.empty());
    }
    for (size_t r = 0; r < batch_rows.size(); ++r) {
      const auto [s, p] = batch_rows[r];
      const std::string report = compare_bitwise(row_slice(batched, static_cast<int64_t>(r), problem.width()),
                                                 decode[s * length + p], "batched decode vs decode, " + where);
      INFO(report);
      REQUIRE(report.empty());
    }
  }
}
