// Cost model against hand calculations: each expected value is worked out from the
// formula in the test, never copied from the implementation's output.
#include <catch2/catch.hpp>

#include "profiling/model/cost_model.h"
#include "tests/support/profiling_fixtures.h"

using namespace decodelab;
using decodelab::testing::op;
using decodelab::testing::tensor;

TEST_CASE("matmul: 2·M·N·K FLOPs, bytes = W + x + out, tensor roof only for half inputs", "[cost_model]") {
  SECTION("decode GEMV, fp16, M = 4") {
    const OpCost cost = op_cost(decodelab::testing::matmul(1, 4, 4096, 4096, DType::F16));
    CHECK(cost.flops == 2.0 * 4 * 4096 * 4096);
    CHECK(cost.bytes_read == (4.0 * 4096 + 4096.0 * 4096) * 2);
    CHECK(cost.bytes_written == 4.0 * 4096 * 2);
    CHECK(cost.precision == Precision::Fp16);
    CHECK(cost.intensity() == Approx(2.0 * 4 * 4096 * 4096 / ((4.0 * 4096 * 2 + 4096.0 * 4096) * 2)));
  }
  SECTION("rank-3 activations fold their leading dims into M") {
    OpDesc desc = op(2, "matmul", "up_proj", OpCategory::Matmul,
                     {tensor(DType::BF16, {2, 3, 64}), tensor(DType::BF16, {128, 64})}, {tensor(DType::BF16, {2, 3, 128})});
    const OpCost cost = op_cost(desc);
    CHECK(cost.flops == 2.0 * 6 * 128 * 64);
    CHECK(cost.precision == Precision::Bf16);
  }
  SECTION("an fp32 operand puts the matmul on the fp32 roof, and doubles its weight bytes") {
    const OpCost half = op_cost(decodelab::testing::matmul(3, 1, 256, 256, DType::F16));
    const OpCost full = op_cost(decodelab::testing::matmul(4, 1, 256, 256, DType::F32));
    CHECK(full.precision == Precision::Fp32);
    CHECK(full.bytes() == 2 * half.bytes());
    CHECK(full.flops == half.flops);
    OpDesc mixed = decodelab::testing::matmul(5, 1, 256, 256, DType::F16);
    mixed.inputs[0].dtype = DType::F32;
    CHECK(op_cost(mixed).precision == Precision::Fp32);
  }
  SECTION("edge: a one-element product") {
    const OpCost cost = op_cost(decodelab::testing::matmul(6, 1, 1, 1, DType::F32));
    CHECK(cost.flops == 2.0);
    CHECK(cost.bytes() == 12.0);
  }
}

namespace {

// Attention over a cache [sequences, kv_heads, positions, head_dim].
OpDesc attention(int64_t query_rows, int heads, int kv_heads, int head_dim, int64_t max_positions, DType dtype,
                 int64_t pairs, int64_t key_positions) {
  OpDesc desc = op(7, "attention", "self_attn", OpCategory::Attention,
                   {tensor(dtype, {query_rows, heads * head_dim}), tensor(dtype, {1, kv_heads, max_positions, head_dim}),
                    tensor(dtype, {1, kv_heads, max_positions, head_dim}), tensor(DType::I32, {query_rows})},
                   {tensor(dtype, {query_rows, heads * head_dim})});
  desc.attention = AttentionExtent{pairs, key_positions, heads, kv_heads, head_dim};
  return desc;
}

}  // namespace

TEST_CASE("attention: the seed's decode argument, 4nd FLOPs over 8nd bytes in fp32 = 0.5 FLOP/B", "[cost_model]") {
  // One query row attends to n cached positions; d = heads · head_dim; no GQA, fp32.
  const int heads = 32, head_dim = 128;
  const double d = heads * head_dim;
  for (int64_t n : {1, 17, 4096}) {
    const OpCost cost = op_cost(attention(1, heads, heads, head_dim, 8192, DType::F32, n, n));
    CHECK(cost.flops == 4.0 * n * d);
    CHECK(attention_kv_bytes(AttentionExtent{n, n, heads, heads, head_dim}, DType::F32) == 8.0 * n * d);
    // q and out add 2·d·4 bytes: intensity = 4nd / (8nd + 8d) = 0.5 · n / (n + 1)
    CHECK(cost.bytes() == 8.0 * n * d + 8.0 * d);
    CHECK(cost.intensity() == Approx(0.5 * n / (n + 1.0)));
  }
  CHECK(op_cost(attention(1, heads, heads, head_dim, 8192, DType::F32, 4096, 4096)).intensity() ==
        Approx(0.5).epsilon(1e-3));
}

TEST_CASE("attention: bytes follow positions read, not the cache's capacity, GQA shares K and V", "[cost_model]") {
  const OpCost small_cache = op_cost(attention(1, 32, 8, 64, 256, DType::F16, 100, 100));
  const OpCost large_cache = op_cost(attention(1, 32, 8, 64, 65536, DType::F16, 100, 100));
  CHECK(small_cache.bytes() == large_cache.bytes());
  // K+V: 2 · 100 positions · 8 kv heads · 64 · 2 bytes; q and out: 32·64·2 each
  CHECK(small_cache.bytes() == 2.0 * 100 * 8 * 64 * 2 + 2.0 * 32 * 64 * 2);
  CHECK(small_cache.flops == 4.0 * 64 * 32 * 100);
  CHECK(small_cache.precision == Precision::Fp32);  // not a tensor-core op in this engine

  // causal prefill of L rows: L(L+1)/2 query-key pairs, L positions read
  const int64_t length = 16;
  const OpCost prefill = op_cost(attention(length, 4, 4, 8, 64, DType::F32, length * (length + 1) / 2, length));
  CHECK(prefill.flops == 4.0 * 8 * 4 * (length * (length + 1) / 2));
}

TEST_CASE("norms, elementwise, rope, swiglu: by their reads and writes", "[cost_model]") {
  const int64_t rows = 3, hidden = 512;
  SECTION("rmsnorm reads x and the weight once, writes out") {
    const OpCost cost = op_cost(op(1, "rmsnorm", "input_layernorm", OpCategory::Norm,
                                   {tensor(DType::F16, {rows, hidden}), tensor(DType::F16, {hidden})},
                                   {tensor(DType::F16, {rows, hidden})}));
    CHECK(cost.bytes_read == rows * hidden * 2.0 + hidden * 2.0);
    CHECK(cost.bytes_written == rows * hidden * 2.0);
    CHECK(cost.flops == 4.0 * rows * hidden);
  }
  SECTION("an fp32 norm in a half model moves twice the bytes") {
    const OpCost cost = op_cost(op(2, "rmsnorm", "norm", OpCategory::Norm,
                                   {tensor(DType::F32, {rows, hidden}), tensor(DType::F32, {hidden})},
                                   {tensor(DType::F32, {rows, hidden})}));
    CHECK(cost.bytes() == 2.0 * (rows * hidden * 2.0 * 2 + hidden * 2.0));
  }
  SECTION("add: 1 FLOP per element, two reads and one write") {
    const OpCost cost = op_cost(decodelab::testing::elementwise_add(3, 1000, DType::BF16));
    CHECK(cost.flops == 1000.0);
    CHECK(cost.bytes() == 3 * 1000.0 * 2);
  }
  SECTION("swiglu: 4 FLOPs per output element") {
    const OpCost cost = op_cost(op(4, "swiglu", "act_fn", OpCategory::Activation,
                                   {tensor(DType::F16, {rows, 1376}), tensor(DType::F16, {rows, 1376})},
                                   {tensor(DType::F16, {rows, 1376})}));
    CHECK(cost.flops == 4.0 * rows * 1376);
    CHECK(cost.bytes() == 3.0 * rows * 1376 * 2);
  }
  SECTION("rope rotates q and k in place: read and written once each") {
    const OpCost cost = op_cost(op(5, "rope", "rotary_emb", OpCategory::Rope,
                                   {tensor(DType::F16, {rows, 256}), tensor(DType::F16, {rows, 64}),
                                    tensor(DType::I32, {rows}), tensor(DType::F32, {16})},
                                   {tensor(DType::F16, {rows, 256}), tensor(DType::F16, {rows, 64})}));
    CHECK(cost.flops == 3.0 * rows * (256 + 64));
    CHECK(cost.bytes_read == rows * 320 * 2.0 + rows * 4.0 + 16 * 4.0);
    CHECK(cost.bytes_written == rows * 320 * 2.0);
  }
}

TEST_CASE("data movement: kv_store, embedding, copy, cast, argmax, memcpy, markers", "[cost_model]") {
  SECTION("kv_store writes only the new rows, not the cache") {
    const OpCost cost = op_cost(op(1, "kv_store", "kv_cache", OpCategory::Copy,
                                   {tensor(DType::F16, {2, 256}), tensor(DType::F16, {2, 256}), tensor(DType::I32, {2})},
                                   {tensor(DType::F16, {2, 4, 4096, 64}), tensor(DType::F16, {2, 4, 4096, 64})}));
    CHECK(cost.bytes_read == 2 * 2 * 256 * 2.0 + 2 * 4.0);
    CHECK(cost.bytes_written == 2 * 2 * 256 * 2.0);
    CHECK(cost.flops == 0.0);
  }
  SECTION("embedding gathers one row per token, not the table") {
    const OpCost cost = op_cost(op(2, "embedding", "embed_tokens", OpCategory::Embedding,
                                   {tensor(DType::F16, {32000, 512}), tensor(DType::I32, {4, 2048}), tensor(DType::I32, {4})},
                                   {tensor(DType::F16, {4, 512})}));
    CHECK(cost.bytes_read == 4 * 512 * 2.0 + 4 * 4.0 + 4 * 4.0);
    CHECK(cost.bytes_written == 4 * 512 * 2.0);
  }
  SECTION("a transposing copy costs its logical size, whatever the source strides") {
    TensorInfo transposed = tensor(DType::F32, {64, 128});
    transposed.strides = {1, 64, 0, 0};
    const OpCost cost = op_cost(op(3, "copy", "contiguous", OpCategory::Copy, {transposed}, {tensor(DType::F32, {64, 128})}));
    CHECK(cost.bytes() == 2 * 64 * 128 * 4.0);
    CHECK(cost.flops == 0.0);
  }
  SECTION("cast fp16 -> fp32 reads 2 bytes and writes 4 per element") {
    const OpCost cost =
        op_cost(op(4, "cast", "upcast", OpCategory::Cast, {tensor(DType::F16, {1000})}, {tensor(DType::F32, {1000})}));
    CHECK(cost.bytes_read == 2000.0);
    CHECK(cost.bytes_written == 4000.0);
  }
  SECTION("argmax reads every logit and writes one id per row") {
    const OpCost cost = op_cost(op(5, "argmax", "greedy", OpCategory::Sampling,
                                   {tensor(DType::F32, {3, 32000}), tensor(DType::I32, {3})}, {tensor(DType::I32, {3, 2048})}));
    CHECK(cost.flops == 3 * 32000.0);
    CHECK(cost.bytes_read == 3 * 32000 * 4.0 + 3 * 4.0);
    CHECK(cost.bytes_written == 3 * 4.0);
  }
  SECTION("device-to-host copy reads its bytes; a marker costs nothing") {
    const OpCost read = op_cost(op(6, "memcpy_dtoh", "", OpCategory::Memcpy, {tensor(DType::I32, {8})}, {}));
    CHECK(read.bytes_read == 32.0);
    CHECK(read.bytes_written == 0.0);
    const OpCost nothing = op_cost(decodelab::testing::marker(7));
    CHECK(nothing.flops == 0.0);
    CHECK(nothing.bytes() == 0.0);
    CHECK(nothing.intensity() == 0.0);
  }
  SECTION("an unknown op falls back to its category's rule") {
    const OpCost cost = op_cost(op(8, "fused_bias_gelu", "", OpCategory::Elementwise,
                                   {tensor(DType::F32, {10})}, {tensor(DType::F32, {10})}));
    CHECK(cost.flops == 10.0);
    CHECK(cost.bytes() == 80.0);
  }
}
