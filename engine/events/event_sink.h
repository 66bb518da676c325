// What the engine reports about itself, and nothing more than a profiler could observe:
// each op's name, category, tensor shapes/strides/dtypes and the extent of its work;
// host calls (enqueue, sync waits, device-to-host reads); nested ranges; and, after a
// sync, the device start/end of finished ops. The profiling layer implements the sink.
// A sink never learns why an op was issued: no bug names, no scenario toggles.
// All sink calls happen on the host thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/dtype.h"
#include "engine/base/tensor.h"

namespace decodelab {

using OpId = uint64_t;

enum class OpCategory : uint8_t {
  Matmul,
  Attention,
  Norm,
  Rope,
  Activation,
  Elementwise,
  Copy,
  Cast,
  Embedding,
  Sampling,
  Memcpy,  // device <-> host transfers
  Marker,  // zero-work timestamps
  Other,
};
const char* op_category_name(OpCategory category);

struct TensorInfo {
  DType dtype = DType::F32;
  int rank = 0;
  std::array<int64_t, 4> shape{};
  std::array<int64_t, 4> strides{};

  static TensorInfo of(const Tensor& tensor) {
    return TensorInfo{tensor.dtype, tensor.rank, tensor.shape, tensor.strides};
  }
  // Its elements, whatever its strides (0 for a description without a shape).
  int64_t numel() const {
    if (rank <= 0) return 0;
    int64_t count = 1;
    for (int axis = 0; axis < rank; ++axis) count *= shape[static_cast<size_t>(axis)];
    return count;
  }
};

// The extent of an attention op's work, known to the host (the device holds positions).
struct AttentionExtent {
  int64_t query_key_pairs = 0;      // sum over query rows of the keys each one attends to
  int64_t key_positions_read = 0;   // sum over sequences of the cached positions read (K and V)
  int query_heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
};

struct OpDesc {
  OpId id = 0;
  const char* name = "";     // what the code does: "matmul", "attention", "copy", ...
  const char* label = "";    // where in the model: "q_proj", "input_layernorm", ... (may be empty)
  OpCategory category = OpCategory::Other;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  AttentionExtent attention;  // attention ops only
};

enum class HostCallKind : uint8_t { Enqueue, Synchronize, DeviceToHost, HostToDevice };
const char* host_call_kind_name(HostCallKind kind);

struct HostCall {
  HostCallKind kind = HostCallKind::Enqueue;
  const char* name = "";
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  int64_t bytes = 0;
};

enum class RangeKind : uint8_t { Run, Group, Prefill, Step, Layer };
// Inline, like range_name: the CUDA library names its NVTX ranges with them and must not
// depend on the core library.
inline const char* range_kind_name(RangeKind kind) {
  switch (kind) {
    case RangeKind::Run: return "run";
    case RangeKind::Group: return "group";
    case RangeKind::Prefill: return "prefill";
    case RangeKind::Step: return "step";
    case RangeKind::Layer: return "layer";
  }
  return "?";
}
// A range's name wherever it is shown — the Chrome trace, the report and the NVTX range
// an Nsight timeline shows: "run", "group 0", "prefill 0", "step 3", "layer 12".
inline std::string range_name(RangeKind kind, int index) {
  std::string name = range_kind_name(kind);
  if (index >= 0) name.append(" ").append(std::to_string(index));
  return name;
}

// Device execution interval of one enqueued op, on the host's steady clock.
struct OpTiming {
  OpId id = 0;
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void op_enqueued(const OpDesc& op, int64_t host_begin_ns, int64_t host_end_ns) = 0;
  virtual void ops_executed(const std::vector<OpTiming>& timings) = 0;
  virtual void host_call(const HostCall& call) = 0;
  // index: the group, step or layer number (-1 where it has none).
  virtual void range_begin(RangeKind kind, int index, int64_t ns) = 0;
  virtual void range_end(RangeKind kind, int index, int64_t ns) = 0;
  // Before each run the sink sees, outside its timing: a sink may make room there for what
  // the run will report (Trace writes its memory for the next run's records ahead).
  virtual void before_run() {}
};

}  // namespace decodelab
