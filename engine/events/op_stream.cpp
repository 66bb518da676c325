// Recording the op stream, and a whole generation recorded on the dry-run device.
#include "engine/events/op_stream.h"

#include "engine/model/weights.h"

namespace decodelab {

void OpStreamRecorder::op_enqueued(const OpDesc& op, int64_t, int64_t) {
  stream_.ops.push_back({op, place_, {}});
}

void OpStreamRecorder::host_call(const HostCall& call) {
  stream_.calls.push_back({call, place_, stream_.ops.size()});
}

void OpStreamRecorder::range_begin(RangeKind kind, int index, int64_t) {
  switch (kind) {
    case RangeKind::Group:
      place_.group = index;
      ++stream_.groups;
      break;
    case RangeKind::Prefill: place_.prefill = true; break;
    case RangeKind::Step:
      place_.step = index;
      ++stream_.steps;
      break;
    case RangeKind::Layer: place_.layer = index; break;
    case RangeKind::Run: break;
  }
}

void OpStreamRecorder::range_end(RangeKind kind, int, int64_t) {
  switch (kind) {
    case RangeKind::Group: place_.group = -1; break;
    case RangeKind::Prefill: place_.prefill = false; break;
    case RangeKind::Step: place_.step = -1; break;
    case RangeKind::Layer: place_.layer = -1; break;
    case RangeKind::Run: break;
  }
}

OpStream record_generation(const ModelConfig& config, DType dtype, const Workload& workload, const BugSet& bugs) {
  DryRunBackend device;
  Engine engine(device, config, ModelWeights::allocate(device, config, dtype), bugs);
  device.clear_accesses();  // set-up ops (a bug's fp32 weight copies) are not part of the run
  Workload recorded = workload;
  recorded.host_overhead_us = 0;
  OpStreamRecorder recorder;
  engine.generate(recorded, &recorder);
  OpStream stream = recorder.take();
  for (StreamOp& op : stream.ops) {
    auto found = device.accesses().find(op.desc.id);
    if (found != device.accesses().end()) op.operands = found->second;
  }
  return stream;
}

}  // namespace decodelab
