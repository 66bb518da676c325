// [cuda] The CUDA backend's ops against the CPU backend's, op by op (and, last, composed into decode
// steps at a context where attention splits its keys): seeded inputs
// placed on both, the op run on both, the results compared with dtype-scaled tolerances.
// Sizes include the edges (1, non-multiples of the vector widths, head_dim not a power
// of two) and the layouts the lab uses (row views, head_dim-strided caches). Without a
// CUDA device every case returns early with SUCCEED.
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>

#include "engine/cuda/host/attention_plan.h"
#include "engine/model/generator.h"
#include "engine/model/logit_tolerance.h"
#include "tests/cuda_test_support.h"
#include "tests/support/engine_fixtures.h"

namespace decodelab {
namespace {

using cuda_test::expect_close;
using cuda_test::make_twin;
using cuda_test::random_twin;
using cuda_test::read_cpu;
using cuda_test::read_cuda;
using cuda_test::rounding_tolerance;
using cuda_test::Twin;

constexpr DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

void sync_both(cuda_test::Devices& devices) {
  devices.cpu->synchronize();
  devices.cuda->synchronize();
}

// A token history [sequences, positions] of ids in [0, vocab) and a position vector.
Twin token_history(cuda_test::Devices& devices, int64_t sequences, int64_t positions, int vocab, uint64_t seed) {
  return make_twin(devices, DType::I32, {sequences, positions}, {},
                   cuda_test::integer_values(sequences * positions, seed, 0, vocab - 1));
}

Twin position_vector(cuda_test::Devices& devices, const std::vector<float>& positions) {
  return make_twin(devices, DType::I32, {static_cast<int64_t>(positions.size())}, {}, positions);
}

TEST_CASE("cuda embedding gathers rows by token history and position", "[cuda]") {
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  for (DType dtype : kFloatTypes) {
    for (int64_t hidden : {64, 33}) {  // 33: rows not 16-byte multiples, generic path
      INFO(dtype_name(dtype) << " hidden " << hidden);
      Twin table = random_twin(devices, dtype, {50, hidden}, 11);
      Twin tokens = token_history(devices, 3, 8, 50, 12);
      Twin positions = position_vector(devices, {0, 7, 3, 5, 1, 2});  // 2 rows per sequence
      Twin out = random_twin(devices, dtype, {6, hidden}, 13);
      devices.cpu->embedding(table.on_cpu(), tokens.on_cpu(), positions.on_cpu(), 2, out.on_cpu(), devices.id());
      devices.cuda->embedding(table.on_cuda(), tokens.on_cuda(), positions.on_cuda(), 2, out.on_cuda(), devices.id());
      expect_close(read_cpu(devices, out), read_cuda(devices, out), {0.0, 0.0}, "embedding");
    }
  }
}

TEST_CASE("cuda rmsnorm matches the CPU backend", "[cuda]") {
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  for (DType dtype : kFloatTypes) {
    for (int64_t hidden : {1, 33, 2048}) {
      for (int64_t rows : {1, 5}) {
        INFO(dtype_name(dtype) << " rows " << rows << " hidden " << hidden);
        Twin x = random_twin(devices, dtype, {rows, hidden}, 21 + hidden);
        Twin weight = make_twin(devices, dtype, {hidden}, {}, cuda_test::uniform_values(hidden, 22, 0.5f, 1.5f));
        Twin out = random_twin(devices, dtype, {rows, hidden}, 23);
        devices.cpu->rmsnorm(x.on_cpu(), weight.on_cpu(), 1e-5f, out.on_cpu(), devices.id());
        devices.cuda->rmsnorm(x.on_cuda(), weight.on_cuda(), 1e-5f, out.on_cuda(), devices.id());
        expect_close(read_cpu(devices, out), read_cuda(devices, out), rounding_tolerance(dtype, 2.0), "rmsnorm");
      }
    }
  }
  // Mixed dtypes (an fp32 norm in a half model) take the generic path.
  Twin x = random_twin(devices, DType::F32, {3, 96}, 24);
  Twin weight = random_twin(devices, DType::BF16, {96}, 25);
  Twin out = random_twin(devices, DType::BF16, {3, 96}, 26);
  devices.cpu->rmsnorm(x.on_cpu(), weight.on_cpu(), 1e-6f, out.on_cpu(), devices.id());
  devices.cuda->rmsnorm(x.on_cuda(), weight.on_cuda(), 1e-6f, out.on_cuda(), devices.id());
  expect_close(read_cpu(devices, out), read_cuda(devices, out), rounding_tolerance(DType::BF16, 2.0), "rmsnorm mixed");
}

TEST_CASE("cuda matmul matches the CPU backend for every dtype and edge size", "[cuda]") {
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  struct Size {
    int64_t m, n, k;
  };
  for (Size size : {Size{1, 1, 1}, Size{1, 33, 64}, Size{3, 100, 257}, Size{64, 96, 128}}) {
    for (DType dtype : kFloatTypes) {
      for (DType out_dtype : {dtype, DType::F32}) {
        INFO(dtype_name(dtype) << " -> " << dtype_name(out_dtype) << " M " << size.m << " N " << size.n << " K "
                               << size.k);
        Twin x = random_twin(devices, dtype, {size.m, size.k}, 31);
        Twin weight = random_twin(devices, dtype, {size.n, size.k}, 32);
        Twin out = random_twin(devices, out_dtype, {size.m, size.n}, 33);
        devices.cpu->matmul(x.on_cpu(), weight.on_cpu(), out.on_cpu(), devices.id());
        devices.cuda->matmul(x.on_cuda(), weight.on_cuda(), out.on_cuda(), devices.id());
        // Sums of K products of values in [-1, 1]: magnitude ~ sqrt(K)/3.
        const double magnitude = std::sqrt(static_cast<double>(size.k));
        cuda_test::Tolerance tolerance = rounding_tolerance(out_dtype, magnitude);
        if (out_dtype == DType::F32) tolerance.absolute = 1e-5 * magnitude * (dtype == DType::F32 ? 1.0 : 4.0);
        expect_close(read_cpu(devices, out), read_cuda(devices, out), tolerance, "matmul");
      }
    }
  }
  SECTION("mixed dtypes and a row view of a wider matrix") {
    // x: rows 1..3 of a [4, 80] fp32 buffer viewed as [3, 64] (row stride 80); W bf16.
    Twin x = make_twin(devices, DType::F32, {3, 64}, {80, 1}, cuda_test::uniform_values(4 * 80, 34));
    Twin weight = random_twin(devices, DType::BF16, {40, 64}, 35);
    Twin out = random_twin(devices, DType::F32, {3, 40}, 36);
    devices.cpu->matmul(x.on_cpu(), weight.on_cpu(), out.on_cpu(), devices.id());
    devices.cuda->matmul(x.on_cuda(), weight.on_cuda(), out.on_cuda(), devices.id());
    expect_close(read_cpu(devices, out), read_cuda(devices, out), {1e-4, 1e-5}, "matmul mixed");
  }
}

TEST_CASE("cuda rope rotates q and k in place like the CPU backend", "[cuda]") {
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  for (DType dtype : kFloatTypes) {
    for (int head_dim : {64, 6}) {
      INFO(dtype_name(dtype) << " head_dim " << head_dim);
      const int64_t rows = 3;
      Twin q = random_twin(devices, dtype, {rows, 4 * head_dim}, 41);
      Twin k = random_twin(devices, dtype, {rows, 2 * head_dim}, 42);
      Twin positions = position_vector(devices, {0, 17, 4999});
      std::vector<float> frequencies(static_cast<size_t>(head_dim / 2));
      for (int j = 0; j < head_dim / 2; ++j) frequencies[j] = std::pow(10000.0f, -2.0f * j / head_dim);
      Twin inv_freq = make_twin(devices, DType::F32, {head_dim / 2}, {}, frequencies);
      devices.cpu->rope(q.on_cpu(), k.on_cpu(), positions.on_cpu(), inv_freq.on_cpu(), head_dim, devices.id());
      devices.cuda->rope(q.on_cuda(), k.on_cuda(), positions.on_cuda(), inv_freq.on_cuda(), head_dim, devices.id());
      // Angles up to ~5000 rad: sin/cos of the same fp32 angle may differ by a few fp32 ulps.
      cuda_test::Tolerance tolerance = rounding_tolerance(dtype);
      tolerance.absolute += 1e-5;
      expect_close(read_cpu(devices, q), read_cuda(devices, q), tolerance, "rope q");
      expect_close(read_cpu(devices, k), read_cuda(devices, k), tolerance, "rope k");
    }
  }
}

// A cache [sequences, kv_heads, capacity, head_dim]: contiguous, or the head_dim-strided
// view of the non_contiguous bug (element (p, d) at d*capacity + p).
Twin cache_twin(cuda_test::Devices& devices, DType dtype, int64_t sequences, int64_t kv_heads, int64_t capacity,
                int64_t head_dim, bool head_dim_strided, uint64_t seed) {
  std::vector<int64_t> strides = cuda_test::contiguous_strides({sequences, kv_heads, capacity, head_dim});
  if (head_dim_strided) strides = {kv_heads * head_dim * capacity, head_dim * capacity, 1, capacity};
  return make_twin(devices, dtype, {sequences, kv_heads, capacity, head_dim}, strides,
                   cuda_test::uniform_values(sequences * kv_heads * capacity * head_dim, seed));
}

TEST_CASE("cuda kv_store writes rows into contiguous and strided caches", "[cuda]") {
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  for (bool strided : {false, true}) {
    for (DType dtype : kFloatTypes) {
      INFO(dtype_name(dtype) << (strided ? " head_dim-strided" : " contiguous"));
      Twin k_cache = cache_twin(devices, dtype, 2, 3, 10, 16, strided, 51);
      Twin v_cache = cache_twin(devices, dtype, 2, 3, 10, 16, strided, 52);
      Twin k_new = random_twin(devices, dtype, {4, 48}, 53);
      Twin v_new = random_twin(devices, dtype, {4, 48}, 54);
      Twin positions = position_vector(devices, {2, 3, 9, 0});  // 2 rows per sequence
      devices.cpu->kv_store(k_new.on_cpu(), v_new.on_cpu(), k_cache.on_cpu(), v_cache.on_cpu(), positions.on_cpu(),
                            2, devices.id());
      devices.cuda->kv_store(k_new.on_cuda(), v_new.on_cuda(), k_cache.on_cuda(), v_cache.on_cuda(),
                             positions.on_cuda(), 2, devices.id());
      expect_close(read_cpu(devices, k_cache), read_cuda(devices, k_cache), {0.0, 0.0}, "k_cache");
      expect_close(read_cpu(devices, v_cache), read_cuda(devices, v_cache), {0.0, 0.0}, "v_cache");
    }
  }
}

struct AttentionCase {
  const char* name;
  int64_t sequences, rows_per_sequence, heads, kv_heads, head_dim, capacity;
  std::vector<float> positions;  // one per query row
  bool strided;
};

void check_attention(cuda_test::Devices& devices, const AttentionCase& test, DType dtype) {
  INFO(test.name << " " << dtype_name(dtype));
  const int64_t rows = static_cast<int64_t>(test.positions.size());
  Twin q = random_twin(devices, dtype, {rows, test.heads * test.head_dim}, 61);
  Twin k_cache = cache_twin(devices, dtype, test.sequences, test.kv_heads, test.capacity, test.head_dim, test.strided, 62);
  Twin v_cache = cache_twin(devices, dtype, test.sequences, test.kv_heads, test.capacity, test.head_dim, test.strided, 63);
  Twin positions = position_vector(devices, test.positions);
  Twin out = random_twin(devices, dtype, {rows, test.heads * test.head_dim}, 64);
  const float scale = 1.0f / std::sqrt(static_cast<float>(test.head_dim));
  devices.cpu->attention(q.on_cpu(), k_cache.on_cpu(), v_cache.on_cpu(), positions.on_cpu(),
                         static_cast<int>(test.rows_per_sequence), scale, out.on_cpu(), devices.id());
  devices.cuda->attention(q.on_cuda(), k_cache.on_cuda(), v_cache.on_cuda(), positions.on_cuda(),
                          static_cast<int>(test.rows_per_sequence), scale, out.on_cuda(), devices.id());
  expect_close(read_cpu(devices, out), read_cuda(devices, out), rounding_tolerance(dtype), "attention");
}

TEST_CASE("cuda attention matches the CPU backend: decode, long context, prefill, strided caches", "[cuda]") {
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  std::vector<float> prefill_positions;
  for (int sequence = 0; sequence < 2; ++sequence) {
    for (int row = 0; row < 6; ++row) prefill_positions.push_back(static_cast<float>(row));
  }
  const std::vector<AttentionCase> cases = {
      {"decode, GQA 4:1", 2, 1, 8, 2, 64, 40, {5, 39}, false},
      {"decode, first position", 1, 1, 4, 4, 32, 16, {0}, false},
      {"decode, long context (split KV)", 1, 1, 4, 1, 128, 5000, {4999}, false},
      {"prefill, causal, 6 rows per sequence", 2, 6, 4, 4, 32, 8, prefill_positions, false},
      {"decode, head_dim-strided caches", 1, 1, 4, 2, 64, 300, {250}, true},
      {"prefill, head_dim-strided caches", 2, 6, 4, 2, 16, 8, prefill_positions, true},
      {"head_dim 80, 12 query heads per KV head", 1, 1, 12, 1, 80, 70, {69}, false},
      {"16 query heads per KV head, batch 3", 3, 1, 16, 1, 64, 200, {199, 64, 130}, false},
  };
  for (const AttentionCase& test : cases) {
    for (DType dtype : kFloatTypes) check_attention(devices, test, dtype);
  }
}

TEST_CASE("cuda swiglu, add and cast match the CPU backend", "[cuda]") {
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  for (DType dtype : kFloatTypes) {
    for (int64_t width : {1, 37, 4096}) {  // 37: vector body plus a scalar tail
      INFO(dtype_name(dtype) << " width " << width);
      Twin gate = make_twin(devices, dtype, {2, width}, {}, cuda_test::uniform_values(2 * width, 71, -6.0f, 6.0f));
      Twin up = random_twin(devices, dtype, {2, width}, 72);
      Twin out = random_twin(devices, dtype, {2, width}, 73);
      devices.cpu->swiglu(gate.on_cpu(), up.on_cpu(), out.on_cpu(), devices.id());
      devices.cuda->swiglu(gate.on_cuda(), up.on_cuda(), out.on_cuda(), devices.id());
      expect_close(read_cpu(devices, out), read_cuda(devices, out), rounding_tolerance(dtype, 6.0), "swiglu");

      // out aliases a: the residual add.
      devices.cpu->add(gate.on_cpu(), up.on_cpu(), gate.on_cpu(), devices.id());
      devices.cuda->add(gate.on_cuda(), up.on_cuda(), gate.on_cuda(), devices.id());
      expect_close(read_cpu(devices, gate), read_cuda(devices, gate), rounding_tolerance(dtype, 6.0), "add");
    }
  }
  for (DType from : kFloatTypes) {
    for (DType to : {DType::F32, DType::F16, DType::BF16}) {
      INFO("cast " << dtype_name(from) << " -> " << dtype_name(to));
      Twin x = make_twin(devices, from, {3, 45}, {}, cuda_test::uniform_values(135, 74, -300.0f, 300.0f));
      Twin out = random_twin(devices, to, {3, 45}, 75);
      devices.cpu->cast(x.on_cpu(), out.on_cpu(), devices.id());
      devices.cuda->cast(x.on_cuda(), out.on_cuda(), devices.id());
      expect_close(read_cpu(devices, out), read_cuda(devices, out), {0.0, 0.0}, "cast");
    }
  }
  // i32 -> fp32 is exact: checked against the host values themselves.
  const std::vector<float> integers = cuda_test::integer_values(50, 78, -1000000, 1000000);
  Twin ids = make_twin(devices, DType::I32, {50}, {}, integers);
  Twin widened = random_twin(devices, DType::F32, {50}, 79);
  devices.cuda->cast(ids.on_cuda(), widened.on_cuda(), devices.id());
  expect_close(integers, read_cuda(devices, widened), {0.0, 0.0}, "cast i32 -> fp32");
  // A strided (transposed) source takes the generic path.
  Twin x = make_twin(devices, DType::BF16, {8, 5}, {1, 8}, cuda_test::uniform_values(40, 76));
  Twin out = random_twin(devices, DType::F32, {8, 5}, 77);
  devices.cpu->cast(x.on_cpu(), out.on_cpu(), devices.id());
  devices.cuda->cast(x.on_cuda(), out.on_cuda(), devices.id());
  expect_close(read_cpu(devices, out), read_cuda(devices, out), {0.0, 0.0}, "cast strided");
}

TEST_CASE("cuda fused projections: one matmul over q, k, v and another over gate, up, its slices read like the CPU backend",
          "[cuda][fused]") {
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  // Three rows (two sequences: a prefill of 2 and of 1), 4 query heads over 2 KV heads of 16.
  const int64_t rows = 3, hidden = 96, head_dim = 16, q_width = 64, kv_width = 32, qkv_width = q_width + 2 * kv_width;
  const int64_t intermediate = 37;
  for (DType dtype : kFloatTypes) {
    INFO(dtype_name(dtype));
    Twin x = random_twin(devices, dtype, {rows, hidden}, 91);
    Twin qkv_weight = random_twin(devices, dtype, {qkv_width, hidden}, 92);
    Twin qkv = random_twin(devices, dtype, {rows, qkv_width}, 93);
    devices.cpu->matmul(x.on_cpu(), qkv_weight.on_cpu(), qkv.on_cpu(), devices.id());
    devices.cuda->matmul(x.on_cuda(), qkv_weight.on_cuda(), qkv.on_cuda(), devices.id());
    const double magnitude = std::sqrt(static_cast<double>(hidden));
    expect_close(read_cpu(devices, qkv), read_cuda(devices, qkv), rounding_tolerance(dtype, magnitude), "qkv matmul");
    // Later ops must agree given the same input: start both from the CPU's result.
    const std::vector<float> cpu_qkv = read_cpu(devices, qkv);
    Twin same = make_twin(devices, dtype, {rows, qkv_width}, {}, cpu_qkv);
    auto slice = [](Tensor whole, int64_t first, int64_t count) {  // columns, with the row stride
      whole.data = static_cast<char*>(whole.data) + first * static_cast<int64_t>(dtype_size(whole.dtype));
      whole.shape[1] = count;
      return whole;
    };
    const Tensor q_cpu = slice(same.on_cpu(), 0, q_width), k_cpu = slice(same.on_cpu(), q_width, kv_width);
    const Tensor v_cpu = slice(same.on_cpu(), q_width + kv_width, kv_width);
    const Tensor q_cuda = slice(same.on_cuda(), 0, q_width), k_cuda = slice(same.on_cuda(), q_width, kv_width);
    const Tensor v_cuda = slice(same.on_cuda(), q_width + kv_width, kv_width);

    Twin positions = position_vector(devices, {0, 1, 0});
    std::vector<float> frequencies(static_cast<size_t>(head_dim / 2));
    for (int j = 0; j < head_dim / 2; ++j) frequencies[j] = std::pow(10000.0f, -2.0f * j / head_dim);
    Twin inv_freq = make_twin(devices, DType::F32, {head_dim / 2}, {}, frequencies);
    devices.cpu->rope(q_cpu, k_cpu, positions.on_cpu(), inv_freq.on_cpu(), head_dim, devices.id());
    devices.cuda->rope(q_cuda, k_cuda, positions.on_cuda(), inv_freq.on_cuda(), head_dim, devices.id());
    cuda_test::Tolerance rope_tolerance = rounding_tolerance(dtype, magnitude);
    rope_tolerance.absolute += 1e-5;
    expect_close(read_cpu(devices, same), read_cuda(devices, same), rope_tolerance, "rope on slices");

    Twin k_cache = cache_twin(devices, dtype, 2, 2, 4, head_dim, false, 94);
    Twin v_cache = cache_twin(devices, dtype, 2, 2, 4, head_dim, false, 95);
    devices.cpu->kv_store(k_cpu, v_cpu, k_cache.on_cpu(), v_cache.on_cpu(), positions.on_cpu(), 2, devices.id());
    devices.cuda->kv_store(k_cuda, v_cuda, k_cache.on_cuda(), v_cache.on_cuda(), positions.on_cuda(), 2, devices.id());
    expect_close(read_cpu(devices, k_cache), read_cuda(devices, k_cache), rope_tolerance, "kv_store keys from slices");
    expect_close(read_cpu(devices, v_cache), read_cuda(devices, v_cache), {0.0, 0.0}, "kv_store values from slices");

    Twin out = random_twin(devices, dtype, {rows, q_width}, 96);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    devices.cpu->attention(q_cpu, k_cache.on_cpu(), v_cache.on_cpu(), positions.on_cpu(), 2, scale, out.on_cpu(),
                           devices.id());
    devices.cuda->attention(q_cuda, k_cache.on_cuda(), v_cache.on_cuda(), positions.on_cuda(), 2, scale,
                            out.on_cuda(), devices.id());
    cuda_test::Tolerance attention_tolerance = rounding_tolerance(dtype, magnitude);
    attention_tolerance.absolute += 1e-4;  // q and K carry the rope difference above
    expect_close(read_cpu(devices, out), read_cuda(devices, out), attention_tolerance, "attention, q a slice");

    // gate | up: swiglu on the two halves of one [rows, 2*intermediate] output.
    Twin gate_up = make_twin(devices, dtype, {rows, 2 * intermediate}, {},
                             cuda_test::uniform_values(rows * 2 * intermediate, 97, -6.0f, 6.0f));
    Twin activated = random_twin(devices, dtype, {rows, intermediate}, 98);
    devices.cpu->swiglu(slice(gate_up.on_cpu(), 0, intermediate), slice(gate_up.on_cpu(), intermediate, intermediate),
                        activated.on_cpu(), devices.id());
    devices.cuda->swiglu(slice(gate_up.on_cuda(), 0, intermediate),
                         slice(gate_up.on_cuda(), intermediate, intermediate), activated.on_cuda(), devices.id());
    expect_close(read_cpu(devices, activated), read_cuda(devices, activated), rounding_tolerance(dtype, 6.0),
                 "swiglu on the halves");
  }
}

TEST_CASE("cuda copy moves any strided view bit for bit, i32 included", "[cuda]") {
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  for (DType dtype : {DType::F32, DType::BF16, DType::I32}) {
    INFO(dtype_name(dtype));
    // A cache [2, 3, 7, 5] viewed head_dim-strided, copied to a contiguous tensor.
    const std::vector<float> values = dtype == DType::I32 ? cuda_test::integer_values(210, 81, -100000, 100000)
                                                          : cuda_test::uniform_values(210, 81);
    Twin src = make_twin(devices, dtype, {2, 3, 7, 5}, {105, 35, 1, 7}, values);
    Twin out = random_twin(devices, dtype, {2, 3, 7, 5}, 82);
    devices.cpu->copy(src.on_cpu(), out.on_cpu(), devices.id());
    devices.cuda->copy(src.on_cuda(), out.on_cuda(), devices.id());
    expect_close(read_cpu(devices, out), read_cuda(devices, out), {0.0, 0.0}, "copy strided");
    // Dense to dense (the 16-byte word path), an odd size.
    Twin dense_src = make_twin(devices, dtype, {2, 105}, {}, values);
    Twin dense_out = random_twin(devices, dtype, {2, 105}, 83);
    devices.cuda->copy(dense_src.on_cuda(), dense_out.on_cuda(), devices.id());
    expect_close(read_cuda(devices, dense_src), read_cuda(devices, dense_out), {0.0, 0.0}, "copy dense");
  }
}

TEST_CASE("cuda argmax writes the first maximum after each sequence's position", "[cuda]") {
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  for (DType dtype : kFloatTypes) {
    for (int64_t vocab : {1, 1000, 32001, 128256}) {  // 32001 and 128256: the chunked argmax (host/argmax_plan.h)
      INFO(dtype_name(dtype) << " vocab " << vocab);
      std::vector<float> logits = cuda_test::uniform_values(3 * vocab, 91, -4.0f, 4.0f);
      if (vocab > 10) {  // a tie: the maximum appears twice in row 1; the first must win
        logits[static_cast<size_t>(vocab + 7)] = 9.0f;
        logits[static_cast<size_t>(vocab + vocab - 2)] = 9.0f;
      }
      Twin scores = make_twin(devices, dtype, {3, vocab}, {}, logits);
      Twin tokens = token_history(devices, 3, 6, 5, 92);
      // Positions as a strided view (every other entry of a 6-vector).
      Twin positions = make_twin(devices, DType::I32, {3}, {2}, {0, -1, 4, -1, 3, -1});
      devices.cpu->argmax(scores.on_cpu(), tokens.on_cpu(), positions.on_cpu(), devices.id());
      devices.cuda->argmax(scores.on_cuda(), tokens.on_cuda(), positions.on_cuda(), devices.id());
      const std::vector<float> written = read_cuda(devices, tokens);
      expect_close(read_cpu(devices, tokens), written, {0.0, 0.0}, "argmax tokens");
      if (vocab > 10) CHECK(written[1 * 6 + 5] == 7.0f);
    }
  }
}

TEST_CASE("cuda fill_positions and advance_positions", "[cuda]") {
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  Twin positions = make_twin(devices, DType::I32, {7}, {}, std::vector<float>(7, -5.0f));
  for (Backend* backend : {devices.cpu.get(), devices.cuda.get()}) {
    const Tensor view = backend == devices.cpu.get() ? positions.on_cpu() : positions.on_cuda();
    backend->fill_positions(view, 10, 3, devices.id());
    backend->advance_positions(view, devices.id());
    backend->advance_positions(view, devices.id());
  }
  const std::vector<float> on_cuda = read_cuda(devices, positions);
  expect_close(read_cpu(devices, positions), on_cuda, {0.0, 0.0}, "positions");
  CHECK(on_cuda == std::vector<float>{12, 13, 14, 12, 13, 14, 12});
  sync_both(devices);
}

TEST_CASE("cuda ops reject malformed views before launching anything", "[cuda]") {
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  Twin x = random_twin(devices, DType::F32, {2, 8}, 101);
  Twin weight = random_twin(devices, DType::F32, {4, 9}, 102);
  Twin out = random_twin(devices, DType::F32, {2, 4}, 103);
  CHECK_THROWS_AS(devices.cuda->matmul(x.on_cuda(), weight.on_cuda(), out.on_cuda(), devices.id()),
                  std::invalid_argument);
  Twin k_cache = cache_twin(devices, DType::F32, 1, 1, 4, 512, false, 104);  // head_dim 512 > 256
  Twin q = random_twin(devices, DType::F32, {1, 512}, 105);
  Twin positions = position_vector(devices, {0});
  CHECK_THROWS_AS(devices.cuda->attention(q.on_cuda(), k_cache.on_cuda(), k_cache.on_cuda(), positions.on_cuda(), 1,
                                          1.0f, q.on_cuda(), devices.id()),
                  std::invalid_argument);
  // The backend still works afterwards.
  devices.cuda->synchronize();
}

// Decode steps composed of these ops, at a context long enough for the attention to split
// each row's keys across blocks (engine/cuda/host/attention_plan.h): prefill comparisons
// and the engine-reference cases (prompts of a few tokens) never reach that path. A greedy
// choice may part between two correct backends at a near-tie; where the tokens part, both
// generations are cut to that step and the logits the choice was made from are compared.
GenerationResult generate_on(Backend& backend, const testing::GenerationCase& test_case) {
  Engine engine(backend, test_case.config,
                random_weights(backend, test_case.config, test_case.dtype, test_case.weight_seed),
                test_case.bugs);
  return engine.generate(test_case.workload, nullptr);
}

std::optional<size_t> first_parting(const GenerationResult& a, const GenerationResult& b) {
  std::optional<size_t> first;
  for (size_t request = 0; request < a.tokens.size(); ++request) {
    for (size_t step = 0; step < a.tokens[request].size(); ++step) {
      if (a.tokens[request][step] != b.tokens[request][step]) {
        if (!first || step < *first) first = step;
        break;
      }
    }
  }
  return first;
}

TEST_CASE("cuda decode with split attention agrees with the CPU backend", "[cuda]") {
  testing::GenerationCase test_case;
  test_case.workload.requests = 2;
  test_case.workload.batch_size = 2;
  test_case.workload.prompt_tokens = 160;
  test_case.workload.new_tokens = 5;
  // The case must reach the split path on any device of 16 or more multiprocessors.
  const ModelConfig& config = test_case.config;
  const cuda::AttentionShape decode_shape{test_case.workload.batch_size, config.num_attention_heads,
                                          config.num_key_value_heads, config.head_dim,
                                          test_case.workload.context_length()};
  REQUIRE(cuda::plan_attention(decode_shape, 16).splits > 1);

  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  for (DType dtype : {DType::F32, DType::BF16}) {
    test_case.dtype = dtype;
    INFO(dtype_name(dtype));
    GenerationResult cpu = generate_on(*devices.cpu, test_case);
    GenerationResult cuda = generate_on(*devices.cuda, test_case);
    if (const auto parted = first_parting(cpu, cuda); parted && *parted + 1 < cpu.tokens[0].size()) {
      // A near-tie: compare the logits the differing choice came from.
      INFO("tokens part at step " << *parted << ": both cut to it");
      testing::GenerationCase cut = test_case;
      cut.workload.new_tokens = static_cast<int>(*parted) + 1;
      cpu = generate_on(*devices.cpu, cut);
      cuda = generate_on(*devices.cuda, cut);
      const auto again = first_parting(cpu, cuda);
      CHECK((!again || *again == *parted));
    }
    const LogitAgreement agreement =
        compare_logits(cpu.last_logits, cuda.last_logits, test_case.workload.requests, config.vocab_size);
    INFO("worst relative error " << agreement.worst_relative_error << " at row " << agreement.worst_row
                                 << ", column " << agreement.worst_column);
    CHECK_FALSE(agreement.non_finite);
    CHECK(agreement.worst_relative_error <= logit_tolerance(dtype));
  }
}

}  // namespace
}  // namespace decodelab
