// Shared helpers for engine tests: the lab-tiny shape, a one-call generation on the CPU
// backend, and a recording sink that keeps what the engine reported (ops per step).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bugs/bug_set.h"
#include "engine/backend.h"
#include "engine/event_sink.h"
#include "engine/generator.h"
#include "engine/model_config.h"

namespace decodelab::testing {

// vocab 512, hidden 128, intermediate 352, 2 layers, 4 heads, 2 KV heads.
ModelConfig lab_tiny_config();

struct GenerationCase {
  ModelConfig config = lab_tiny_config();
  DType dtype = DType::F32;
  Workload workload;
  BugSet bugs;
  uint64_t weight_seed = 7;
};

GenerationResult generate_on_cpu(const GenerationCase& test_case, EventSink* sink = nullptr);

// Keeps every op description with the step it was enqueued in (-1 outside steps),
// and every host call likewise.
class RecordingSink : public EventSink {
 public:
  struct Op {
    OpDesc desc;
    int step = -1;
    bool prefill = false;
  };
  struct Call {
    HostCall call;
    int step = -1;
  };

  void op_enqueued(const OpDesc& op, int64_t, int64_t) override { ops.push_back({op, step_, prefill_}); }
  void ops_executed(const std::vector<OpTiming>& timings) override { executed += timings.size(); }
  void host_call(const HostCall& call) override { calls.push_back({call, step_}); }
  void range_begin(RangeKind kind, int index, int64_t) override {
    if (kind == RangeKind::Step) step_ = index;
    if (kind == RangeKind::Prefill) prefill_ = true;
    if (kind == RangeKind::Step) ++steps;
  }
  void range_end(RangeKind kind, int, int64_t) override {
    if (kind == RangeKind::Step) step_ = -1;
    if (kind == RangeKind::Prefill) prefill_ = false;
  }

  std::vector<Op> ops;
  std::vector<Call> calls;
  size_t executed = 0;
  int steps = 0;

 private:
  int step_ = -1;
  bool prefill_ = false;
};

}  // namespace decodelab::testing
