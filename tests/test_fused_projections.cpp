// The fused projections (issue 17): q/k/v and gate/up each run as one matmul over weights
// concatenated by rows, and the ops after them read column slices of its output. What
// makes that exact is asserted op by op on the CPU backend — a fused matmul's columns are
// each part's own matmul bit for bit (every output element depends only on its x row and
// W row), and rope, kv_store, attention and swiglu give the same bits from slices as from
// dense tensors — then what the engine issues: the op list, the fused shapes and where
// their slices point, the declared FLOPs and bytes (every weight counted once), and the
// fp32_ops bug's fp32 copies of the fused weights.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "engine/events/op_stream.h"
#include "profiling/model/cost_model.h"
#include "tests/cpu_test_support.h"
#include "tests/support/engine_fixtures.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

// Columns [first, first + count) of a [rows, width] view, with its row stride (as the
// engine passes q, k, v and gate, up on).
Tensor columns(const Tensor& tensor, int64_t first, int64_t count) {
  Tensor view = tensor;
  view.data = static_cast<char*>(tensor.data) + first * static_cast<int64_t>(dtype_size(tensor.dtype));
  view.shape[1] = count;
  return view;
}

// Columns [first, first + count) of a row-major [rows, width] block of values.
std::vector<float> columns_of(const std::vector<float>& values, int64_t rows, int64_t width, int64_t first,
                              int64_t count) {
  std::vector<float> result;
  for (int64_t r = 0; r < rows; ++r)
    result.insert(result.end(), values.begin() + r * width + first, values.begin() + r * width + first + count);
  return result;
}

}  // namespace

TEST_CASE("cpu matmul over concatenated weights gives each part's outputs bit for bit", "[cpu][invariants][fused]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  // 2051: half-precision rows of 4 KiB or more take the AVX2 wide-row decode path (fp32 from 1024).
  const int64_t k = GENERATE(17, 1024, 2051);
  const int64_t m = GENERATE(1, 3, 13);  // decode, batched decode, W panels
  CpuFixture fixture;
  const std::vector<int64_t> parts = {37, 11, 11};  // q, k, v rows: not multiples of the 4- or 8-row blocks
  const int64_t n = 37 + 11 + 11;
  const Tensor x = fixture.upload(dtype, {m, k}, random_values(static_cast<size_t>(m * k), dtype, 201));
  const std::vector<float> w_values = random_values(static_cast<size_t>(n * k), dtype, 202);
  const Tensor fused = fixture.upload(dtype, {n, k}, w_values);
  const Tensor out = fixture.tensor(dtype, {m, n});
  fixture.backend->matmul(x, fused, out, fixture.id());
  const std::vector<float> fused_out = fixture.read(out);

  int64_t first = 0;
  for (int64_t rows : parts) {
    const std::vector<float> part_values(w_values.begin() + first * k, w_values.begin() + (first + rows) * k);
    const Tensor part = fixture.upload(dtype, {rows, k}, part_values);  // its own allocation
    const Tensor part_out = fixture.tensor(dtype, {m, rows});
    fixture.backend->matmul(x, part, part_out, fixture.id());
    const std::string report = compare_bitwise(
        columns_of(fused_out, m, n, first, rows), fixture.read(part_out),
        std::string("fused matmul ") + dtype_name(dtype) + " K=" + std::to_string(k) + " M=" + std::to_string(m) +
            ", columns " + std::to_string(first) + ".." + std::to_string(first + rows - 1));
    INFO(report);
    CHECK(report.empty());
    first += rows;
  }
}

TEST_CASE("cpu rope, kv_store, attention and swiglu read slices of a fused output as dense tensors",
          "[cpu][invariants][fused]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  CpuFixture fixture;
  // Two sequences of three rows (a prefill), 4 query heads over 2 KV heads of 16 dims.
  const int64_t rows = 6, head_dim = 16, q_width = 4 * head_dim, kv_width = 2 * head_dim;
  const int64_t qkv_width = q_width + 2 * kv_width, sequences = 2, capacity = 8;
  const int rows_per_sequence = 3;
  const std::vector<float> qkv_values = random_values(static_cast<size_t>(rows * qkv_width), dtype, 211);
  const Tensor qkv = fixture.upload(dtype, {rows, qkv_width}, qkv_values);
  const Tensor q_slice = columns(qkv, 0, q_width), k_slice = columns(qkv, q_width, kv_width);
  const Tensor v_slice = columns(qkv, q_width + kv_width, kv_width);
  const Tensor q = fixture.upload(dtype, {rows, q_width}, columns_of(qkv_values, rows, qkv_width, 0, q_width));
  const Tensor k = fixture.upload(dtype, {rows, kv_width}, columns_of(qkv_values, rows, qkv_width, q_width, kv_width));
  const Tensor v =
      fixture.upload(dtype, {rows, kv_width}, columns_of(qkv_values, rows, qkv_width, q_width + kv_width, kv_width));
  REQUIRE_FALSE(k_slice.is_contiguous());

  const Tensor positions = fixture.upload_i32({rows}, {0, 1, 2, 0, 1, 2});
  std::vector<float> inv_freq(head_dim / 2);
  for (int64_t j = 0; j < head_dim / 2; ++j) inv_freq[j] = std::pow(10000.0f, -2.0f * j / head_dim);
  const Tensor frequencies = fixture.upload(DType::F32, {head_dim / 2}, inv_freq);
  const std::vector<float> zeros(static_cast<size_t>(sequences * 2 * capacity * head_dim), 0.0f);
  auto cache = [&] { return fixture.upload(dtype, {sequences, 2, capacity, head_dim}, zeros); };
  const Tensor k_cache_slices = cache(), v_cache_slices = cache(), k_cache_dense = cache(), v_cache_dense = cache();
  const Tensor out_slices = fixture.tensor(dtype, {rows, q_width}), out_dense = fixture.tensor(dtype, {rows, q_width});
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));

  fixture.backend->rope(q_slice, k_slice, positions, frequencies, static_cast<int>(head_dim), fixture.id());
  fixture.backend->rope(q, k, positions, frequencies, static_cast<int>(head_dim), fixture.id());
  fixture.backend->kv_store(k_slice, v_slice, k_cache_slices, v_cache_slices, positions, rows_per_sequence,
                            fixture.id());
  fixture.backend->kv_store(k, v, k_cache_dense, v_cache_dense, positions, rows_per_sequence, fixture.id());
  fixture.backend->attention(q_slice, k_cache_slices, v_cache_slices, positions, rows_per_sequence, scale, out_slices,
                             fixture.id());
  fixture.backend->attention(q, k_cache_dense, v_cache_dense, positions, rows_per_sequence, scale, out_dense,
                             fixture.id());

  const std::vector<float> rotated = fixture.read(qkv);
  const std::string what = std::string(" from slices vs dense, ") + dtype_name(dtype);
  for (const std::string& report : {
           compare_bitwise(columns_of(rotated, rows, qkv_width, 0, q_width), fixture.read(q), "rope q" + what),
           compare_bitwise(columns_of(rotated, rows, qkv_width, q_width, kv_width), fixture.read(k), "rope k" + what),
           compare_bitwise(fixture.read(k_cache_slices), fixture.read(k_cache_dense), "kv_store keys" + what),
           compare_bitwise(fixture.read(v_cache_slices), fixture.read(v_cache_dense), "kv_store values" + what),
           compare_bitwise(fixture.read(out_slices), fixture.read(out_dense), "attention" + what),
       }) {
    INFO(report);
    CHECK(report.empty());
  }

  // gate | up: an odd width, so each row's half ends in a partial vector.
  const int64_t intermediate = 37;
  const std::vector<float> gate_up_values =
      random_values(static_cast<size_t>(rows * 2 * intermediate), dtype, 212, -8.0f, 8.0f);
  const Tensor gate_up = fixture.upload(dtype, {rows, 2 * intermediate}, gate_up_values);
  const Tensor gate =
      fixture.upload(dtype, {rows, intermediate}, columns_of(gate_up_values, rows, 2 * intermediate, 0, intermediate));
  const Tensor up = fixture.upload(
      dtype, {rows, intermediate}, columns_of(gate_up_values, rows, 2 * intermediate, intermediate, intermediate));
  const Tensor activated_slices = fixture.tensor(dtype, {rows, intermediate});
  const Tensor activated_dense = fixture.tensor(dtype, {rows, intermediate});
  fixture.backend->swiglu(columns(gate_up, 0, intermediate), columns(gate_up, intermediate, intermediate),
                          activated_slices, fixture.id());
  fixture.backend->swiglu(gate, up, activated_dense, fixture.id());
  const std::string report =
      compare_bitwise(fixture.read(activated_slices), fixture.read(activated_dense), "swiglu" + what);
  INFO(report);
  CHECK(report.empty());
}

namespace {

Workload batched_workload() {
  Workload workload;
  workload.requests = 2;
  workload.batch_size = 2;
  workload.prompt_tokens = 5;
  workload.new_tokens = 3;
  return workload;
}

const StreamOp* find_op(const std::vector<const StreamOp*>& ops, const char* name, const char* label = nullptr) {
  for (const StreamOp* op : ops)
    if (std::string(op->desc.name) == name && (!label || std::string(op->desc.label) == label)) return op;
  return nullptr;
}

}  // namespace

TEST_CASE("each layer runs q/k/v and gate/up as one matmul each, and the ops after them read its slices",
          "[engine][fused]") {
  const ModelConfig config = lab_tiny_config();
  const OpStream stream = record_generation(config, DType::F16, batched_workload(), BugSet{});
  std::vector<const StreamOp*> layer;  // layer 1 of decode step 1
  for (const StreamOp& op : stream.ops)
    if (op.place.step == 1 && op.place.layer == 1) layer.push_back(&op);

  std::vector<std::string> matmuls;
  for (const StreamOp* op : layer)
    if (op->desc.category == OpCategory::Matmul) matmuls.push_back(op->desc.label);
  CHECK(matmuls == std::vector<std::string>{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"});

  const int64_t rows = 2, intermediate = config.intermediate_size;
  const int64_t qkv_width = config.q_width() + 2 * config.kv_width();
  const StreamOp* qkv = find_op(layer, "matmul", "qkv_proj");
  const StreamOp* gate_up = find_op(layer, "matmul", "gate_up_proj");
  const StreamOp* rope = find_op(layer, "rope");
  const StreamOp* kv_store = find_op(layer, "kv_store");
  const StreamOp* attention = find_op(layer, "attention");
  const StreamOp* swiglu = find_op(layer, "swiglu");
  REQUIRE((qkv && gate_up && rope && kv_store && attention && swiglu));
  CHECK(qkv->desc.inputs[1].shape == std::array<int64_t, 4>{qkv_width, config.hidden_size, 0, 0});
  CHECK(qkv->desc.outputs[0].shape == std::array<int64_t, 4>{rows, qkv_width, 0, 0});
  CHECK(gate_up->desc.inputs[1].shape == std::array<int64_t, 4>{2 * intermediate, config.hidden_size, 0, 0});

  // q, k, v: column slices of qkv_proj's output, with its row stride; gate and up: the halves of gate_up_proj's.
  const uintptr_t qkv_out = qkv->operands.back().address, gate_up_out = gate_up->operands.back().address;
  REQUIRE(qkv->operands.back().written);
  const auto q_info = rope->desc.inputs[0], k_info = rope->desc.inputs[1];
  CHECK(q_info.shape == std::array<int64_t, 4>{rows, config.q_width(), 0, 0});
  CHECK(q_info.strides[0] == qkv_width);
  CHECK(k_info.shape == std::array<int64_t, 4>{rows, config.kv_width(), 0, 0});
  CHECK(k_info.strides[0] == qkv_width);
  CHECK(rope->operands[0].address == qkv_out);
  CHECK(rope->operands[1].address == qkv_out + 2 * config.q_width());  // fp16
  CHECK(kv_store->operands[0].address == qkv_out + 2 * config.q_width());
  CHECK(kv_store->operands[1].address == qkv_out + 2 * (config.q_width() + config.kv_width()));
  CHECK(attention->operands[0].address == qkv_out);
  for (const TensorInfo& half : swiglu->desc.inputs) {
    CHECK(half.shape == std::array<int64_t, 4>{rows, intermediate, 0, 0});
    CHECK(half.strides[0] == 2 * intermediate);
  }
  CHECK(swiglu->operands[0].address == gate_up_out);
  CHECK(swiglu->operands[1].address == gate_up_out + 2 * intermediate);
}

TEST_CASE("the fused matmuls declare the parts' FLOPs and stream every weight once per step", "[engine][fused]") {
  const ModelConfig config = lab_tiny_config();
  const OpStream stream = record_generation(config, DType::F16, batched_workload(), BugSet{});
  double weight_bytes = 0, flops = 0;
  int matmuls = 0;
  for (const StreamOp& op : stream.ops) {
    if (op.place.step != 1 || op.desc.category != OpCategory::Matmul) continue;
    ++matmuls;
    const OpCost cost = op_cost(op.desc);
    weight_bytes += tensor_bytes(op.desc.inputs[1]);
    flops += cost.flops;
    CHECK(cost.bytes_read == tensor_bytes(op.desc.inputs[0]) + tensor_bytes(op.desc.inputs[1]));
  }
  CHECK(matmuls == 4 * config.num_hidden_layers + 1);
  // Every parameter but the norms' (and the embedding's, which is gathered): streamed once, 2 bytes each.
  const int64_t norms = (2 * int64_t{config.num_hidden_layers} + 1) * config.hidden_size;
  const double streamed = static_cast<double>(config.streamed_parameters_per_step() - norms);
  CHECK(weight_bytes == 2 * streamed);
  CHECK(flops == 2 * 2 * streamed);  // 2 rows, 2 FLOPs per weight and row
}

TEST_CASE("fp32_ops keeps fp32 copies of the fused weights and runs the fused matmuls in fp32", "[bugs][fused]") {
  const ModelConfig config = lab_tiny_config();
  BugSet bugs;
  bugs.fp32_ops = true;
  bugs.fp32_scope = Fp32Scope::Matmuls;
  const OpStream stream = record_generation(config, DType::F16, batched_workload(), bugs);
  std::vector<const StreamOp*> layer;
  for (const StreamOp& op : stream.ops)
    if (op.place.step == 1 && op.place.layer == 0) layer.push_back(&op);
  std::vector<std::string> sequence;
  for (const StreamOp* op : layer) {
    if (op->desc.category == OpCategory::Matmul) {
      CHECK(op->desc.inputs[0].dtype == DType::F32);
      CHECK(op->desc.inputs[1].dtype == DType::F32);
    }
    if (op->desc.category == OpCategory::Matmul || op->desc.category == OpCategory::Cast)
      sequence.push_back(std::string(op->desc.name) + " " + op->desc.label);
  }
  CHECK(sequence == std::vector<std::string>{"cast qkv_proj", "matmul qkv_proj", "cast qkv_proj", "cast o_proj",
                                             "matmul o_proj", "cast o_proj", "cast gate_up_proj",
                                             "matmul gate_up_proj", "cast gate_up_proj", "cast down_proj",
                                             "matmul down_proj", "cast down_proj"});
  const StreamOp* qkv = find_op(layer, "matmul", "qkv_proj");
  REQUIRE(qkv);
  const int64_t qkv_width = config.q_width() + 2 * config.kv_width();
  CHECK(qkv->desc.inputs[1].shape == std::array<int64_t, 4>{qkv_width, config.hidden_size, 0, 0});
  CHECK(qkv->desc.outputs[0].shape == std::array<int64_t, 4>{2, qkv_width, 0, 0});
}
