// The trace as an event sink: what it keeps of each event, how device timings find
// their ops (also across id restarts), and how nested ranges are closed.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "engine/backend.h"
#include "profiling/trace.h"
#include "tests/support/profiling_fixtures.h"

using namespace decodelab;
using decodelab::testing::op;
using decodelab::testing::tensor;

TEST_CASE("trace keeps each op's description and owns its names", "[trace]") {
  Trace trace(4);
  char label[16];
  std::strcpy(label, "q_proj");
  OpDesc desc = decodelab::testing::matmul(1, 2, 8, 4, DType::F16, label);
  trace.op_enqueued(desc, 100, 150);
  std::strcpy(label, "k_proj");  // the caller reuses its buffer
  desc.id = 2;
  trace.op_enqueued(desc, 200, 230);

  REQUIRE(trace.ops().size() == 2);
  CHECK(std::string(trace.ops()[0].desc.label) == "q_proj");
  CHECK(std::string(trace.ops()[1].desc.label) == "k_proj");
  CHECK(trace.ops()[0].desc.label != label);
  CHECK(trace.ops()[0].desc.inputs.size() == 2);
  CHECK(trace.ops()[0].desc.inputs[1].shape[0] == 8);
  CHECK(trace.ops()[0].host_begin_ns == 100);
  CHECK(trace.ops()[0].host_end_ns == 150);
  CHECK_FALSE(trace.ops()[0].has_device_time());
}

TEST_CASE("device timings find their ops, in any order, across id restarts", "[trace]") {
  Trace trace;
  for (OpId id = 1; id <= 5; ++id) trace.op_enqueued(decodelab::testing::marker(id), id * 10, id * 10 + 1);
  trace.ops_executed({{3, 1000, 1100}, {1, 800, 850}});
  CHECK(trace.ops()[0].device_begin_ns == 800);
  CHECK(trace.ops()[2].device_end_ns == 1100);
  CHECK_FALSE(trace.ops()[1].has_device_time());

  // A new front layer starts its ids at 1 again: timings go to the newest op of that id.
  for (OpId id = 1; id <= 3; ++id) trace.op_enqueued(decodelab::testing::marker(id), 100 + id, 101 + id);
  trace.ops_executed({{2, 5000, 5100}, {5, 1200, 1300}});
  CHECK(trace.ops()[6].device_begin_ns == 5000);  // second epoch, id 2
  CHECK_FALSE(trace.ops()[1].device_begin_ns == 5000);
  CHECK(trace.ops()[4].device_begin_ns == 1200);   // id 5 exists only in the first epoch

  // A timing for an op never described is counted, not guessed.
  trace.ops_executed({{99, 1, 2}});
  CHECK(trace.unmatched_timings() == 1);
}

TEST_CASE("ids with gaps are still matched (binary search)", "[trace]") {
  Trace trace;
  for (OpId id : {2, 4, 9, 10}) trace.op_enqueued(decodelab::testing::marker(id), 1, 2);
  trace.ops_executed({{9, 30, 40}});
  CHECK(trace.ops()[2].device_begin_ns == 30);
  CHECK(trace.find_op(4) == std::optional<size_t>(1));
  CHECK_FALSE(trace.find_op(5).has_value());
}

TEST_CASE("ranges nest, an end closes ranges left open inside it", "[trace]") {
  Trace trace;
  trace.range_begin(RangeKind::Run, -1, 0);
  trace.range_begin(RangeKind::Group, 0, 1);
  trace.range_begin(RangeKind::Step, 0, 2);
  trace.range_begin(RangeKind::Layer, 0, 3);
  trace.range_end(RangeKind::Layer, 0, 4);
  trace.range_begin(RangeKind::Layer, 1, 5);  // never ended
  trace.range_end(RangeKind::Step, 0, 6);
  trace.range_end(RangeKind::Prefill, -1, 7);  // matches nothing open: ignored
  trace.range_end(RangeKind::Group, 0, 8);
  trace.range_end(RangeKind::Run, -1, 9);

  const auto& ranges = trace.ranges();
  REQUIRE(ranges.size() == 5);
  CHECK(ranges[0].depth == 0);
  CHECK(ranges[0].parent == -1);
  CHECK(ranges[2].kind == RangeKind::Step);
  CHECK(ranges[2].parent == 1);
  CHECK(ranges[3].parent == 2);
  CHECK(ranges[3].end_ns == 4);
  CHECK(ranges[4].end_ns == 6);  // closed with its step
  CHECK(ranges[4].depth == 3);
  CHECK(ranges[1].end_ns == 8);
  CHECK(ranges[0].end_ns == 9);
  for (const TraceRange& range : ranges) CHECK(range.closed());
}

TEST_CASE("host calls and extent of a trace, equality is deep", "[trace]") {
  Trace first, second;
  for (Trace* trace : {&first, &second}) {
    trace->metadata().backend = "cpu";
    trace->range_begin(RangeKind::Run, -1, 5);
    trace->add_op(decodelab::testing::elementwise_add(1, 64, DType::F32), 10, 20, 30, 40);
    trace->host_call(HostCall{HostCallKind::Synchronize, "synchronize", 50, 60, 0});
    trace->range_end(RangeKind::Run, -1, 70);
  }
  CHECK(first == second);
  CHECK(first.first_ns() == 5);
  CHECK(first.last_ns() == 70);
  CHECK(std::string(first.host_calls()[0].name) == "synchronize");

  second.metadata().dtype = "fp16";
  CHECK_FALSE(first == second);
  second.metadata().dtype.clear();
  second.add_op(decodelab::testing::marker(2), 80, 81);
  CHECK_FALSE(first == second);
}

TEST_CASE("an empty trace has no extent", "[trace]") {
  const Trace trace;
  CHECK(trace.ops().empty());
  CHECK(trace.first_ns() == 0);
  CHECK(trace.last_ns() == 0);
}

TEST_CASE("metadata for a run: backend, device, model shape, dtype and roofs", "[trace]") {
  const std::unique_ptr<Backend> backend = make_backend(BackendKind::Cpu, {});
  ModelConfig config;
  config.name = "shape-only";
  config.vocab_size = 100;
  config.hidden_size = 64;
  config.intermediate_size = 96;
  config.num_hidden_layers = 1;
  config.num_attention_heads = 4;
  config.max_position_embeddings = 32;
  REQUIRE(config.finalize_and_validate().empty());
  DeviceSpec spec;
  spec.name = "test";
  spec.measured = Roofs{.bandwidth = 1e10, .fp32_flops = 1e11, .source = "test"};

  const TraceMetadata meta = TraceMetadata::of(backend->identity(), config, DType::BF16, spec);
  CHECK(meta.backend == "cpu");
  CHECK_FALSE(meta.is_gpu());
  CHECK(meta.device == backend->device_description());
  CHECK(meta.dtype == "bf16");
  CHECK(meta.model.name == "shape-only");
  CHECK(meta.model.num_key_value_heads == 4);  // filled in by finalize_and_validate
  CHECK(meta.model.head_dim == 16);
  REQUIRE(meta.device_spec);
  CHECK(meta.device_spec->name == "test");
}

TEST_CASE("a run like the last records into memory written before it", "[trace]") {
  // One run of 40 matmuls with ranges and a host call, as the engine reports them.
  const auto record_run = [](Trace& trace) {
    trace.before_run();
    trace.range_begin(RangeKind::Run, -1, 0);
    for (OpId id = 1; id <= 40; ++id) {
      trace.op_enqueued(decodelab::testing::matmul(id, 2, 8, 4, DType::F16, "q_proj"), id * 10, id * 10 + 5);
    }
    trace.host_call({HostCallKind::Synchronize, "synchronize", 500, 600, 0});
    trace.range_end(RangeKind::Run, -1, 700);
  };
  Trace trace(8);  // room for 8 ops before the first run
  record_run(trace);
  trace.before_run();
  const TraceOp* storage = trace.ops().data();
  CHECK(trace.ops().capacity() >= 40 + 50);  // the 40 recorded, and room for the last run's 40 and a quarter more
  for (OpId id = 1; id <= 40; ++id) {
    trace.op_enqueued(decodelab::testing::matmul(id, 2, 8, 4, DType::F16, "q_proj"), 1000 + id, 1001 + id);
  }
  CHECK(trace.ops().data() == storage);  // no op moved the records
  // Each op's tensor lists were written ahead: larger than its two inputs and one output.
  CHECK(trace.ops().back().desc.inputs.capacity() >= 3);
  CHECK(trace.ops().back().desc.outputs.capacity() >= 3);
  CHECK(trace.ops().back().desc.inputs.size() == 2);
  CHECK(trace.ops().back().desc.inputs[1].shape[0] == 8);

  // Writing ahead changes nothing a reader sees.
  Trace written_ahead, plain;
  record_run(written_ahead);
  plain.range_begin(RangeKind::Run, -1, 0);
  for (OpId id = 1; id <= 40; ++id) {
    plain.op_enqueued(decodelab::testing::matmul(id, 2, 8, 4, DType::F16, "q_proj"), id * 10, id * 10 + 5);
  }
  plain.host_call({HostCallKind::Synchronize, "synchronize", 500, 600, 0});
  plain.range_end(RangeKind::Run, -1, 700);
  CHECK(written_ahead == plain);
}
