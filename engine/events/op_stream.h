// The op stream of a generation: every op and host call the engine issued, in program
// order, each with its place in the decode loop (group, prefill or step, layer). Recorded
// through the event sink, so it holds what a profiler could see and nothing more; recorded
// on the dry-run device (record_generation), it also holds what memory each op touched.
// The prediction model (profiling/model/prediction.h) prices this stream op by op, so what is
// predicted is exactly what a run issues — every bug and combination included.
#pragma once

#include <cstddef>
#include <vector>

#include "bugs/bug_set.h"
#include "engine/dry_run_backend.h"
#include "engine/events/event_sink.h"
#include "engine/model/generator.h"
#include "engine/model/model_config.h"

namespace decodelab {

// Where in the decode loop something happened (-1 / false where it was not inside one).
struct StreamPlace {
  int group = -1;
  int step = -1;      // decode step index (the Step range's own index, 1-based)
  bool prefill = false;
  int layer = -1;
};

struct StreamOp {
  OpDesc desc;  // names and labels are the engine's string literals (static storage)
  StreamPlace place;
  std::vector<OperandAccess> operands;  // empty unless recorded on the dry-run device
};

struct StreamCall {
  HostCall call;
  StreamPlace place;
  size_t ops_before = 0;  // ops enqueued before this call: its position in program order
};

struct OpStream {
  std::vector<StreamOp> ops;
  std::vector<StreamCall> calls;
  int steps = 0;   // decode step ranges seen
  int groups = 0;  // group ranges seen
};

// An event sink that keeps the stream. Device timings (ops_executed) are counted only.
class OpStreamRecorder final : public EventSink {
 public:
  const OpStream& stream() const { return stream_; }
  OpStream take() { return std::move(stream_); }
  size_t timings_received() const { return timings_received_; }

  void op_enqueued(const OpDesc& op, int64_t host_begin_ns, int64_t host_end_ns) override;
  void ops_executed(const std::vector<OpTiming>& timings) override { timings_received_ += timings.size(); }
  void host_call(const HostCall& call) override;
  void range_begin(RangeKind kind, int index, int64_t ns) override;
  void range_end(RangeKind kind, int index, int64_t ns) override;

 private:
  OpStream stream_;
  StreamPlace place_;
  size_t timings_received_ = 0;
};

// One generation of the workload recorded on the dry-run device: the engine's own decode
// loop with the scenario's bugs, no kernel run, nothing allocated. The workload's emulated
// host overhead is not spent while recording (a price for it is the model's business).
OpStream record_generation(const ModelConfig& config, DType dtype, const Workload& workload, const BugSet& bugs);

}  // namespace decodelab
