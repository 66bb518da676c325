// The five bugs change speed, never results; and each leaves its work signature in the
// ops the engine reports (shapes, bytes, syncs, dtypes, steps) — asserted from the
// recorded ops, not from timings.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "engine/events/op_stream.h"
#include "tests/support/engine_fixtures.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

GenerationCase lab_case(DType dtype) {
  GenerationCase test_case;
  test_case.dtype = dtype;
  test_case.workload.requests = 4;
  test_case.workload.batch_size = 4;
  test_case.workload.prompt_tokens = 9;
  test_case.workload.new_tokens = 8;
  test_case.workload.seed = 3;
  return test_case;
}

std::vector<BugSet> every_variant() {
  std::vector<BugSet> sets;
  BugSet bugs;
  bugs.no_kv_cache = true;
  sets.push_back(bugs);
  for (NonContiguousMode mode : {NonContiguousMode::Copy, NonContiguousMode::Strided}) {
    bugs = {};
    bugs.non_contiguous = true;
    bugs.non_contiguous_mode = mode;
    sets.push_back(bugs);
  }
  for (HostSyncPer per : {HostSyncPer::Token, HostSyncPer::Layer, HostSyncPer::Sequence}) {
    bugs = {};
    bugs.host_sync = true;
    bugs.host_sync_per = per;
    sets.push_back(bugs);
  }
  for (Fp32Scope scope : {Fp32Scope::Norms, Fp32Scope::Matmuls, Fp32Scope::All}) {
    bugs = {};
    bugs.fp32_ops = true;
    bugs.fp32_scope = scope;
    sets.push_back(bugs);
  }
  bugs = {};
  bugs.sequential_generation = true;
  sets.push_back(bugs);
  // Combinations.
  bugs = {};
  bugs.no_kv_cache = bugs.non_contiguous = bugs.host_sync = bugs.fp32_ops = bugs.sequential_generation = true;
  sets.push_back(bugs);
  bugs.non_contiguous_mode = NonContiguousMode::Strided;
  bugs.host_sync_per = HostSyncPer::Sequence;
  bugs.fp32_scope = Fp32Scope::All;
  sets.push_back(bugs);
  bugs = {};
  bugs.non_contiguous = bugs.host_sync = true;
  bugs.host_sync_per = HostSyncPer::Layer;
  sets.push_back(bugs);
  return sets;
}

}  // namespace

TEST_CASE("no bug changes the tokens or the logits", "[bugs]") {
  for (DType dtype : {DType::F16, DType::BF16}) {
    const GenerationCase fixed = lab_case(dtype);
    const GenerationResult expected = generate_on_cpu(fixed);
    for (const BugSet& bugs : every_variant()) {
      GenerationCase buggy = fixed;
      buggy.bugs = bugs;
      const GenerationResult result = generate_on_cpu(buggy);
      INFO(dtype_name(dtype) << " " << bugs.describe());
      CHECK(result.tokens == expected.tokens);
      // The same arithmetic in every deviation (fp32 copies are exact widenings, the fp32
      // norm multiplies by a weight of 1 here): the logits agree bitwise.
      CHECK(result.last_logits == expected.last_logits);
    }
  }
}

TEST_CASE("bugs keep the results of an fp32 model too", "[bugs]") {
  GenerationCase fixed = lab_case(DType::F32);
  GenerationCase buggy = fixed;
  buggy.bugs.non_contiguous = buggy.bugs.no_kv_cache = true;
  CHECK(generate_on_cpu(buggy).tokens == generate_on_cpu(fixed).tokens);
}

namespace {

std::map<int, int64_t> matmul_rows_per_step(const OpStreamRecorder& sink) {
  std::map<int, int64_t> rows;
  for (const auto& op : sink.stream().ops)
    if (op.place.step > 0 && op.desc.category == OpCategory::Matmul && std::string(op.desc.label) == "qkv_proj")
      rows[op.place.step] = std::max(rows[op.place.step], op.desc.inputs[0].shape[0]);
  return rows;
}

int64_t tensor_bytes(const TensorInfo& info) {
  int64_t count = 1;
  for (int i = 0; i < info.rank; ++i) count *= info.shape[i];
  return count * static_cast<int64_t>(dtype_size(info.dtype));
}

}  // namespace

TEST_CASE("no_kv_cache: matmul rows per step grow with the position", "[bugs][signature]") {
  GenerationCase fixed = lab_case(DType::F16), buggy = fixed;
  buggy.bugs.no_kv_cache = true;
  OpStreamRecorder fixed_sink, buggy_sink;
  generate_on_cpu(fixed, &fixed_sink);
  generate_on_cpu(buggy, &buggy_sink);
  const auto fixed_rows = matmul_rows_per_step(fixed_sink);
  const auto buggy_rows = matmul_rows_per_step(buggy_sink);
  REQUIRE(buggy_rows.size() == 7);
  for (const auto& [step, rows] : fixed_rows) CHECK(rows == 4);                 // batch
  for (const auto& [step, rows] : buggy_rows) CHECK(rows == 4 * (9 + step));    // batch x prefix
}

TEST_CASE("non_contiguous copy: copy bytes per step grow with the cache", "[bugs][signature]") {
  GenerationCase buggy = lab_case(DType::F16);
  buggy.bugs.non_contiguous = true;
  OpStreamRecorder sink;
  generate_on_cpu(buggy, &sink);
  std::map<int, int64_t> copy_bytes;
  for (const auto& op : sink.stream().ops)
    if (op.place.step > 0 && op.desc.category == OpCategory::Copy && std::string(op.desc.name) == "copy")
      copy_bytes[op.place.step] += tensor_bytes(op.desc.outputs[0]);
  REQUIRE(copy_bytes.size() == 7);
  // Per step: 2 layers x (K + V) x 4 sequences x 2 KV heads x positions x 32 dims x 2 bytes.
  for (const auto& [step, bytes] : copy_bytes) CHECK(bytes == 2 * 2 * 4 * 2 * (9 + step) * 32 * 2);

  OpStreamRecorder fixed_sink;
  generate_on_cpu(lab_case(DType::F16), &fixed_sink);
  for (const auto& op : fixed_sink.stream().ops)
    if (op.place.step > 0) CHECK(std::string(op.desc.name) != "copy");
}

TEST_CASE("non_contiguous strided: attention reads a head_dim-strided cache", "[bugs][signature]") {
  GenerationCase buggy = lab_case(DType::F16);
  buggy.bugs.non_contiguous = true;
  buggy.bugs.non_contiguous_mode = NonContiguousMode::Strided;
  OpStreamRecorder sink;
  generate_on_cpu(buggy, &sink);
  int attention_ops = 0;
  for (const auto& op : sink.stream().ops) {
    if (op.desc.category != OpCategory::Attention) continue;
    ++attention_ops;
    CHECK(op.desc.inputs[1].strides[3] > 1);  // K's innermost (head_dim) stride
  }
  CHECK(attention_ops > 0);
}

TEST_CASE("host_sync: one device-to-host read per token, per layer or per sequence", "[bugs][signature]") {
  const std::map<HostSyncPer, int> reads_per_step = {
      {HostSyncPer::Token, 1}, {HostSyncPer::Layer, 2}, {HostSyncPer::Sequence, 4}};
  for (const auto& [per, expected] : reads_per_step) {
    GenerationCase buggy = lab_case(DType::F16);
    buggy.bugs.host_sync = true;
    buggy.bugs.host_sync_per = per;
    OpStreamRecorder sink;
    generate_on_cpu(buggy, &sink);
    std::map<int, int> reads;
    for (const auto& call : sink.stream().calls)
      if (call.place.step > 0 && call.call.kind == HostCallKind::DeviceToHost) ++reads[call.place.step];
    INFO("per " << to_string(per));
    REQUIRE(reads.size() == 7);
    for (const auto& [step, count] : reads) CHECK(count == expected);
  }
  OpStreamRecorder fixed_sink;
  generate_on_cpu(lab_case(DType::F16), &fixed_sink);
  for (const auto& call : fixed_sink.stream().calls) CHECK(call.place.step == -1);  // reads only after the loop
}

TEST_CASE("fp32_ops: fp32 matmuls and casts in a half model, twice the weight bytes", "[bugs][signature]") {
  auto weight_bytes_and_casts = [](const BugSet& bugs) {
    GenerationCase test_case = lab_case(DType::F16);
    test_case.bugs = bugs;
    OpStreamRecorder sink;
    generate_on_cpu(test_case, &sink);
    int64_t weight_bytes = 0;
    int casts = 0, fp32_norms = 0;
    for (const auto& op : sink.stream().ops) {
      if (op.place.step != 1) continue;
      if (op.desc.category == OpCategory::Matmul) weight_bytes += tensor_bytes(op.desc.inputs[1]);
      if (op.desc.category == OpCategory::Cast) ++casts;
      if (op.desc.category == OpCategory::Norm && op.desc.inputs[0].dtype == DType::F32) ++fp32_norms;
    }
    return std::tuple{weight_bytes, casts, fp32_norms};
  };
  const auto [fixed_bytes, fixed_casts, fixed_norms] = weight_bytes_and_casts(BugSet{});
  CHECK(fixed_casts == 0);
  CHECK(fixed_norms == 0);
  BugSet matmuls;
  matmuls.fp32_ops = true;
  const auto [matmul_bytes, matmul_casts, matmul_norms] = weight_bytes_and_casts(matmuls);
  CHECK(matmul_bytes == 2 * fixed_bytes);
  // In and out of each layer's four projections (q/k/v and gate/up fused) and the LM head.
  CHECK(matmul_casts == 2 * (2 * 4 + 1));
  CHECK(matmul_norms == 0);
  BugSet norms = matmuls;
  norms.fp32_scope = Fp32Scope::Norms;
  const auto [norm_bytes, norm_casts, norm_fp32] = weight_bytes_and_casts(norms);
  CHECK(norm_bytes == fixed_bytes);
  CHECK(norm_fp32 == 2 * 2 + 1);
  CHECK(norm_casts == 2 * (2 * 2 + 1));
}

TEST_CASE("sequential_generation: batch-1 steps, N times the steps", "[bugs][signature]") {
  GenerationCase fixed = lab_case(DType::F16), buggy = fixed;
  buggy.bugs.sequential_generation = true;
  OpStreamRecorder fixed_sink, buggy_sink;
  const GenerationResult fixed_result = generate_on_cpu(fixed, &fixed_sink);
  const GenerationResult buggy_result = generate_on_cpu(buggy, &buggy_sink);
  CHECK(fixed_sink.stream().steps == 7);
  CHECK(buggy_sink.stream().steps == 4 * 7);
  CHECK(buggy_result.timing.groups == 4);
  for (const auto& [step, rows] : matmul_rows_per_step(buggy_sink)) CHECK(rows == 1);
}
