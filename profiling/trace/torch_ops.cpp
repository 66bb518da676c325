// Recognising a torch op's role: name sets for the families, shapes for the rest.
#include "profiling/trace/torch_ops.h"

#include <algorithm>
#include <initializer_list>

namespace decodelab {

namespace {

bool one_of(const std::string& name, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&name](const char* candidate) { return name == candidate; });
}

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

const TorchInput* tensor_at(const TorchEvent& event, size_t index) {
  return index < event.inputs.size() && event.inputs[index].is_tensor() ? &event.inputs[index] : nullptr;
}

// The first descendant named one of `names` (pre-order), or -1.
int find_inside(const TorchTrace& trace, int event, std::initializer_list<const char*> names) {
  const TorchEvent& outer = trace.host_events[static_cast<size_t>(event)];
  for (int at = event + 1; at < outer.subtree_end; ++at) {
    if (one_of(trace.host_events[static_cast<size_t>(at)].name, names)) return at;
  }
  return -1;
}

// An fp32 <-> half copy_ at or inside `event` (a copy_'s inputs are [destination, source]).
int converting_copy(const TorchTrace& trace, int event) {
  const TorchEvent& outer = trace.host_events[static_cast<size_t>(event)];
  for (int at = event; at < outer.subtree_end; ++at) {
    const TorchEvent& inner = trace.host_events[static_cast<size_t>(at)];
    if (inner.name != "aten::copy_") continue;
    const TorchInput* destination = tensor_at(inner, 0);
    const TorchInput* source = tensor_at(inner, 1);
    if (!destination || !source || source->elements() <= 1) continue;  // scalar casts are no traffic
    const std::string to = torch_float_kind(destination->type), from = torch_float_kind(source->type);
    if (!to.empty() && !from.empty() && to != from && (to == "fp32" || from == "fp32")) return at;
  }
  return -1;
}

}  // namespace

TorchInput swap_last_axes(const TorchInput& tensor) {
  TorchInput swapped = tensor;
  if (swapped.rank() >= 2) {
    std::swap(swapped.dims[swapped.dims.size() - 1], swapped.dims[swapped.dims.size() - 2]);
    if (swapped.has_strides()) std::swap(swapped.strides[swapped.strides.size() - 1], swapped.strides[swapped.strides.size() - 2]);
  }
  return swapped;
}

bool same_matrices(const TorchInput& a, const TorchInput& b) {
  if (a.rank() < 2 || b.rank() < 2 || a.elements() != b.elements()) return false;
  return a.dims[a.dims.size() - 1] == b.dims[b.dims.size() - 1] && a.dims[a.dims.size() - 2] == b.dims[b.dims.size() - 2];
}

std::string TorchOp::describe(const TorchTrace& trace) const {
  const TorchEvent& op = trace.host_events[static_cast<size_t>(event)];
  std::string text = op.name + " (";
  bool first = true;
  for (const TorchInput* input : {a, b, c}) {
    if (!input) continue;
    text.append(first ? "" : ", ").append(input->describe());
    first = false;
  }
  if (role == TorchRole::Cast) text += " → " + computed_type;
  return text + ")";
}

TorchOp classify_torch_op(const TorchTrace& trace, int event) {
  const TorchEvent& op = trace.host_events[static_cast<size_t>(event)];
  const std::string& name = op.name;
  TorchOp result;
  result.event = event;

  if (name == "aten::embedding") {
    result.role = TorchRole::Embedding;
    result.a = tensor_at(op, 0);
    result.b = tensor_at(op, 1);
    return result;
  }
  const bool linear = name == "aten::linear";
  const bool with_bias_first = one_of(name, {"aten::addmm", "aten::baddbmm"});
  if (linear || with_bias_first || one_of(name, {"aten::matmul", "aten::mm", "aten::bmm"})) {
    const TorchInput* x = tensor_at(op, with_bias_first ? 1 : 0);
    const TorchInput* y = tensor_at(op, with_bias_first ? 2 : 1);
    if (x && y && y->rank() == 2 && x->rank() >= 1) {  // activations times a weight
      result.role = TorchRole::Projection;
      result.a = x, result.b = y;
      result.in_features = linear ? y->dims[1] : y->dims[0];
      result.out_features = linear ? y->dims[0] : y->dims[1];
      result.rows = result.in_features > 0 ? x->elements() / result.in_features : 0;
    } else if (x && y && x->rank() >= 3 && y->rank() >= 3 && x->dims.back() > 1 && !torch_float_kind(x->type).empty()) {
      // Both batched, over a real inner axis: q·Kᵀ or probabilities·V. An outer product
      // ([..., d, 1] · [..., 1, n], how Hugging Face builds its RoPE angles) is not attention.
      result.role = TorchRole::AttentionMatmul;
      result.a = x, result.b = y;
    } else if (!trace.shapes && (linear || name == "aten::addmm")) {
      result.role = TorchRole::Projection;  // a legacy trace: the name is all there is
    }
    return result;
  }
  if (contains(name, "scaled_dot_product") || contains(name, "flash_attention") || contains(name, "efficient_attention")) {
    result.role = TorchRole::FusedAttention;
    result.a = tensor_at(op, 0), result.b = tensor_at(op, 1), result.c = tensor_at(op, 2);
    return result;
  }
  if (one_of(name, {"aten::layer_norm", "aten::native_layer_norm", "aten::rms_norm", "aten::_fused_rms_norm",
                    "aten::group_norm", "aten::batch_norm", "aten::instance_norm", "aten::norm",
                    "aten::linalg_vector_norm", "aten::frobenius_norm"})) {
    result.role = TorchRole::Norm;
    result.a = tensor_at(op, 0);
    return result;
  }
  if (one_of(name, {"aten::rsqrt", "aten::sqrt"})) {  // the statistic of a hand-written RMSNorm
    const TorchInput* x = tensor_at(op, 0);
    if (x && x->rank() >= 2 && x->dims.back() == 1) {
      result.role = TorchRole::Norm;
      result.a = x;
    }
    return result;
  }
  if (one_of(name, {"aten::softmax", "aten::_softmax", "aten::log_softmax", "aten::_log_softmax", "aten::special_softmax"})) {
    result.role = TorchRole::Softmax;
    result.a = tensor_at(op, 0);
    const int inner = find_inside(trace, event, {"aten::_softmax", "aten::_log_softmax"});  // softmax(x, dtype=...) casts first
    const TorchInput* computed = inner >= 0 ? tensor_at(trace.host_events[static_cast<size_t>(inner)], 0) : result.a;
    result.computed_type = computed ? computed->type : "";
    return result;
  }
  if (one_of(name, {"aten::to", "aten::_to_copy", "aten::type_as", "aten::copy_"})) {
    if (const int copy = converting_copy(trace, event); copy >= 0) {
      const TorchEvent& inner = trace.host_events[static_cast<size_t>(copy)];
      result.role = TorchRole::Cast;
      result.a = tensor_at(inner, 1);
      result.computed_type = inner.inputs[0].type;
    }
    return result;
  }
  if (name == "aten::contiguous") {  // dispatched only for a tensor that is not contiguous
    result.role = TorchRole::LayoutCopy;
    result.a = tensor_at(op, 0);
    return result;
  }
  if (one_of(name, {"aten::reshape", "aten::flatten"})) {  // a view when it can, a clone when it cannot
    if (find_inside(trace, event, {"aten::clone", "aten::copy_"}) >= 0) {
      result.role = TorchRole::LayoutCopy;
      result.a = tensor_at(op, 0);
    }
    return result;
  }
  if (name == "aten::clone") {
    const TorchInput* x = tensor_at(op, 0);
    if (x && x->has_strides() && !x->contiguous()) {
      result.role = TorchRole::LayoutCopy;
      result.a = x;
    }
    return result;
  }
  if (name.find("::") != std::string::npos && name.rfind("aten::", 0) != 0) {
    // A custom op of a serving engine (vllm::rocm_unquantized_gemm, a fused kernel's
    // wrapper): read as the projection it runs, if it runs one.
    if (const int inner = find_inside(trace, event, {"aten::linear", "aten::addmm", "aten::mm", "aten::matmul"}); inner >= 0) {
      TorchOp projection = classify_torch_op(trace, inner);
      if (projection.role == TorchRole::Projection) return projection;
    }
    return result;
  }
  if (one_of(name, {"aten::argmax", "aten::topk", "aten::multinomial", "aten::sort", "aten::argsort"}) ||
      (name == "aten::max" && op.inputs.size() >= 2)) {
    result.role = TorchRole::Sampling;
    result.a = tensor_at(op, 0);
    return result;
  }
  return result;
}

int implicit_copy_of(const TorchTrace& trace, int matmul_event, const TorchInput& operand) {
  const TorchEvent& matmul = trace.host_events[static_cast<size_t>(matmul_event)];
  for (int at = matmul_event + 1; at < matmul.subtree_end; ++at) {
    const TorchEvent& inner = trace.host_events[static_cast<size_t>(at)];
    if (inner.name != "aten::clone" && inner.name != "aten::contiguous") continue;
    const TorchInput* copied = tensor_at(inner, 0);
    if (copied && same_matrices(*copied, operand)) return at;
    at = inner.subtree_end - 1;  // a clone of something else: skip what it contains
  }
  return -1;
}

}  // namespace decodelab
