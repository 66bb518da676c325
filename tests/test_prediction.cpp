// The prediction model: hand-built op streams priced and held to the arithmetic (one
// compute-bound matmul step, one step bound by a device-to-host read), the cache's reuse
// distance, the dry-run recording issuing exactly the ops a real run issues, and what the
// model must predict for the bugs on a datasheet GPU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/cpu/fan_out.h"
#include "engine/events/op_stream.h"
#include "lab/predict/predict.h"
#include "profiling/model/cache_residency.h"
#include "profiling/model/efficiency.h"
#include "profiling/model/prediction.h"
#include "tests/support/engine_fixtures.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

TensorInfo matrix(DType dtype, int64_t rows, int64_t columns) {
  TensorInfo info;
  info.dtype = dtype;
  info.rank = 2;
  info.shape = {rows, columns, 0, 0};
  info.strides = {columns, 1, 0, 0};
  return info;
}

// A hand-written stream shaped like one group of the decode loop: group start, a prefill
// that is only its first-token marker, then one decode step of `step_ops`, its read-back
// calls (placed after the op they follow), the step-end marker, and the final sync.
struct StreamBuilder {
  OpStream stream;
  OpId next_id = 1;

  void op(OpDesc desc, StreamPlace place) {
    desc.id = next_id++;
    stream.ops.push_back({std::move(desc), place, {}});
  }
  void marker(StreamPlace place) { op(OpDesc{0, "marker", "", OpCategory::Marker, {}, {}, {}}, place); }
  void call(HostCallKind kind, StreamPlace place) {
    stream.calls.push_back({HostCall{kind, "", 0, 0, 4}, place, stream.ops.size()});
  }
};

StreamPlace group_place() { return StreamPlace{0, -1, false, -1}; }
StreamPlace prefill_place() { return StreamPlace{0, -1, true, -1}; }
StreamPlace step_place() { return StreamPlace{0, 1, false, -1}; }

PredictionInputs test_inputs() {
  PredictionInputs inputs;
  inputs.roofs.bandwidth = 100e9;   // 100 GB/s
  inputs.roofs.fp32_flops = 1e12;   // 1 TFLOP/s for every precision
  inputs.costs.host_launch = 1e-6;
  inputs.costs.op_overhead = 2e-6;
  inputs.costs.sync_round_trip = 10e-6;  // return latency 10 - 1 - 2 = 7 µs
  return inputs;
}

// The predicted time of a decode step that is one op, less the first token's marker and the
// op's own per-op overhead (2 µs each).
double one_op_step_seconds(OpDesc op, const PredictionInputs& inputs) {
  StreamBuilder builder;
  builder.marker(group_place());
  builder.marker(prefill_place());
  builder.op(std::move(op), step_place());
  builder.marker(step_place());
  builder.call(HostCallKind::Synchronize, group_place());
  const Prediction prediction = predict_op_stream(builder.stream, inputs);
  REQUIRE(prediction.timing.step_ms.size() == 1);
  return prediction.timing.step_ms[0] * 1e-3 - 2 * 2e-6;
}

// The same for one matmul x[rows, depth] · W[columns, depth]ᵀ.
double one_matmul_step_seconds(const char* label, DType dtype, int64_t rows, int64_t columns, int64_t depth,
                               const PredictionInputs& inputs) {
  return one_op_step_seconds(OpDesc{0, "matmul", label, OpCategory::Matmul,
                                    {matrix(dtype, rows, depth), matrix(dtype, columns, depth)},
                                    {matrix(dtype, rows, columns)}, {}},
                             inputs);
}

}  // namespace

TEST_CASE("a compute-bound matmul step is priced by the arithmetic", "[prediction]") {
  // prepare: x[512, 1024] · W[1024, 1024]ᵀ in fp16: 2·512·1024·1024 FLOPs, 4 MiB moved
  StreamBuilder builder;
  builder.marker(group_place());
  builder.marker(prefill_place());
  builder.op(OpDesc{0, "matmul", "q_proj", OpCategory::Matmul,
                    {matrix(DType::F16, 512, 1024), matrix(DType::F16, 1024, 1024)}, {matrix(DType::F16, 512, 1024)},
                    {}},
             step_place());
  builder.op(OpDesc{0, "argmax", "greedy", OpCategory::Sampling, {matrix(DType::F16, 1, 8)}, {}, {}}, step_place());
  builder.marker(step_place());
  builder.call(HostCallKind::Synchronize, group_place());
  const PredictionInputs inputs = test_inputs();

  // run
  const Prediction prediction = predict_op_stream(builder.stream, inputs);

  // verify, µs: every op costs 1 µs of host launch and 2 µs of device overhead.
  const double flops = 2.0 * 512 * 1024 * 1024;
  const double matmul_roof = flops / 1e12;                    // 1073.74 µs: compute-bound
  const double matmul_bytes = 2.0 * (512 * 1024 + 1024 * 1024 + 512 * 1024);
  CHECK(matmul_bytes / 100e9 < matmul_roof);                   // 41.9 µs at the bandwidth roof
  const double argmax_roof = (16.0 + 4.0) / 100e9;  // reads 16 B of logits, writes a 4-byte token: memory-bound
  // Device: group start at 1 µs (launched at 1), busy 2; first token starts at 3, busy 2;
  // the matmul starts at 5; argmax and the step-end marker follow back to back.
  const double first_token_start = 3e-6;
  const double step_end_start = first_token_start + 2e-6 + (matmul_roof + 2e-6) + (argmax_roof + 2e-6);
  CHECK(prediction.timing.ttft_ms == Approx(2e-3));
  REQUIRE(prediction.timing.step_ms.size() == 1);
  CHECK(prediction.timing.step_ms[0] == Approx((step_end_start - first_token_start) * 1e3));
  CHECK(prediction.decode_step_busy_ms() == Approx(prediction.decode_step_wall_ms()));  // never idle
  // The host returns from the final sync 7 µs after the device finished the marker.
  CHECK(prediction.timing.total_ms == Approx((step_end_start + 2e-6 + 7e-6) * 1e3));
  CHECK(prediction.timing.decode_tokens == 1);
  const PhasePrediction* decode = prediction.phase(Phase::Decode);
  REQUIRE(decode);
  CHECK(decode->bound == PredictedBound::Compute);
  CHECK(decode->split.compute == Approx(matmul_roof));
  CHECK(decode->split.overhead == Approx(3 * 2e-6));  // first token's marker, matmul, argmax
  CHECK(decode->split.idle() == Approx(0).margin(1e-15));
}

TEST_CASE("one rule prices every op: its time at the roofs over the table's efficiency", "[prediction]") {
  // A synthetic calibration: 100 GB/s, 1 TFLOP/s, and an efficiency table with fp16 matmuls
  // of one row at K ~ 2^10 reaching half the roofs and of 65+ rows at a quarter.
  auto step_time = [](int64_t rows, int64_t depth, const PredictionInputs& inputs) {
    return one_matmul_step_seconds("o_proj", DType::F16, rows, 4096, depth, inputs);
  };
  auto bytes = [](int64_t rows, int64_t depth) { return 2.0 * (rows * depth + 4096 * depth + rows * 4096); };
  auto flops = [](int64_t rows, int64_t depth) { return 2.0 * rows * 4096 * depth; };
  PredictionInputs inputs = test_inputs();
  // No table: the roofs themselves (η = 1).
  CHECK(step_time(1, 1024, inputs) == Approx(bytes(1, 1024) / 100e9));
  inputs.roofs.efficiency = {{"matmul", Precision::Fp16, 1, 10, 0.5, 0.5, "test"},
                             {"matmul", Precision::Fp16, 65, 10, 0.25, 0.25, "test"}};
  // A memory-bound op: one row streams its weight, bytes / (bandwidth · η_bytes).
  REQUIRE(flops(1, 1024) / 1e12 < bytes(1, 1024) / 100e9);
  CHECK(step_time(1, 1024, inputs) == Approx(bytes(1, 1024) / (100e9 * 0.5)));
  // A compute-bound op: 512 rows, FLOPs / (peak · η_flops).
  REQUIRE(flops(512, 1024) / 1e12 > bytes(512, 1024) / 100e9);
  CHECK(step_time(512, 1024, inputs) == Approx(flops(512, 1024) / (1e12 * 0.25)));
  // The two terms are separate efficiencies: a device file may state them apart.
  inputs.roofs.efficiency = {{"matmul", Precision::Fp16, 1, 10, 0.9, 0.2, "test"}};
  CHECK(step_time(1, 1024, inputs) == Approx(bytes(1, 1024) / (100e9 * 0.2)));
  // A category without entries takes the stated default.
  inputs.roofs.efficiency.clear();
  inputs.roofs.default_bytes_efficiency = 0.8;
  inputs.roofs.efficiency_source = "a stated default (test)";
  CHECK(step_time(1, 1024, inputs) == Approx(bytes(1, 1024) / (100e9 * 0.8)));
}

TEST_CASE("a bucket the table lacks falls back to the nearest one, and the prediction names it", "[prediction]") {
  PredictionInputs inputs = test_inputs();
  inputs.roofs.efficiency = {{"matmul", Precision::Fp16, 1, 7, 0.2, 0.2, "test"},
                             {"matmul", Precision::Fp16, 1, 12, 0.6, 0.6, "test"},
                             {"matmul", Precision::Fp16, 9, 10, 0.4, 0.4, "test"}};
  // K = 1024 at one row: no (rows 1, 2^10) entry. The rows class comes first (rows 1 over
  // rows 9-64 at the very depth), then the nearest depth: 2^12 (2 away) over 2^7 (3 away).
  const EfficiencyLookup found = look_up_efficiency(inputs.roofs, OpCategory::Matmul, Precision::Fp16, {1, 10});
  REQUIRE(found.entry);
  CHECK_FALSE(found.exact);
  CHECK(found.entry->size_log2 == 12);
  CHECK(found.bytes == 0.6);
  CHECK(found.said == "nearest timed bucket rows 1, K ~ 2^12 for rows 1, K ~ 2^10");
  // A tie goes to the smaller size: 2^9 is as far from 2^7 as from 2^11.
  inputs.roofs.efficiency[1].size_log2 = 11;
  CHECK(look_up_efficiency(inputs.roofs, OpCategory::Matmul, Precision::Fp16, {1, 9}).entry->size_log2 == 7);
  inputs.roofs.efficiency[1].size_log2 = 12;
  // An exact bucket is used as is.
  CHECK(look_up_efficiency(inputs.roofs, OpCategory::Matmul, Precision::Fp16, {9, 10}).exact);
  // Another precision has none: the roofs, said so.
  const EfficiencyLookup none = look_up_efficiency(inputs.roofs, OpCategory::Matmul, Precision::Bf16, {1, 10});
  CHECK_FALSE(none.entry);
  CHECK(none.bytes == 1);
  CHECK(none.said == "no efficiency entry for matmul: the roofs");  // also the note, once per category

  // In a prediction: the op is priced with the fallback's η, and the fallback is in the notes.
  StreamBuilder builder;
  builder.marker(group_place());
  builder.marker(prefill_place());
  builder.op(OpDesc{0, "matmul", "o_proj", OpCategory::Matmul, {matrix(DType::F16, 1, 1024), matrix(DType::F16, 4096, 1024)},
                    {matrix(DType::F16, 1, 4096)}, {}},
             step_place());
  builder.marker(step_place());
  const Prediction prediction = predict_op_stream(builder.stream, inputs);
  const double bytes = 2.0 * (1024 + 4096 * 1024 + 4096);
  CHECK(prediction.timing.step_ms[0] * 1e-3 - 2 * 2e-6 == Approx(bytes / (100e9 * 0.6)));
  REQUIRE(prediction.efficiency_notes.size() == 1);
  CHECK(prediction.efficiency_notes[0] == "matmul fp16 rows 1, K ~ 2^10: nearest timed bucket rows 1, K ~ 2^12 for rows 1, K ~ 2^10");
  CHECK(to_json(prediction)["efficiency_fallbacks"].size() == 1);
}

TEST_CASE("shape buckets follow a rule: rows classes and powers of two", "[prediction]") {
  CHECK(rows_class(1) == 1);
  CHECK(rows_class(2) == 2);
  CHECK(rows_class(8) == 2);
  CHECK(rows_class(9) == 9);
  CHECK(rows_class(64) == 9);
  CHECK(rows_class(65) == 65);
  CHECK(rows_class_label(9) == "9-64");
  CHECK(size_class(1024) == 10);
  CHECK(size_class(1400) == 10);   // log2 1400 = 10.45
  CHECK(size_class(1500) == 11);   // 10.55
  CHECK(size_class(2816) == 11);   // lab-small's MLP: 11.46
  CHECK(size_class(352) == 8);
  const OpDesc matmul{0, "matmul", "", OpCategory::Matmul, {matrix(DType::F16, 24, 2816), matrix(DType::F16, 1024, 2816)},
                      {matrix(DType::F16, 24, 1024)}, {}};
  CHECK(shape_bucket(matmul) == ShapeBucket{9, 11});
}

namespace {

// The same for one attention op: `sequences` × `rows` query rows of 16 heads × 64 over K and V
// caches [sequences, 16, context, 64] of `dtype`, the queries at the cache's last positions
// (a decode step when rows = 1).
double one_attention_step_seconds(DType dtype, int64_t sequences, int64_t context, int64_t rows,
                                  const PredictionInputs& inputs) {
  TensorInfo cache;
  cache.dtype = dtype;
  cache.rank = 4;
  cache.shape = {sequences, 16, context, 64};
  cache.strides = {16 * context * 64, context * 64, 64, 1};
  AttentionExtent extent;
  const int64_t first = context - rows;
  extent.query_key_pairs = sequences * (rows * first + rows * (rows + 1) / 2);
  extent.key_positions_read = sequences * context;
  extent.query_heads = extent.kv_heads = 16;
  extent.head_dim = 64;
  return one_op_step_seconds(OpDesc{0, "attention", "self_attn", OpCategory::Attention,
                                    {matrix(dtype, sequences * rows, 1024), cache, cache,
                                     matrix(DType::I32, 1, sequences * rows)},
                                    {matrix(dtype, sequences * rows, 1024)}, extent},
                             inputs);
}

}  // namespace

TEST_CASE("attention is priced by its bucket: query rows per sequence and the keys each reads", "[prediction]") {
  // 4 sequences, fp16: per context position 4 × 2 (K, V) × 16 heads × 64 × 2 bytes = 16 KiB,
  // plus the queries and outputs (4 × 1024 × 2 bytes each). 4·64·16 FLOPs per query-key pair
  // per sequence: 1 FLOP per cache byte, far below the 1 TFLOP/s roof's ridge (10 FLOP/B).
  auto bytes = [](int64_t context) { return 4.0 * 2 * 16 * 64 * 2 * context + 2 * 4.0 * 1024 * 2; };
  auto step_time = [](int64_t context, const PredictionInputs& inputs) {
    return one_attention_step_seconds(DType::F16, 4, context, 1, inputs);
  };
  PredictionInputs inputs = test_inputs();
  CHECK(step_time(1024, inputs) == Approx(bytes(1024) / 100e9));  // no table: the bandwidth roof
  inputs.roofs.efficiency = {{"attention", Precision::Fp16, 1, 7, 0.2, 0.2, "test"},
                             {"attention", Precision::Fp16, 1, 11, 0.8, 0.8, "test"}};
  CHECK(step_time(128, inputs) == Approx(bytes(128) / (100e9 * 0.2)));
  CHECK(step_time(2048, inputs) == Approx(bytes(2048) / (100e9 * 0.8)));
  CHECK(step_time(256, inputs) == Approx(bytes(256) / (100e9 * 0.2)));    // 2^8: nearest 2^7
  CHECK(step_time(1024, inputs) == Approx(bytes(1024) / (100e9 * 0.8)));  // 2^10: nearest 2^11
  // The cache's dtype picks the row: bf16 has none, so the roofs.
  CHECK(one_attention_step_seconds(DType::BF16, 4, 1024, 1, inputs) == Approx(bytes(1024) / 100e9));
}

TEST_CASE("each parallel region a CPU kernel opens costs the measured region time", "[prediction]") {
  // x[rows, 1024] · W[N, 1024]ᵀ in fp32 at 1 TFLOP/s, 100 GB/s: the kernel widens x's rows in
  // parallel above 65536 elements and fans the product out above 65536 multiply-adds.
  PredictionInputs inputs = test_inputs();
  const auto step = [&](int64_t rows, int64_t columns) {
    return one_matmul_step_seconds("down_proj", DType::F32, rows, columns, 1024, inputs);
  };
  const auto roofline = [](int64_t rows, int64_t columns) {
    const double flops = 2.0 * rows * columns * 1024;
    const double bytes = 4.0 * (rows * 1024 + columns * 1024 + rows * columns);
    return std::max(flops / 1e12, bytes / 100e9);
  };
  // Without a measured region cost (a GPU's device file) nothing is added.
  CHECK(step(1, 32) == Approx(roofline(1, 32)));
  CHECK(step(128, 4096) == Approx(roofline(128, 4096)));
  inputs.costs.parallel_region = 3e-6;
  CHECK(step(1, 32) == Approx(roofline(1, 32)));                // 32768 multiply-adds: one thread
  CHECK(step(1, 4096) == Approx(roofline(1, 4096) + 3e-6));     // the product fans out
  CHECK(step(128, 4096) == Approx(roofline(128, 4096) + 6e-6));  // and the widening too (131072 elements)
  // Every op pays its regions, attention too (the table's η is measured net of them):
  // 4 sequences at 128 positions fan out, in decode and in a prefill.
  const double decode_with = one_attention_step_seconds(DType::F16, 4, 128, 1, inputs);
  const double prefill_with = one_attention_step_seconds(DType::F16, 4, 128, 16, inputs);
  inputs.costs.parallel_region = 0;
  CHECK(decode_with == Approx(one_attention_step_seconds(DType::F16, 4, 128, 1, inputs) + 3e-6));
  CHECK(prefill_with == Approx(one_attention_step_seconds(DType::F16, 4, 128, 16, inputs) + 3e-6));
}

TEST_CASE("a step bound by device-to-host reads: the host waits, the device idles", "[prediction]") {
  // prepare: 20 µs of emulated host overhead per op; a round trip of 50 µs; in the step
  // two tiny adds, one 4-byte read after the first, and the step-end marker.
  PredictionInputs inputs = test_inputs();
  inputs.host_overhead = 20e-6;
  inputs.costs.sync_round_trip = 50e-6;  // return latency 50 - 1 - 2 = 47 µs
  const TensorInfo row = matrix(DType::F32, 1, 25);  // 100 bytes: 1 ns at 100 GB/s
  StreamBuilder builder;
  builder.marker(group_place());
  builder.marker(prefill_place());
  builder.op(OpDesc{0, "add", "residual", OpCategory::Elementwise, {row, row}, {row}, {}}, step_place());
  builder.op(OpDesc{0, "memcpy_dtoh", "item", OpCategory::Memcpy, {matrix(DType::I32, 1, 1)}, {}, {}}, step_place());
  builder.call(HostCallKind::DeviceToHost, step_place());
  builder.op(OpDesc{0, "add", "residual", OpCategory::Elementwise, {row, row}, {row}, {}}, step_place());
  builder.marker(step_place());
  const double add_roof = 300.0 / 100e9, read_roof = 4.0 / 100e9;

  // run
  const Prediction prediction = predict_op_stream(builder.stream, inputs);

  // verify: the host enqueues an op every 21 µs; the device keeps up until the read.
  // group start: host 21, device 21..23; first token: host 42, device 42..44;
  // add: host 63, device 63..65+; read: host 84, device 84..86+; the host returns at
  // 86 + read + 47 = 133; add: host 154, device 154; step end: host 175, device 175.
  const double read_end = 84e-6 + read_roof + 2e-6;
  const double host_back = read_end + 47e-6;
  const double second_add = host_back + 21e-6;
  const double step_end = second_add + 21e-6;
  REQUIRE(prediction.timing.step_ms.size() == 1);
  CHECK(prediction.timing.step_ms[0] == Approx((step_end - 42e-6) * 1e3));
  const PhasePrediction* decode = prediction.phase(Phase::Decode);
  REQUIRE(decode);
  CHECK(decode->device_to_host_reads == 1);
  // Idle after the read: from its end until the host had relaunched the next add.
  CHECK(decode->split.host_reads == Approx(second_add - read_end));
  // Idle waiting for the host to dispatch: before the first add, the read, and the marker.
  const double busy = 4 * 2e-6 + 2 * add_roof + read_roof;  // first-token marker, add, read, add
  CHECK(decode->split.busy() == Approx(busy));
  CHECK(decode->split.host_dispatch == Approx((step_end - 42e-6) - busy - decode->split.host_reads));
  CHECK(decode->bound == PredictedBound::HostReads);
  CHECK(prediction.decode_step_busy_ms() == Approx(busy * 1e3));
}

TEST_CASE("attention over a resident KV cache reads it at the cache's bandwidth times its efficiency", "[prediction]") {
  // The non_contiguous bug's shape: a `.contiguous()` copy of a layer's K and V (fp16, 4
  // sequences × 16 heads × 32 positions × 64: 256 KiB each), then attention over the copy,
  // which the cache (4 MB at 200 GB/s) still holds. The table says the kernel reaches 10% of
  // the roofs at this bucket: the same η holds against the cache's bandwidth (one rule).
  constexpr int64_t kv_bytes = 4 * 16 * 32 * 64 * 2;
  StreamBuilder builder;
  builder.marker(group_place());
  builder.marker(prefill_place());
  const TensorInfo flat = matrix(DType::F16, 1, 2 * kv_bytes / 2);
  builder.op(OpDesc{0, "copy", "contiguous", OpCategory::Copy, {flat}, {flat}, {}}, step_place());
  builder.stream.ops.back().operands = {OperandAccess{0, 2 * kv_bytes, false}, OperandAccess{10000000, 2 * kv_bytes, true}};
  TensorInfo cache;
  cache.dtype = DType::F16;
  cache.rank = 4;
  cache.shape = {4, 16, 32, 64};
  cache.strides = {16 * 32 * 64, 32 * 64, 64, 1};
  AttentionExtent extent;
  extent.query_key_pairs = extent.key_positions_read = 4 * 32;
  extent.query_heads = extent.kv_heads = 16;
  extent.head_dim = 64;
  builder.op(OpDesc{0, "attention", "self_attn", OpCategory::Attention,
                    {matrix(DType::F16, 4, 1024), cache, cache, matrix(DType::I32, 1, 4)}, {matrix(DType::F16, 4, 1024)}, extent},
             step_place());
  builder.stream.ops.back().operands = {OperandAccess{10000000, kv_bytes, false},
                                        OperandAccess{10000000 + kv_bytes, kv_bytes, false}};
  builder.marker(step_place());
  builder.call(HostCallKind::Synchronize, group_place());
  PredictionInputs inputs = test_inputs();
  inputs.cache = CacheLevel{4e6, 200e9, "test"};
  inputs.roofs.efficiency = {{"attention", Precision::Fp16, 1, 5, 0.1, 0.1, "test"}};

  const Prediction prediction = predict_op_stream(builder.stream, inputs);
  const PhasePrediction* decode = prediction.phase(Phase::Decode);
  REQUIRE(decode);
  // The copy: first use of both buffers, read and written at the DRAM roof.
  CHECK(decode->split.memory == Approx(4.0 * kv_bytes / 100e9));
  // The attention: its declared bytes (K, V, queries, outputs; every operand it touches is
  // resident) at 10% of the cache's 200 GB/s.
  const double attention_bytes = 2.0 * kv_bytes + 2 * 4.0 * 1024 * 2;
  CHECK(decode->split.cache == Approx(attention_bytes / (200e9 * 0.1)));
}

TEST_CASE("a write to a line evicted from the cache reads it from DRAM first", "[prediction]") {
  // A 4 MB cache at 200 GB/s beside the 100 GB/s DRAM roof, and copies of 1 MB from one source
  // to one destination: the first is both buffers' first use (nothing known about them: 1 MB
  // read, 1 MB written at the DRAM roof); a 4 MB copy elsewhere then evicts them; the second
  // finds both evicted — it reads 1 MB, reads the destination's 1 MB before writing it
  // (write-allocate) and writes 1 MB, 3 MB at the DRAM roof; the third finds both resident,
  // 2 MB at the cache's bandwidth and nothing allocated.
  StreamBuilder builder;
  builder.marker(group_place());
  builder.marker(prefill_place());
  auto copy = [&](uintptr_t from, uintptr_t to, int64_t bytes) {
    const TensorInfo tensor = matrix(DType::F32, 1, bytes / 4);
    builder.op(OpDesc{0, "copy", "contiguous", OpCategory::Copy, {tensor}, {tensor}, {}}, step_place());
    builder.stream.ops.back().operands = {OperandAccess{from, bytes, false}, OperandAccess{to, bytes, true}};
  };
  copy(0, 10000000, 1000000);
  copy(20000000, 30000000, 4000000);
  copy(0, 10000000, 1000000);
  copy(0, 10000000, 1000000);
  builder.marker(step_place());
  builder.call(HostCallKind::Synchronize, group_place());
  PredictionInputs inputs = test_inputs();
  inputs.cache = CacheLevel{4e6, 200e9, "test"};

  const Prediction prediction = predict_op_stream(builder.stream, inputs);

  const PhasePrediction* decode = prediction.phase(Phase::Decode);
  REQUIRE(decode);
  CHECK(decode->split.memory == Approx((2e6 + 8e6 + 3e6) / 100e9));
  CHECK(decode->split.cache == Approx(2e6 / 200e9));
  // Without a cache model nothing is known resident or evicted: every copy at the DRAM roof.
  inputs.cache.reset();
  const Prediction without_cache = predict_op_stream(builder.stream, inputs);
  const PhasePrediction* uncached = without_cache.phase(Phase::Decode);
  REQUIRE(uncached);
  CHECK(uncached->split.memory == Approx((2e6 + 8e6 + 2e6 + 2e6) / 100e9));
}

TEST_CASE("cache residency follows reuse distance", "[prediction]") {
  CacheResidency cache(1000);
  CHECK(cache.touch(0, 400) == 0);       // cold
  CHECK(cache.touch(1000, 400) == 0);
  CHECK(cache.touch(0, 400) == 400);     // 400 bytes touched since, 400 + 400 fit
  CHECK(cache.touch(2000, 500) == 0);
  // Since 1000's last use: 0 (400) and 2000 (500) — 900 above it, room for 100 of its 400 bytes.
  CHECK(cache.touch(1000, 400) == Approx(100));
  CHECK(cache.touch(3000, 2000) == 0);
  CHECK(cache.touch(0, 400) == 0);       // evicted by the 2000-byte range
  // `seen`: the bytes touched before, resident or not.
  double seen = -1;
  CHECK(cache.touch(1000, 400, &seen) == 0);
  CHECK(seen == 400);
  CHECK(cache.touch(9000, 100, &seen) == 0);
  CHECK(seen == 0);                      // never touched: a first use
}

TEST_CASE("beyond the capacity, the measured hit curve says which share of a reuse is resident", "[prediction]") {
  // All within 1000 bytes; half at 2000, none at 4000, straight lines between.
  const CacheLevel level{1000, 1e9, "test", {{2000, 0.5}, {4000, 0.0}}};
  CHECK(level.resident_bytes(0, 600) == Approx(600));
  CHECK(level.resident_bytes(800, 1200) == Approx(200 + (1.0 + 0.9) / 2 * 200));
  CHECK(level.resident_bytes(1000, 2000) == Approx(750));
  CHECK(level.resident_bytes(2000, 4000) == Approx(500));
  CHECK(level.resident_bytes(3000, 5000) == Approx(0.25 / 2 * 1000));
  CHECK(level.resident_bytes(4000, 9000) == 0);
  CHECK(level.horizon() == 4000);
  // Known only by its capacity: everything within it, nothing beyond (the step).
  const CacheLevel step{1000, 1e9, "test"};
  CHECK(step.resident_bytes(800, 1200) == Approx(200));
  CHECK(step.horizon() == 1000);

  // A weight of 3000 bytes read over and over, 100 bytes at a time: each byte comes back
  // after 2900 other bytes, where the curve holds 0.275.
  CacheResidency cache(level);
  for (uintptr_t at = 0; at < 3000; at += 100) CHECK(cache.touch(at, 100) == 0);
  double resident = 0;
  for (uintptr_t at = 0; at < 3000; at += 100) resident += cache.touch(at, 100);
  CHECK(resident / 3000 == Approx(level.resident_bytes(2900, 3000) / 100).epsilon(1e-9));
  CHECK(resident / 3000 == Approx(0.5 - 0.5 * (2950.0 - 2000) / 2000));
  // The same weight with a cache known by its capacity: nothing resident.
  CacheResidency capacity_only(step);
  for (int pass = 0; pass < 2; ++pass)
    for (uintptr_t at = 0; at < 3000; at += 100) CHECK(capacity_only.touch(at, 100) == 0);
}

TEST_CASE("a view inside a range touched earlier is as resident as that range", "[prediction]") {
  // A fused q/k/v output of 600 bytes at 1000: q at its start, k and v further in.
  CacheResidency cache(1000);
  CHECK(cache.touch(1000, 600) == 0);            // the matmul writes it (cold)
  CHECK(cache.touch(1000, 200) == 200);          // q: the same start
  CHECK(cache.touch(1200, 200) == 200);          // k: first seen, inside the output
  CHECK(cache.touch(1400, 300) == Approx(200));  // v: 200 of its bytes were written, [1600, 1700) cold
  CHECK(cache.touch(5000, 700) == 0);
  // k's [1300, 1400): 700 + 300 bytes touched since, nothing left.
  CHECK(cache.touch(1300, 100) == 0);
  // v's range [1400, 1700): 100 + 700 bytes touched since, room for 200 of its 300.
  CHECK(cache.touch(1400, 300) == Approx(200));
  CHECK(cache.touch(900, 50) == 0);              // before every range: cold
  // An access over several ranges: each overlapped part at its own depth. [1000, 1300):
  // [1000, 1200) has 50 + 300 + 100 + 700 above it (nothing left); [1200, 1300) too.
  CHECK(cache.touch(1000, 300) == 0);
  // [1000, 1600): [1000, 1300) on top (300), [1400, 1600) under 350 bytes (200), [1300, 1400)
  // under 650 (100): all of it within the capacity.
  CHECK(cache.touch(1000, 600) == Approx(600));
  CHECK(cache.touch(5000, 700) == Approx(250));  // under 600 + 50 + 100 (v's tail): room for 250
}

TEST_CASE("the dry run issues exactly the ops and host calls of a real run", "[prediction][recording]") {
  std::vector<BugSet> bug_sets(7);
  bug_sets[1].no_kv_cache = true;
  bug_sets[2].non_contiguous = true;
  bug_sets[3].host_sync = true;
  bug_sets[3].host_sync_per = HostSyncPer::Layer;
  bug_sets[4].fp32_ops = true;
  bug_sets[4].fp32_scope = Fp32Scope::All;
  bug_sets[5].sequential_generation = true;
  bug_sets[6].no_kv_cache = bug_sets[6].host_sync = bug_sets[6].fp32_ops = bug_sets[6].non_contiguous = true;
  for (const BugSet& bugs : bug_sets) {
    GenerationCase test_case;
    test_case.dtype = DType::F16;
    test_case.bugs = bugs;
    test_case.workload.requests = 3;
    test_case.workload.batch_size = 2;
    test_case.workload.prompt_tokens = 5;
    test_case.workload.new_tokens = 4;
    OpStreamRecorder real;
    generate_on_cpu(test_case, &real);
    const OpStream dry = record_generation(test_case.config, test_case.dtype, test_case.workload, test_case.bugs);
    INFO(bugs.describe());
    REQUIRE(dry.ops.size() == real.stream().ops.size());
    for (size_t i = 0; i < dry.ops.size(); ++i) {
      const StreamOp& a = dry.ops[i];
      const StreamOp& b = real.stream().ops[i];
      INFO("op " << i << " " << a.desc.name << " " << a.desc.label);
      CHECK(std::string(a.desc.name) == b.desc.name);
      CHECK(std::string(a.desc.label) == b.desc.label);
      CHECK(a.place.step == b.place.step);
      CHECK(a.place.group == b.place.group);
      REQUIRE(a.desc.inputs.size() == b.desc.inputs.size());
      for (size_t k = 0; k < a.desc.inputs.size(); ++k) {
        CHECK(a.desc.inputs[k].shape == b.desc.inputs[k].shape);
        CHECK(a.desc.inputs[k].strides == b.desc.inputs[k].strides);
        CHECK(a.desc.inputs[k].dtype == b.desc.inputs[k].dtype);
      }
      CHECK(a.desc.attention.query_key_pairs == b.desc.attention.query_key_pairs);
      if (a.desc.category != OpCategory::Marker) CHECK_FALSE(a.operands.empty());  // the dry run saw its memory
    }
    REQUIRE(dry.calls.size() == real.stream().calls.size());
    for (size_t i = 0; i < dry.calls.size(); ++i) {
      CHECK(dry.calls[i].call.kind == real.stream().calls[i].call.kind);
      CHECK(dry.calls[i].ops_before == real.stream().calls[i].ops_before);
    }
    CHECK(dry.steps == real.stream().steps);
  }
}

TEST_CASE("on a datasheet GPU the model predicts each bug's mechanism", "[prediction]") {
  const DeviceSpec h100 = find_device_spec("h100-sxm");
  Scenario scenario;
  scenario.name = "two-llama-8b-layers";
  scenario.model_config = lab_tiny_config();
  // llama-8b's layer shape: 436 MB of bf16 weights per layer, 130 µs at 3.35 TB/s, against
  // 16 launches per layer at 3.8 µs: the device, not the host, bounds the fixed path.
  scenario.model_config.hidden_size = 4096;
  scenario.model_config.intermediate_size = 14336;
  scenario.model_config.num_hidden_layers = 2;
  scenario.model_config.num_attention_heads = 32;
  scenario.model_config.num_key_value_heads = 8;
  scenario.model_config.head_dim = 128;
  scenario.model_config.vocab_size = 32000;
  scenario.dtype = DType::BF16;
  scenario.workload.requests = 8;
  scenario.workload.batch_size = 8;
  scenario.workload.prompt_tokens = 16;
  scenario.workload.new_tokens = 16;

  SECTION("fp32 matmuls read twice the weight bytes: about 2x per decode step") {
    scenario.bugs.fp32_ops = true;
    const SlowdownPrediction slowdown = predict_slowdown(scenario, h100);
    const PhasePrediction* fixed = slowdown.fixed.prediction.phase(Phase::Decode);
    REQUIRE(fixed);
    CHECK(fixed->bound == PredictedBound::Memory);
    CHECK(slowdown.decode_slowdown > 1.6);
    CHECK(slowdown.decode_slowdown < 2.2);
  }
  SECTION("sequential generation: eight batch-1 passes over the same weights") {
    scenario.bugs.sequential_generation = true;
    const SlowdownPrediction slowdown = predict_slowdown(scenario, h100);
    CHECK(slowdown.decode_slowdown > 6.0);
    CHECK(slowdown.decode_slowdown < 8.5);
  }
  SECTION("host syncs per layer: the device idles through each read's round trip") {
    scenario.bugs.host_sync = true;
    scenario.bugs.host_sync_per = HostSyncPer::Layer;
    const SlowdownPrediction slowdown = predict_slowdown(scenario, h100);
    const PhasePrediction* buggy = slowdown.buggy.prediction.phase(Phase::Decode);
    REQUIRE(buggy);
    CHECK(buggy->device_to_host_reads == 2 * 15);  // a read per layer, 15 decode steps
    CHECK(buggy->split.host_reads > 0);
    CHECK(slowdown.decode_slowdown > 1.0);
  }
}
