// Reading the passes: one walk over each pass's ops and host calls.
#include "profiling/diagnosis/pass_reading.h"

#include <algorithm>

#include "profiling/model/cost_model.h"

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

std::string shape_list(const std::array<int64_t, 4>& values, int rank) {
  std::string text = "[";
  for (int axis = 0; axis < rank; ++axis) text.append(axis ? ", " : "").append(std::to_string(values[static_cast<size_t>(axis)]));
  return text + "]";
}

// Whether a K or V view keeps each head's [position, head_dim] block dense: its elements
// 1 apart, its positions head_dim apart (size-1 axes aside). The batch and head axes may
// stride as they like (a preallocated cache is read through such a slice).
bool dense_rows(const TensorInfo& tensor) {
  if (tensor.rank < 2) return true;
  const size_t last = static_cast<size_t>(tensor.rank - 1);
  if (tensor.shape[last] > 1 && tensor.strides[last] != 1) return false;
  return tensor.shape[last - 1] <= 1 || tensor.strides[last - 1] == tensor.shape[last];
}

std::string inputs_text(const OpDesc& op) {
  std::vector<std::string> inputs;
  for (const TensorInfo& input : op.inputs) inputs.push_back(tensor_text(input));
  return op_text(std::string(op.name) + (op.label[0] ? std::string(" ") + op.label : std::string()), inputs);
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
        if (const int64_t rows = op.inputs[0].rank > 0 ? op.inputs[0].shape[0] : 0; rows > reading.rows) {
          reading.rows = rows;
          reading.rows_example = inputs_text(op);
        }
        if (op.inputs[1].dtype == DType::F32 || op.inputs[0].dtype == DType::F32) {
          if (reading.fp32_matmuls++ == 0) reading.fp32_matmul_example = inputs_text(op);
          reading.fp32_weight_bytes += tensor_bytes(op.inputs[1]);
        }
        if (traced.has_device_time()) {
          reading.matmul_seconds += traced.device_seconds();
          reading.matmul_bytes += cost.bytes();
        }
        break;
      case OpCategory::Norm:
        ++reading.norms;
        if (!op.inputs.empty() && op.inputs[0].dtype == DType::F32 && reading.fp32_norms++ == 0) {
          reading.fp32_norm_example = inputs_text(op);
        }
        break;
      case OpCategory::Cast:
        if (reading.casts++ == 0) reading.cast_example = inputs_text(op);
        break;
      case OpCategory::Sampling:
        if (!op.inputs.empty() && op.inputs[0].rank > 0) reading.sequences = op.inputs[0].shape[0];
        break;
      case OpCategory::Attention: {
        ++reading.attention_ops;
        if (op.inputs.size() >= 3) {
          const bool keys_dense = dense_rows(op.inputs[1]);
          if (!keys_dense || !dense_rows(op.inputs[2])) {
            ++reading.strided_attention_ops;
            reading.strided_view = (keys_dense ? "V " : "K ") + tensor_text(op.inputs[keys_dense ? 2 : 1], true);
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
          if (reading.cache_copies++ == 0) reading.copy_example = inputs_text(op);
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
    if (reading.read_example.empty()) reading.read_example = call.name;
    if (pass.call_layers[k] >= 0) ++reading.reads_in_layers;
    reading.wait_seconds += static_cast<double>(call.end_ns - call.begin_ns) * 1e-9;
  }
  return reading;
}

}  // namespace

std::string tensor_text(const TensorInfo& tensor, bool with_strides) {
  std::string text = std::string(dtype_name(tensor.dtype)) + " " + shape_list(tensor.shape, tensor.rank);
  if (with_strides) text += " strides " + shape_list(tensor.strides, tensor.rank);
  return text;
}

std::string op_text(const std::string& name, const std::vector<std::string>& inputs) {
  std::string text = name + " (";
  for (size_t i = 0; i < inputs.size(); ++i) text.append(i ? ", " : "").append(inputs[i]);
  return text + ")";
}

void TraceReading::index_passes() {
  prefills.clear(), steps.clear(), visible_steps.clear();
  for (const auto& groups : runs)
    for (const GroupReading& group : groups) {
      for (const PassReading& pass : group.prefills) prefills.push_back(&pass);
      for (const PassReading& pass : group.steps) {
        steps.push_back(&pass);
        if (pass.shows_layers()) visible_steps.push_back(&pass);
      }
    }
}

TraceReading read_trace(const Trace& trace) {
  TraceReading reading;
  const TraceMetadata& meta = trace.metadata();
  reading.facts.backend = meta.backend;
  reading.facts.device = meta.device;
  reading.facts.model = meta.model.name;
  reading.facts.layers = meta.model.num_hidden_layers;
  reading.facts.dtype = meta.dtype;
  if (reading.facts.dtype.empty()) {  // the embedding table's
    for (const TraceOp& op : trace.ops()) {
      if (op.desc.category == OpCategory::Embedding && !op.desc.inputs.empty()) {
        reading.facts.dtype = dtype_name(op.desc.inputs[0].dtype);
        break;
      }
    }
  }
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
  reading.index_passes();
  return reading;
}

}  // namespace decodelab
