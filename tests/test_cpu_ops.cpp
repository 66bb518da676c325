// CPU backend ops against plain double-precision references written here, for each
// dtype, at edge sizes (1, non-multiples of the vector width, odd K). Inputs are seeded
// and already rounded to their dtype, so the only differences left are fp32 accumulation
// and the output (and documented intermediate) roundings: tolerances are dtype-scaled.
// The bitwise invariants live in test_cpu_invariants.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "tests/cpu_test_support.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

std::string shape_text(const char* op, DType dtype, std::initializer_list<int64_t> dims) {
  std::string text = std::string(op) + " " + dtype_name(dtype) + " [";
  bool first = true;
  for (int64_t dim : dims) {
    if (!first) text += ',';
    text += std::to_string(dim);
    first = false;
  }
  return text + "]";
}

}  // namespace

TEST_CASE("cpu matmul matches a double reference", "[cpu][ops]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  const int64_t m = GENERATE(1, 3, 4, 5, 9);
  const int64_t k = GENERATE(1, 15, 16, 17, 100, 1027);
  const int64_t n = GENERATE(1, 7, 33);
  CpuFixture fixture;
  const std::vector<float> x_values = random_values(static_cast<size_t>(m * k), dtype, 11);
  const std::vector<float> w_values = random_values(static_cast<size_t>(n * k), dtype, 12);
  const Tensor x = fixture.upload(dtype, {m, k}, x_values);
  const Tensor w = fixture.upload(dtype, {n, k}, w_values);
  const Tensor out = fixture.tensor(dtype, {m, n});

  fixture.backend->matmul(x, w, out, fixture.id());
  const std::vector<float> actual = fixture.read(out);

  std::vector<double> expected(static_cast<size_t>(m * n)), scale(static_cast<size_t>(m * n));
  for (int64_t row = 0; row < m; ++row) {
    for (int64_t col = 0; col < n; ++col) {
      double sum = 0.0, squares = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        const double term = static_cast<double>(x_values[row * k + i]) * w_values[col * k + i];
        sum += term;
        squares += term * term;
      }
      expected[row * n + col] = sum;
      scale[row * n + col] = std::sqrt(squares);
    }
  }
  // Output rounding, plus fp32 accumulation error growing like sqrt(K).
  const std::string report = compare(
      actual, expected,
      [&](size_t i) {
        return relative_tolerance(dtype) * std::fabs(expected[i]) + 1e-6 * std::sqrt(double(k)) * scale[i] + 1e-30;
      },
      shape_text("matmul", dtype, {m, n, k}));
  INFO(report);
  CHECK(report.empty());
}

TEST_CASE("cpu matmul mixes dtypes and honours row strides", "[cpu][ops]") {
  CpuFixture fixture;
  const int64_t m = 6, k = 70, n = 9, x_stride = 80, out_stride = 12;
  const std::vector<float> x_values = random_values(static_cast<size_t>(m * x_stride), DType::F32, 21);
  const std::vector<float> w_values = random_values(static_cast<size_t>(n * k), DType::F16, 22);
  const Tensor x_storage = fixture.upload(DType::F32, {m, x_stride}, x_values);
  const Tensor x = Tensor::strided(x_storage.data, DType::F32, {m, k}, {x_stride, 1});
  const Tensor w = fixture.upload(DType::F16, {n, k}, w_values);
  const Tensor out_storage = fixture.upload(DType::BF16, {m, out_stride}, std::vector<float>(m * out_stride, 7.0f));
  const Tensor out = Tensor::strided(out_storage.data, DType::BF16, {m, n}, {out_stride, 1});

  fixture.backend->matmul(x, w, out, fixture.id());
  const std::vector<float> actual = fixture.read(out_storage);

  std::vector<double> expected(actual.size(), 7.0);  // padding columns stay untouched
  for (int64_t row = 0; row < m; ++row) {
    for (int64_t col = 0; col < n; ++col) {
      double sum = 0.0;
      for (int64_t i = 0; i < k; ++i) sum += double(x_values[row * x_stride + i]) * w_values[col * k + i];
      expected[row * out_stride + col] = sum;
    }
  }
  const std::string report = compare(
      actual, expected, [&](size_t i) { return relative_tolerance(DType::BF16) * std::fabs(expected[i]) + 1e-5; },
      "matmul fp32 x · fp16 W -> bf16 out, strided rows");
  INFO(report);
  CHECK(report.empty());
}

TEST_CASE("cpu rmsnorm matches a double reference", "[cpu][ops]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  const int64_t rows = GENERATE(1, 3);
  const int64_t hidden = GENERATE(1, 15, 64, 1000);
  CpuFixture fixture;
  const float eps = 1e-5f;
  const std::vector<float> x_values = random_values(static_cast<size_t>(rows * hidden), dtype, 31, -2.0f, 2.0f);
  const std::vector<float> w_values = random_values(static_cast<size_t>(hidden), dtype, 32, 0.5f, 1.5f);
  const Tensor x = fixture.upload(dtype, {rows, hidden}, x_values);
  const Tensor w = fixture.upload(dtype, {hidden}, w_values);
  const Tensor out = fixture.tensor(dtype, {rows, hidden});

  fixture.backend->rmsnorm(x, w, eps, out, fixture.id());
  const std::vector<float> actual = fixture.read(out);

  std::vector<double> expected(actual.size());
  for (int64_t r = 0; r < rows; ++r) {
    double squares = 0.0;
    for (int64_t i = 0; i < hidden; ++i) squares += double(x_values[r * hidden + i]) * x_values[r * hidden + i];
    const double inverse_rms = 1.0 / std::sqrt(squares / hidden + eps);
    for (int64_t i = 0; i < hidden; ++i)
      expected[r * hidden + i] = w_values[i] * (x_values[r * hidden + i] * inverse_rms);
  }
  // Two roundings to the dtype (n, then w·n) and an fp32 mean of squares.
  const std::string report = compare(
      actual, expected, [&](size_t i) { return 1.5 * relative_tolerance(dtype) * std::fabs(expected[i]) + 1e-6; },
      shape_text("rmsnorm", dtype, {rows, hidden}));
  INFO(report);
  CHECK(report.empty());
}

TEST_CASE("cpu rope matches a double reference", "[cpu][ops]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  const int head_dim = GENERATE(2, 8, 34, 64);
  CpuFixture fixture;
  const int64_t rows = 3, q_heads = 4, k_heads = 2;
  const std::vector<int32_t> positions = {0, 5, 1000};
  std::vector<float> inv_freq(head_dim / 2);
  for (int j = 0; j < head_dim / 2; ++j) inv_freq[j] = std::pow(10000.0f, -2.0f * j / head_dim);
  const std::vector<float> q_values = random_values(static_cast<size_t>(rows * q_heads * head_dim), dtype, 41);
  const std::vector<float> k_values = random_values(static_cast<size_t>(rows * k_heads * head_dim), dtype, 42);
  const Tensor q = fixture.upload(dtype, {rows, q_heads * head_dim}, q_values);
  const Tensor k = fixture.upload(dtype, {rows, k_heads * head_dim}, k_values);
  const Tensor position_tensor = fixture.upload_i32({rows}, positions);
  const Tensor frequencies = fixture.upload(DType::F32, {head_dim / 2}, inv_freq);

  fixture.backend->rope(q, k, position_tensor, frequencies, head_dim, fixture.id());
  const std::vector<float> q_actual = fixture.read(q);
  const std::vector<float> k_actual = fixture.read(k);

  auto reference = [&](const std::vector<float>& values, int64_t heads, std::vector<double>& bound) {
    std::vector<double> expected(values.size());
    bound.assign(values.size(), 0.0);
    const int half = head_dim / 2;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = (r * heads + h) * head_dim;
        for (int j = 0; j < half; ++j) {
          const float angle = static_cast<float>(positions[r]) * inv_freq[j];  // fp32, as specified
          const double c = std::cos(double(angle)), s = std::sin(double(angle));
          const double x1 = values[base + j], x2 = values[base + j + half];
          expected[base + j] = x1 * c - x2 * s;
          expected[base + j + half] = x2 * c + x1 * s;
          // cos/sin, both products and the sum are rounded to the dtype.
          bound[base + j] = bound[base + j + half] = 2.0 * relative_tolerance(dtype) * (std::fabs(x1) + std::fabs(x2));
        }
      }
    }
    return expected;
  };
  std::vector<double> q_bound, k_bound;
  const std::vector<double> q_expected = reference(q_values, q_heads, q_bound);
  const std::vector<double> k_expected = reference(k_values, k_heads, k_bound);
  const std::string q_report = compare(
      q_actual, q_expected, [&](size_t i) { return q_bound[i] + 1e-7; },
      shape_text("rope q", dtype, {rows, q_heads, head_dim}));
  const std::string k_report = compare(
      k_actual, k_expected, [&](size_t i) { return k_bound[i] + 1e-7; },
      shape_text("rope k", dtype, {rows, k_heads, head_dim}));
  INFO(q_report << k_report);
  CHECK(q_report.empty());
  CHECK(k_report.empty());
}

TEST_CASE("cpu rope rounds each step to the half dtype", "[cpu][ops]") {
  // One fp16 element worked by hand with round_to: the intermediate roundings are observable.
  CpuFixture fixture;
  const float x1 = round_to(DType::F16, 0.7371f), x2 = round_to(DType::F16, -0.4129f);
  const float inv_freq = 1.0f;
  const int32_t position = 3;
  const Tensor q = fixture.upload(DType::F16, {1, 2}, {x1, x2});
  const Tensor k = fixture.upload(DType::F16, {1, 2}, {x1, x2});
  fixture.backend->rope(q, k, fixture.upload_i32({1}, {position}), fixture.upload(DType::F32, {1}, {inv_freq}), 2,
                        fixture.id());
  const std::vector<float> actual = fixture.read(q);
  const float angle = static_cast<float>(position) * inv_freq;
  const float c = round_to(DType::F16, std::cos(angle)), s = round_to(DType::F16, std::sin(angle));
  const float first = round_to(DType::F16, round_to(DType::F16, x1 * c) + round_to(DType::F16, -x2 * s));
  const float second = round_to(DType::F16, round_to(DType::F16, x2 * c) + round_to(DType::F16, x1 * s));
  CHECK(actual[0] == first);
  CHECK(actual[1] == second);
}

TEST_CASE("cpu rope's tabulated angles are the angles computed row by row, bit for bit", "[cpu][ops]") {
  // The kernel looks cos/sin up in a per-thread table that grows with the positions and starts
  // afresh for other frequencies (engine/cpu/kernels/rope_angles.h); positions past its cap are
  // computed directly. Every case must give exactly what one row computed alone gives.
  CpuFixture fixture;
  const int head_dim = 8, half = head_dim / 2;
  auto frequencies_of = [&](float base) {
    std::vector<float> inv_freq(half);
    for (int j = 0; j < half; ++j) inv_freq[j] = std::pow(base, -2.0f * j / head_dim);
    return inv_freq;
  };
  auto check_rows = [&](const std::vector<int32_t>& positions, const std::vector<float>& inv_freq) {
    const auto rows = static_cast<int64_t>(positions.size());
    const std::vector<float> values = random_values(static_cast<size_t>(rows * head_dim), DType::F16, 43);
    const Tensor q = fixture.upload(DType::F16, {rows, head_dim}, values);
    const Tensor k = fixture.upload(DType::F16, {rows, head_dim}, values);
    fixture.backend->rope(q, k, fixture.upload_i32({rows}, positions), fixture.upload(DType::F32, {half}, inv_freq), head_dim,
                          fixture.id());
    const std::vector<float> actual = fixture.read(q);
    for (int64_t r = 0; r < rows; ++r) {
      for (int j = 0; j < half; ++j) {
        const float angle = static_cast<float>(positions[static_cast<size_t>(r)]) * inv_freq[static_cast<size_t>(j)];
        const float c = round_to(DType::F16, std::cos(angle)), s = round_to(DType::F16, std::sin(angle));
        const float x1 = values[static_cast<size_t>(r * head_dim + j)], x2 = values[static_cast<size_t>(r * head_dim + j + half)];
        INFO("position " << positions[static_cast<size_t>(r)] << ", frequency " << j);
        CHECK(actual[static_cast<size_t>(r * head_dim + j)] ==
              round_to(DType::F16, round_to(DType::F16, x1 * c) + round_to(DType::F16, -x2 * s)));
        CHECK(actual[static_cast<size_t>(r * head_dim + j + half)] ==
              round_to(DType::F16, round_to(DType::F16, x2 * c) + round_to(DType::F16, x1 * s)));
      }
    }
  };
  const std::vector<float> llama = frequencies_of(10000.0f), other = frequencies_of(500000.0f);
  check_rows({3}, llama);                        // a table of 4 positions
  check_rows({70000, 3, 1000, 0}, llama);        // grown to 1001; 70000 past the cap
  check_rows({3, 999}, other);                   // other frequencies: afresh
  check_rows({1000, 2, 65535, 65536}, llama);    // and back, up to the cap's edge
}

TEST_CASE("cpu swiglu, add and cast match references", "[cpu][ops]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  const int64_t count = GENERATE(1, 17, 4099);
  CpuFixture fixture;
  const std::vector<float> a_values = random_values(static_cast<size_t>(count), dtype, 51, -12.0f, 12.0f);
  const std::vector<float> b_values = random_values(static_cast<size_t>(count), dtype, 52, -3.0f, 3.0f);
  const Tensor a = fixture.upload(dtype, {1, count}, a_values);
  const Tensor b = fixture.upload(dtype, {1, count}, b_values);
  const Tensor swiglu_out = fixture.tensor(dtype, {1, count});
  const Tensor add_out = fixture.tensor(dtype, {1, count});
  const DType other = dtype == DType::F32 ? DType::BF16 : DType::F32;
  const Tensor cast_out = fixture.tensor(other, {1, count});

  fixture.backend->swiglu(a, b, swiglu_out, fixture.id());
  fixture.backend->add(a, b, add_out, fixture.id());
  fixture.backend->cast(a, cast_out, fixture.id());
  const std::vector<float> swiglu_actual = fixture.read(swiglu_out);
  const std::vector<float> add_actual = fixture.read(add_out);
  const std::vector<float> cast_actual = fixture.read(cast_out);

  std::vector<double> swiglu_expected(count), add_expected(count);
  std::vector<float> cast_expected(count);
  for (int64_t i = 0; i < count; ++i) {
    const double g = a_values[i];
    swiglu_expected[i] = g / (1.0 + std::exp(-g)) * b_values[i];
    add_expected[i] = double(a_values[i]) + b_values[i];
    cast_expected[i] = round_to(other, a_values[i]);
  }
  const double tolerance = relative_tolerance(dtype);
  const std::string swiglu_report = compare(
      swiglu_actual, swiglu_expected, [&](size_t i) { return 1.5 * tolerance * std::fabs(swiglu_expected[i]) + 1e-6; },
      shape_text("swiglu", dtype, {count}));
  const std::string add_report = compare(
      add_actual, add_expected, [&](size_t i) { return tolerance * std::fabs(add_expected[i]) + 1e-7; },
      shape_text("add", dtype, {count}));
  const std::string cast_report = compare_bitwise(cast_actual, cast_expected, shape_text("cast", dtype, {count}));
  INFO(swiglu_report << add_report << cast_report);
  CHECK(swiglu_report.empty());
  CHECK(add_report.empty());
  CHECK(cast_report.empty());
}

TEST_CASE("cpu add writes in place and walks strided views", "[cpu][ops]") {
  CpuFixture fixture;
  const std::vector<float> a_values = random_values(24, DType::F32, 61);
  const std::vector<float> b_values = random_values(24, DType::F32, 62);
  const Tensor a = fixture.upload(DType::F32, {4, 6}, a_values);
  const Tensor b_storage = fixture.upload(DType::F32, {6, 4}, b_values);
  const Tensor b_transposed = Tensor::strided(b_storage.data, DType::F32, {4, 6}, {1, 4});

  fixture.backend->add(a, b_transposed, a, fixture.id());  // out aliases a
  const std::vector<float> actual = fixture.read(a);
  std::vector<float> expected(24);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 6; ++c) expected[r * 6 + c] = a_values[r * 6 + c] + b_values[c * 4 + r];
  const std::string report = compare_bitwise(actual, expected, "add in place, transposed b [4,6]");
  INFO(report);
  CHECK(report.empty());
}

TEST_CASE("cpu embedding gathers rows by the token history", "[cpu][ops]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  CpuFixture fixture;
  const int64_t vocab = 11, hidden = 19, sequences = 2, history = 5;
  const std::vector<float> table_values = random_values(static_cast<size_t>(vocab * hidden), dtype, 71);
  const Tensor table = fixture.upload(dtype, {vocab, hidden}, table_values);
  const std::vector<int32_t> tokens_host = {3, 7, 0, 10, 2, /* sequence 1 */ 9, 1, 4, 4, 6};
  const Tensor tokens = fixture.upload_i32({sequences, history}, tokens_host);
  // Prefill-like rows: 3 rows per sequence at positions 0..2 and 1..3.
  const std::vector<int32_t> positions_host = {0, 1, 2, 1, 2, 3};
  const Tensor positions = fixture.upload_i32({6}, positions_host);
  const DType out_dtype = dtype == DType::F32 ? DType::F16 : dtype;  // exercise conversion too
  const Tensor out = fixture.tensor(out_dtype, {6, hidden});

  fixture.backend->embedding(table, tokens, positions, 3, out, fixture.id());
  const std::vector<float> actual = fixture.read(out);
  std::vector<float> expected(actual.size());
  for (int64_t m = 0; m < 6; ++m) {
    const int32_t token = tokens_host[(m / 3) * history + positions_host[m]];
    for (int64_t i = 0; i < hidden; ++i)
      expected[m * hidden + i] = round_to(out_dtype, table_values[token * hidden + i]);
  }
  const std::string report = compare_bitwise(actual, expected, shape_text("embedding", dtype, {6, hidden}));
  INFO(report);
  CHECK(report.empty());
}

TEST_CASE("cpu argmax writes the first maximum after each position", "[cpu][ops]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  const int64_t vocab = GENERATE(1, 17, 32000);
  CpuFixture fixture;
  const int64_t rows = 4, history = 8;
  std::vector<float> logits_values = random_values(static_cast<size_t>(rows * vocab), dtype, 81, -5.0f, 5.0f);
  if (vocab > 2) {
    // Row 1: a tie between two maxima; row 2: a NaN after the maximum; row 3: all -inf.
    logits_values[1 * vocab + vocab / 3] = 9.0f;
    logits_values[1 * vocab + vocab - 1] = 9.0f;
    logits_values[2 * vocab + 0] = 9.5f;
    logits_values[2 * vocab + vocab / 2] = std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = 0; i < vocab; ++i) logits_values[3 * vocab + i] = -std::numeric_limits<float>::infinity();
  }
  const Tensor logits = fixture.upload(dtype, {rows, vocab}, logits_values);
  const Tensor tokens = fixture.upload_i32({rows, history}, std::vector<int32_t>(rows * history, -1));
  // Positions as a strided view: every other entry of a [rows * 2] buffer.
  const std::vector<int32_t> positions_host = {2, 99, 0, 99, 6, 99, 3, 99};
  const Tensor position_storage = fixture.upload_i32({rows * 2}, positions_host);
  const Tensor positions = Tensor::strided(position_storage.data, DType::I32, {rows}, {2});

  fixture.backend->argmax(logits, tokens, positions, fixture.id());
  const std::vector<int32_t> actual = fixture.read_i32(tokens);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best = 0;  // first NaN wins, else the first maximum
    for (int64_t i = 0; i < vocab; ++i) {
      const float value = logits_values[r * vocab + i];
      if (std::isnan(value)) {
        best = i;
        break;
      }
      if (value > logits_values[r * vocab + best]) best = i;
    }
    const int64_t target = positions_host[r * 2] + 1;
    INFO(shape_text("argmax", dtype, {rows, vocab}) << " row " << r);
    CHECK(actual[r * history + target] == best);
    for (int64_t p = 0; p < history; ++p) {
      if (p != target) CHECK(actual[r * history + p] == -1);
    }
  }
}

TEST_CASE("cpu kv_store writes each row at its sequence and position", "[cpu][ops]") {
  const DType cache_dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  const bool transposed = GENERATE(false, true);
  CpuFixture fixture;
  const int64_t sequences = 2, kv_heads = 3, capacity = 6, head_dim = 20, rows = 4;  // 2 rows per sequence
  const std::vector<float> k_values = random_values(static_cast<size_t>(rows * kv_heads * head_dim), DType::F32, 91);
  const std::vector<float> v_values = random_values(static_cast<size_t>(rows * kv_heads * head_dim), DType::F32, 92);
  const Tensor k_new = fixture.upload(DType::F32, {rows, kv_heads * head_dim}, k_values);
  const Tensor v_new = fixture.upload(DType::F32, {rows, kv_heads * head_dim}, v_values);
  const int64_t cache_count = sequences * kv_heads * capacity * head_dim;
  const Tensor k_storage = fixture.upload(cache_dtype, {cache_count}, std::vector<float>(cache_count, 0.0f));
  const Tensor v_storage = fixture.upload(cache_dtype, {cache_count}, std::vector<float>(cache_count, 0.0f));
  // Logical [S, kv_heads, P, D]; transposed = memory laid out [S, P, kv_heads, D].
  auto view = [&](const Tensor& storage) {
    return transposed ? Tensor::strided(storage.data, cache_dtype, {sequences, kv_heads, capacity, head_dim},
                                        {capacity * kv_heads * head_dim, head_dim, kv_heads * head_dim, 1})
                      : Tensor::contiguous(storage.data, cache_dtype, {sequences, kv_heads, capacity, head_dim});
  };
  const std::vector<int32_t> positions_host = {4, 5, 0, 1};
  const Tensor positions = fixture.upload_i32({rows}, positions_host);

  fixture.backend->kv_store(k_new, v_new, view(k_storage), view(v_storage), positions, 2, fixture.id());
  const std::vector<float> k_cache = fixture.read(k_storage);
  const std::vector<float> v_cache = fixture.read(v_storage);
  std::vector<float> k_expected(cache_count, 0.0f), v_expected(cache_count, 0.0f);
  const Tensor layout = view(k_storage);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t h = 0; h < kv_heads; ++h) {
      for (int64_t d = 0; d < head_dim; ++d) {
        const int64_t offset = (m / 2) * layout.strides[0] + h * layout.strides[1] +
                               positions_host[m] * layout.strides[2] + d * layout.strides[3];
        k_expected[offset] = round_to(cache_dtype, k_values[(m * kv_heads + h) * head_dim + d]);
        v_expected[offset] = round_to(cache_dtype, v_values[(m * kv_heads + h) * head_dim + d]);
      }
    }
  }
  const std::string report =
      compare_bitwise(k_cache, k_expected,
                      shape_text("kv_store k", cache_dtype, {sequences, kv_heads, capacity, head_dim})) +
      compare_bitwise(v_cache, v_expected, "kv_store v");
  INFO(report << (transposed ? " (transposed cache)" : ""));
  CHECK(report.empty());
}

TEST_CASE("cpu copy materialises strided views of any dtype", "[cpu][ops]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16, DType::I32);
  CpuFixture fixture;
  // A [2, 3, 4, 5] tensor read through a permuted view (axes 0, 2, 1, 3 -> [2, 4, 3, 5])
  // and through a view whose last axis is strided (axes 0, 1, 3, 2 -> [2, 3, 5, 4]).
  const int64_t a = 2, b = 3, c = 4, d = 5, count = a * b * c * d;
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = static_cast<float>(i % 251) - 100.0f;
  Tensor source;
  if (dtype == DType::I32) {
    std::vector<int32_t> ints(values.begin(), values.end());
    source = fixture.upload_i32({a, b, c, d}, ints);
  } else {
    source = fixture.upload(dtype, {a, b, c, d}, values);
  }
  const Tensor swap_middle = Tensor::strided(source.data, dtype, {a, c, b, d}, {b * c * d, d, c * d, 1});
  const Tensor swap_last = Tensor::strided(source.data, dtype, {a, b, d, c}, {b * c * d, c * d, 1, d});
  const Tensor out_middle = fixture.tensor(dtype, {a, c, b, d});
  const Tensor out_last = fixture.tensor(dtype, {a, b, d, c});

  fixture.backend->copy(swap_middle, out_middle, fixture.id());
  fixture.backend->copy(swap_last, out_last, fixture.id());
  const std::vector<float> middle = fixture.read(out_middle);
  const std::vector<float> last = fixture.read(out_last);
  std::vector<float> middle_expected(count), last_expected(count);
  for (int64_t i0 = 0; i0 < a; ++i0)
    for (int64_t i1 = 0; i1 < b; ++i1)
      for (int64_t i2 = 0; i2 < c; ++i2)
        for (int64_t i3 = 0; i3 < d; ++i3) {
          const float value = values[((i0 * b + i1) * c + i2) * d + i3];
          middle_expected[((i0 * c + i2) * b + i1) * d + i3] = value;
          last_expected[((i0 * b + i1) * d + i3) * c + i2] = value;
        }
  const std::string report =
      compare_bitwise(middle, middle_expected, shape_text("copy permuted", dtype, {a, c, b, d})) +
      compare_bitwise(last, last_expected, shape_text("copy last-axis strided", dtype, {a, b, d, c}));
  INFO(report);
  CHECK(report.empty());
}

TEST_CASE("cpu position helpers fill and advance int32 positions", "[cpu][ops]") {
  CpuFixture fixture;
  const Tensor positions = fixture.tensor(DType::I32, {7});
  fixture.backend->fill_positions(positions, 4, 3, fixture.id());
  CHECK(fixture.read_i32(positions) == std::vector<int32_t>{4, 5, 6, 4, 5, 6, 4});
  fixture.backend->advance_positions(positions, fixture.id());
  fixture.backend->advance_positions(positions, fixture.id());
  CHECK(fixture.read_i32(positions) == std::vector<int32_t>{6, 7, 8, 6, 7, 8, 6});
}

TEST_CASE("cpu ops reject bad arguments at enqueue", "[cpu][ops][errors]") {
  CpuFixture fixture;
  const Tensor x = fixture.tensor(DType::F16, {2, 8});
  const Tensor w = fixture.tensor(DType::F16, {4, 9});
  const Tensor out = fixture.tensor(DType::F16, {2, 4});
  CHECK_THROWS_WITH(fixture.backend->matmul(x, w, out, fixture.id()), Catch::Contains("must agree on K"));
  const Tensor tokens_as_float = fixture.tensor(DType::F32, {1, 4});
  CHECK_THROWS_AS(fixture.backend->advance_positions(tokens_as_float, fixture.id()), std::invalid_argument);
  CHECK_THROWS_AS(fixture.backend->add(x, out, out, fixture.id()), std::invalid_argument);
  CHECK_THROWS_WITH(fixture.backend->copy(x, fixture.tensor(DType::F32, {2, 8}), fixture.id()),
                    Catch::Contains("cast converts"));
  fixture.backend->synchronize();  // nothing was enqueued by the rejected calls
}

TEST_CASE("cpu ops report out-of-range device values at the next sync", "[cpu][ops][errors]") {
  CpuFixture fixture;
  const Tensor table = fixture.tensor(DType::F32, {10, 4});
  const Tensor tokens = fixture.upload_i32({1, 4}, {1, 2, 12, 3});  // 12 is outside the table
  const Tensor positions = fixture.upload_i32({1}, {2});
  const Tensor out = fixture.tensor(DType::F32, {1, 4});
  fixture.backend->embedding(table, tokens, positions, 1, out, fixture.id());  // enqueue succeeds
  CHECK_THROWS_WITH(fixture.backend->synchronize(), Catch::Contains("token id 12"));
  CHECK_NOTHROW(fixture.backend->synchronize());  // reported once

  const Tensor cache = fixture.tensor(DType::F32, {1, 1, 4, 4});
  const Tensor fresh = fixture.tensor(DType::F32, {1, 4});
  fixture.backend->kv_store(fresh, fresh, cache, cache, fixture.upload_i32({1}, {4}), 1, fixture.id());
  CHECK_THROWS_WITH(fixture.backend->synchronize(), Catch::Contains("position 4"));
}

TEST_CASE("cpu FMA probe runs on the stream, once per kernel thread", "[cpu][ops]") {
  for (int threads : {1, 2}) {
    BackendOptions options;
    options.threads = threads;
    const auto backend = make_cpu_backend(options);
    const double one_round = backend->fma_probe(1, 1);
    const double thousand_rounds = backend->fma_probe(1000, 2);
    backend->synchronize();
    // Each thread's chains: kLanes-wide FMAs (2 FLOPs per lane), the same count per round.
    CHECK(thousand_rounds == Approx(1000 * one_round));
    CHECK(std::fmod(one_round, 2.0 * threads) == 0);
    const std::vector<OpTiming> timings = backend->take_timings();
    REQUIRE(timings.size() == 2);
    CHECK(timings[1].id == 2);
    CHECK(timings[1].end_ns > timings[1].begin_ns);
  }
  BackendOptions one, two;
  one.threads = 1;
  two.threads = 2;
  CHECK(make_cpu_backend(two)->fma_probe(1, 1) == 2 * make_cpu_backend(one)->fma_probe(1, 1));
}
