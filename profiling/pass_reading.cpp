// Reading the passes: one walk over each pass's ops and host calls.
#include "profiling/pass_reading.h"

#include <algorithm>

#include "profiling/cost_model.h"

namespace decodelab {

namespace {

bool same_view(const TensorInfo& a, const TensorInfo& b) {
  if (a.dtype != b.dtype || a.rank != b.rank) return false;
  for (size_t axis = 0; axis < static_cast<size_t>(a.rank); ++axis) {
    if (a.shape[axis] != b.shape[axis] || a.strides[axis] != b.strides[axis]) return false;
  }
  return true;
}

bool same_shape(const TensorInfo& a, const TensorInfo& b) {
  if (a.rank != b.rank) return false;
  for (size_t axis = 0; axis < static_cast<size_t>(a.rank); ++axis) {
    if (a.shape[axis] != b.shape[axis]) return false;
  }
  return true;
}

bool contiguous(const TensorInfo& tensor) {
  int64_t expected = 1;
  for (int axis = tensor.rank - 1; axis >= 0; --axis) {
    const size_t a = static_cast<size_t>(axis);
    if (tensor.shape[a] != 1 && tensor.strides[a] != expected) return false;
    expected *= tensor.shape[a];
  }
  return true;
}

int64_t innermost_stride(const TensorInfo& tensor) {
  if (tensor.rank == 0 || tensor.shape[static_cast<size_t>(tensor.rank - 1)] <= 1) return 1;
  return tensor.strides[static_cast<size_t>(tensor.rank - 1)];
}

PassReading read_pass(const Trace& trace, const PassOutline& pass) {
  PassReading reading;
  reading.pass = &pass;
  const std::vector<TraceOp>& ops = trace.ops();

  // What attention reads, per layer: a copy whose result is one of these fed it.
  std::vector<std::pair<int, const TensorInfo*>> attention_inputs;
  for (size_t k = 0; k < pass.ops.size(); ++k) {
    const OpDesc& op = ops[pass.ops[k]].desc;
    if (op.category != OpCategory::Attention || op.inputs.size() < 3) continue;
    attention_inputs.emplace_back(pass.op_layers[k], &op.inputs[1]);
    attention_inputs.emplace_back(pass.op_layers[k], &op.inputs[2]);
  }

  for (size_t k = 0; k < pass.ops.size(); ++k) {
    const TraceOp& traced = ops[pass.ops[k]];
    const OpDesc& op = traced.desc;
    const int layer = pass.op_layers[k];
    if (layer >= 0) reading.layers.insert(layer);
    if (op.category == OpCategory::Marker) continue;
    if (op.category == OpCategory::Other && op.inputs.empty() && op.outputs.empty()) ++reading.opaque_ops;
    const OpCost cost = op_cost(op);
    reading.flops += cost.flops;
    reading.bytes += cost.bytes();
    switch (op.category) {
      case OpCategory::Matmul:
        if (op.inputs.size() < 2) break;
        ++reading.matmuls;
        reading.rows = std::max(reading.rows, op.inputs[0].rank > 0 ? op.inputs[0].shape[0] : 0);
        if (op.inputs[1].dtype == DType::F32 || op.inputs[0].dtype == DType::F32) {
          ++reading.fp32_matmuls;
          reading.fp32_weight_bytes += tensor_bytes(op.inputs[1]);
        }
        if (traced.has_device_time()) {
          reading.matmul_seconds += traced.device_seconds();
          reading.matmul_bytes += cost.bytes();
        }
        break;
      case OpCategory::Norm:
        ++reading.norms;
        if (!op.inputs.empty() && op.inputs[0].dtype == DType::F32) ++reading.fp32_norms;
        break;
      case OpCategory::Cast: ++reading.casts; break;
      case OpCategory::Sampling:
        if (!op.inputs.empty() && op.inputs[0].rank > 0) reading.sequences = op.inputs[0].shape[0];
        break;
      case OpCategory::Attention: {
        ++reading.attention_ops;
        if (op.inputs.size() >= 3) {
          const int64_t stride = std::max(innermost_stride(op.inputs[1]), innermost_stride(op.inputs[2]));
          if (stride != 1) {
            ++reading.strided_attention_ops;
            reading.head_dim_stride = stride;
          }
        }
        reading.key_positions = std::max(reading.key_positions, op.attention.key_positions_read);
        if (traced.has_device_time()) {
          reading.attention_seconds += traced.device_seconds();
          reading.attention_bytes += cost.bytes();
        }
        break;
      }
      case OpCategory::Copy: {
        // A .contiguous(): a strided view copied into a dense tensor of the same shape
        // that attention then reads, in the same layer.
        if (op.inputs.size() != 1 || op.outputs.size() != 1) break;
        const TensorInfo& source = op.inputs[0];
        const TensorInfo& result = op.outputs[0];
        if (contiguous(source) || !contiguous(result) || !same_shape(source, result)) break;
        const bool feeds_attention = std::any_of(attention_inputs.begin(), attention_inputs.end(), [&](const auto& input) {
          return input.first == layer && same_view(*input.second, result);
        });
        if (feeds_attention) {
          ++reading.cache_copies;
          reading.cache_copy_bytes += cost.bytes();
        }
        break;
      }
      default: break;
    }
  }
  if (reading.sequences > 0) reading.key_positions /= reading.sequences;

  const std::vector<HostCall>& calls = trace.host_calls();
  for (size_t k = 0; k < pass.calls.size(); ++k) {
    const HostCall& call = calls[pass.calls[k]];
    if (call.kind != HostCallKind::DeviceToHost && call.kind != HostCallKind::Synchronize) continue;
    (call.kind == HostCallKind::DeviceToHost ? reading.device_reads : reading.syncs) += 1;
    if (pass.call_layers[k] >= 0) ++reading.reads_in_layers;
    reading.wait_seconds += static_cast<double>(call.end_ns - call.begin_ns) * 1e-9;
  }
  return reading;
}

}  // namespace

TraceReading read_trace(const Trace& trace) {
  TraceReading reading;
  reading.outline = outline_trace(trace);
  for (const RunOutline& run : reading.outline.runs) {
    std::vector<GroupReading>& groups = reading.runs.emplace_back();
    for (const GroupOutline& group : run.groups) {
      GroupReading& read = groups.emplace_back();
      read.group = &group;
      for (const PassOutline& pass : group.passes) (pass.prefill ? read.prefills : read.steps).push_back(read_pass(trace, pass));
      for (size_t call : group.calls) read.uploads += trace.host_calls()[call].kind == HostCallKind::HostToDevice;
    }
  }
  // Pointers only after every vector stopped growing.
  for (const auto& groups : reading.runs)
    for (const GroupReading& group : groups) {
      for (const PassReading& pass : group.prefills) reading.prefills.push_back(&pass);
      for (const PassReading& pass : group.steps) {
        reading.steps.push_back(&pass);
        if (pass.shows_layers()) reading.visible_steps.push_back(&pass);
      }
    }
  return reading;
}

}  // namespace decodelab
