// Reading one pass of a torch.profiler trace: collect its top-level ops, find the layers'
// extent and the attentions, account every op, then the device reads.
#include "profiling/diagnosis/torch_pass.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "profiling/trace/torch_ops.h"

namespace decodelab {

namespace {

struct Attention {
  int64_t begin_ns = 0;
  std::string keys_reader, values_reader;  // the ops that read K and V
  TorchInput keys, values;  // [..., positions, head_dim]
  bool has_values = false;
  int64_t positions = 0;
  int keys_copy = -1, values_copy = -1;  // the clone torch.matmul made of each, if any
};

// A device read: the top-level op that made it (or a bare runtime call), where it began and
// how long the host waited.
struct Read {
  int64_t begin_ns = 0;
  int64_t wait_ns = 0;
  bool device_to_host = false;
  bool scalar = false;  // an aten::_local_scalar_dense: its duration is the wait
  std::string example;
};

bool dense_rows(const TorchInput& tensor) {
  if (tensor.rank() < 2 || !tensor.has_strides()) return true;
  const size_t last = tensor.dims.size() - 1;
  if (tensor.dims[last] > 1 && tensor.strides[last] != 1) return false;
  return tensor.dims[last - 1] <= 1 || tensor.strides[last - 1] == tensor.dims[last];
}

std::string strided_text(const TorchInput& tensor) {
  std::string text = tensor.describe() + " strides [";
  for (size_t i = 0; i < tensor.strides.size(); ++i) text.append(i ? ", " : "").append(std::to_string(tensor.strides[i]));
  return text + "]";
}

int64_t leading(const TorchInput& tensor) {
  int64_t product = 1;
  for (size_t axis = 0; axis + 2 < tensor.dims.size(); ++axis) product *= tensor.dims[axis];
  return product;
}

class PassReader {
 public:
  PassReader(const TorchTrace& trace, TorchThread thread, const TorchModel& model)
      : trace_(trace), thread_(thread), model_(model) {}

  TorchPass read(int64_t begin_ns, int64_t end_ns) const;

 private:
  const TorchEvent& event(int index) const { return trace_.host_events[static_cast<size_t>(index)]; }
  // Time the op kept its device busy: its kernels on a GPU, its own duration on a CPU.
  double busy_seconds(int index) const;
  int outermost_op(int index) const;
  bool waits_for_device(int index) const;
  std::string chain(int site, int leaf) const;
  std::vector<Attention> find_attentions(const std::vector<TorchOp>& ops, int64_t layers_end,
                                         std::vector<int>& scores_matmuls) const;
  template <typename LayerAt, typename Bookkeeping>
  void read_device_reads(const std::vector<int>& scalar_reads, const std::vector<int>& runtime_calls,
                         LayerAt layer_at, Bookkeeping bookkeeping, TorchPass& pass) const;

  const TorchTrace& trace_;
  TorchThread thread_;
  const TorchModel& model_;
};

double PassReader::busy_seconds(int index) const {
  const TorchEvent& op = event(index);
  if (!trace_.gpu) return static_cast<double>(op.duration_ns()) * 1e-9;
  int64_t device_ns = 0;
  for (int at = index; at < op.subtree_end; ++at) {
    const TorchEvent& inner = event(at);
    if (inner.kind == TorchEventKind::Runtime && inner.device_activity >= 0) {
      device_ns += trace_.device_events[static_cast<size_t>(inner.device_activity)].duration_ns();
    }
  }
  return static_cast<double>(device_ns) * 1e-9;
}

bool PassReader::waits_for_device(int index) const {
  const TorchEvent& op = event(index);
  for (int at = index + 1; at < op.subtree_end; ++at) {
    const TorchEvent& inner = event(at);
    if (inner.kind != TorchEventKind::Runtime) continue;
    if (inner.name.find("Synchronize") != std::string::npos) return true;
    if (inner.name.find("Memcpy") == std::string::npos) continue;
    if (inner.device_activity < 0) return true;  // no device activity recorded: a copy is all we know
    if (trace_.device_events[static_cast<size_t>(inner.device_activity)].name.find("DtoH") != std::string::npos) return true;
  }
  return false;
}

int PassReader::outermost_op(int index) const {
  int outer = index;
  for (int at = trace_.enclosing_op(index); at >= 0; at = trace_.enclosing_op(at)) outer = at;
  return outer;
}

// "aten::is_nonzero → aten::item → aten::_local_scalar_dense"
std::string PassReader::chain(int site, int leaf) const {
  std::vector<std::string> names;
  for (int at = leaf; at >= 0; at = event(at).parent) {
    const TorchEvent& link = event(at);
    if (link.kind == TorchEventKind::CpuOp || link.kind == TorchEventKind::Runtime) names.push_back(link.name);
    if (at == site) break;
  }
  std::string text;
  for (auto name = names.rbegin(); name != names.rend(); ++name) text.append(text.empty() ? "" : " → ").append(*name);
  const TorchEvent& last = event(leaf);
  if (last.kind == TorchEventKind::Runtime && last.device_activity >= 0) {
    text += " (" + trace_.device_events[static_cast<size_t>(last.device_activity)].name + ")";
  }
  return text;
}

// Attention: a scores matmul (q·Kᵀ), then the matmul of its probabilities with V (paired by
// the key length); or one scaled_dot_product_attention; in a legacy trace, each softmax.
std::vector<Attention> PassReader::find_attentions(const std::vector<TorchOp>& ops, int64_t layers_end,
                                                   std::vector<int>& scores_matmuls) const {
  std::vector<Attention> attentions;
  std::optional<size_t> open_scores;
  for (const TorchOp& op : ops) {
    const TorchEvent& at = event(op.event);
    if (op.role == TorchRole::AttentionMatmul) {
      if (open_scores && op.a->dims.back() == attentions[*open_scores].positions) {
        Attention& attention = attentions[*open_scores];
        attention.values = *op.b;
        attention.values_reader = at.name;
        attention.has_values = true;
        attention.values_copy = implicit_copy_of(trace_, op.event, *op.b);
        open_scores.reset();
      } else {
        Attention attention;
        attention.begin_ns = at.begin_ns;
        attention.keys = swap_last_axes(*op.b);
        attention.keys_reader = at.name + " (as Kᵀ)";
        attention.positions = op.b->dims.back();
        attention.keys_copy = implicit_copy_of(trace_, op.event, *op.b);
        attentions.push_back(std::move(attention));
        open_scores = attentions.size() - 1;
        scores_matmuls.push_back(op.event);
      }
    } else if (op.role == TorchRole::FusedAttention && op.b && op.c && op.b->rank() >= 2) {
      Attention attention;
      attention.begin_ns = at.begin_ns;
      attention.keys = *op.b, attention.values = *op.c;
      attention.keys_reader = attention.values_reader = at.name;
      attention.has_values = true;
      attention.positions = op.b->dims[op.b->dims.size() - 2];
      attentions.push_back(std::move(attention));
    } else if (op.role == TorchRole::Softmax && !trace_.shapes && at.begin_ns < layers_end) {
      Attention attention;  // a legacy trace: each attention softmax marks a layer
      attention.begin_ns = at.begin_ns;
      attentions.push_back(std::move(attention));
    }
  }
  return attentions;
}

// Device reads, one per top-level op that made them (a .item() on a GPU is a copy and a sync).
template <typename LayerAt, typename Bookkeeping>
void PassReader::read_device_reads(const std::vector<int>& scalar_reads, const std::vector<int>& runtime_calls,
                                   LayerAt layer_at, Bookkeeping bookkeeping, TorchPass& pass) const {
  PassReading& reading = pass.reading;
  std::map<int, Read> reads;  // site → read
  for (int index : scalar_reads) {
    // On a GPU, a scalar read of a host tensor (a length kept on the CPU) waits for nothing:
    // only one that copies from the device or synchronizes is a device read.
    if (trace_.gpu_runtime && !waits_for_device(index)) continue;
    Read& read = reads[outermost_op(index)];
    read.begin_ns = event(index).begin_ns;
    read.wait_ns = event(index).duration_ns();
    read.device_to_host = read.scalar = true;
    read.example = chain(outermost_op(index), index);
  }
  for (int index : runtime_calls) {
    const TorchEvent& call = event(index);
    const TorchEvent* activity = call.device_activity >= 0 ? &trace_.device_events[static_cast<size_t>(call.device_activity)] : nullptr;
    const bool copy = activity && activity->kind == TorchEventKind::Memcpy;
    const bool to_host = copy && activity->name.find("DtoH") != std::string::npos;
    if (!to_host && call.name.find("Synchronize") == std::string::npos) continue;
    const int site = outermost_op(index);
    const bool added = reads.find(site) == reads.end();
    Read& read = reads[site];
    if (added) read.begin_ns = call.begin_ns, read.example = chain(site, index);
    read.device_to_host = read.device_to_host || to_host;
    if (!read.scalar) read.wait_ns += call.duration_ns();
  }
  for (const auto& [site, read] : reads) {
    if (bookkeeping(site, read.begin_ns)) {  // the loop's own counters and input checks
      if (reading.library_reads++ == 0) reading.library_read_example = read.example;
      continue;
    }
    (read.device_to_host ? reading.device_reads : reading.syncs) += 1;
    const int layer = layer_at(read.begin_ns);
    if (layer >= 0) ++reading.reads_in_layers;
    reading.wait_seconds += static_cast<double>(read.wait_ns) * 1e-9;
    if (reading.read_example.empty()) reading.read_example = read.example;
    pass.calls.push_back(static_cast<size_t>(site));
    pass.call_layers.push_back(layer);
  }
}

TorchPass PassReader::read(int64_t begin_ns, int64_t end_ns) const {
  TorchPass pass;
  pass.begin_ns = begin_ns, pass.end_ns = end_ns;
  PassReading& reading = pass.reading;
  const auto& events = trace_.host_events;
  auto first = std::lower_bound(events.begin() + thread_.first, events.begin() + thread_.end, begin_ns,
                                [](const TorchEvent& e, int64_t ns) { return e.begin_ns < ns; });
  std::vector<TorchOp> ops;
  std::vector<int> scalar_reads, runtime_calls;
  for (auto it = first; it != events.begin() + thread_.end && it->begin_ns < end_ns; ++it) {
    const int index = static_cast<int>(it - events.begin());
    if (it->kind == TorchEventKind::Runtime) {
      runtime_calls.push_back(index);
      if (it->name.find("GraphLaunch") != std::string::npos) {  // cudaGraphLaunch, hipGraphLaunch
        ++reading.opaque_ops;
      }
    }
    if (it->kind != TorchEventKind::CpuOp) continue;
    if (it->name == "aten::_local_scalar_dense") scalar_reads.push_back(index);
    if (trace_.enclosing_op(index) < 0) ops.push_back(classify_torch_op(trace_, index));
  }

  // Where the layers end: the lm_head, the last projection onto the vocabulary.
  int64_t layers_begin = -1, layers_end = end_ns;
  for (const TorchOp& op : ops) {
    if (op.role != TorchRole::Projection) continue;
    if (layers_begin < 0) layers_begin = event(op.event).begin_ns;
    if (trace_.shapes ? op.out_features == model_.vocab : true) {
      layers_end = event(op.event).begin_ns;
      if (trace_.shapes && model_.vocab > 0) {
        pass.output = true;
        pass.output_rows = op.rows;
        pass.output_example = op.describe(trace_);
      }
    }
  }

  std::vector<int> scores_matmuls;  // the first matmul of each attention
  const std::vector<Attention> attentions = find_attentions(ops, layers_end, scores_matmuls);
  auto layer_at = [&](int64_t ns) {
    if (layers_begin < 0 || ns < layers_begin || ns >= layers_end) return -1;
    const auto begun = std::count_if(attentions.begin(), attentions.end(), [ns](const Attention& a) { return a.begin_ns <= ns; });
    return std::max<int>(0, static_cast<int>(begun) - 1);
  };
  auto attention_after = [&](int64_t ns) -> const Attention* {
    for (const Attention& attention : attentions)
      if (attention.begin_ns >= ns) return &attention;
    return nullptr;
  };

  reading.attention_ops = static_cast<int>(attentions.size());
  for (const Attention& attention : attentions) {
    reading.key_positions = std::max(reading.key_positions, attention.positions);
    bool strided = false;
    for (const auto& [view, copy, name] :
         {std::tuple{&attention.keys, attention.keys_copy, "K read by " + attention.keys_reader + ": "},
          std::tuple{&attention.values, attention.values_copy, "V read by " + attention.values_reader + ": "}}) {
      if (view == &attention.values && !attention.has_values) continue;
      if (copy >= 0) {  // torch.matmul copied the view it could not flatten
        if (reading.cache_copies++ == 0) {
          reading.copy_example = chain(outermost_op(copy), copy) + " (" + event(copy).inputs[0].describe() + ")";
        }
        reading.cache_copy_bytes += 2.0 * static_cast<double>(view->bytes());
      } else if (trace_.strides && view->has_strides() && !dense_rows(*view) && !strided) {
        strided = true;
        if (reading.strided_attention_ops++ == 0) reading.strided_view = name + strided_text(*view);
      }
    }
  }

  std::optional<int64_t> sequences;
  int64_t largest_cast = 0;
  bool in_attention = false;  // after a scores matmul, before its second matmul
  for (const TorchOp& op : ops) {
    const TorchEvent& at = event(op.event);
    const int layer = layer_at(at.begin_ns);
    pass.ops.push_back(static_cast<size_t>(op.event));
    pass.op_layers.push_back(layer);
    if (layer >= 0) reading.layers.insert(layer);
    const bool before_head = at.begin_ns < layers_end;
    switch (op.role) {
      case TorchRole::Embedding:
        // [batch, tokens] ids; flattened [tokens] ids (a serving engine's batch) leave the
        // sequences to the lm_head or the sampling op.
        if (!sequences && op.b && op.b->rank() >= 2) sequences = op.b->dims[0];
        break;
      case TorchRole::Projection: {
        ++reading.matmuls;
        if (!op.a || !op.b) break;
        if (op.rows > reading.rows) {
          reading.rows = op.rows;
          reading.rows_example = op.describe(trace_);
        }
        if (torch_float_kind(op.a->type) == "fp32" || torch_float_kind(op.b->type) == "fp32") {
          if (reading.fp32_matmuls++ == 0) reading.fp32_matmul_example = op.describe(trace_);
          reading.fp32_weight_bytes += static_cast<double>(op.b->bytes());
        }
        const double flops = 2.0 * static_cast<double>(op.rows * op.in_features * op.out_features);
        const double bytes = static_cast<double>(op.a->bytes() + op.b->bytes() + op.rows * op.out_features * torch_type_size(op.a->type));
        reading.flops += flops, reading.bytes += bytes;
        reading.matmul_seconds += busy_seconds(op.event);
        reading.matmul_bytes += bytes;
        break;
      }
      case TorchRole::AttentionMatmul: {
        in_attention = std::find(scores_matmuls.begin(), scores_matmuls.end(), op.event) != scores_matmuls.end();
        const TorchInput &x = *op.a, &y = *op.b;
        const int64_t batch = std::max(leading(x), leading(y));
        const int64_t m = x.dims[x.dims.size() - 2], k = x.dims.back(), n = y.dims.back();
        const double bytes = static_cast<double>(x.bytes() + y.bytes() + batch * m * n * torch_type_size(x.type));
        reading.flops += 2.0 * static_cast<double>(batch * m * n * k);
        reading.bytes += bytes;
        reading.attention_seconds += busy_seconds(op.event);
        reading.attention_bytes += bytes;
        break;
      }
      case TorchRole::FusedAttention:
        if (op.a && op.b && op.c) {
          const double bytes = static_cast<double>(2 * op.a->bytes() + op.b->bytes() + op.c->bytes());
          reading.flops += 4.0 * static_cast<double>(op.a->elements()) * static_cast<double>(op.b->dims[op.b->dims.size() - 2]);
          reading.bytes += bytes;
          reading.attention_seconds += busy_seconds(op.event);
          reading.attention_bytes += bytes;
        }
        break;
      case TorchRole::Norm:
        if (!before_head) break;
        ++reading.norms;
        if (op.a && torch_float_kind(op.a->type) == "fp32" && reading.fp32_norms++ == 0) {
          reading.fp32_norm_example = op.describe(trace_);
        }
        break;
      case TorchRole::Softmax:
        if (!in_attention) break;  // a softmax over the logits is sampling, not the model
        ++reading.softmaxes;
        if (torch_float_kind(op.computed_type) == "fp32") ++reading.fp32_softmaxes;
        break;
      case TorchRole::Cast:
        if (!before_head) break;  // the logits converted for sampling
        ++reading.casts;
        if (op.a && op.a->elements() > largest_cast) {  // the activations, not a RoPE table
          largest_cast = op.a->elements();
          reading.cast_example = op.describe(trace_);
        }
        break;
      case TorchRole::LayoutCopy: {
        const Attention* fed = op.a ? attention_after(at.begin_ns) : nullptr;
        if (!fed || fed->positions < 2) break;
        const bool keys = same_matrices(*op.a, fed->keys) && op.a->type == fed->keys.type;
        const bool values = fed->has_values && same_matrices(*op.a, fed->values) && op.a->type == fed->values.type;
        if (!keys && !values) break;
        if (reading.cache_copies++ == 0) reading.copy_example = op.describe(trace_);
        reading.cache_copy_bytes += 2.0 * static_cast<double>(op.a->bytes());
        break;
      }
      case TorchRole::Sampling:
        if (op.a && op.a->rank() >= 1 && op.a->dims.back() == model_.vocab && !torch_float_kind(op.a->type).empty()) {
          sequences = op.a->rank() >= 2 ? op.a->dims[0] : 1;
          if (!pass.output) pass.output_rows = *sequences, pass.output_example = op.describe(trace_);
          pass.output = true;
        }
        break;
      case TorchRole::Other: break;
    }
  }
  if (!sequences && pass.output && layers_end < end_ns && trace_.shapes) {
    // No embedding or sampling in the pass (a replayed graph): a flattened [tokens, hidden]
    // lm_head input of a decode batch has a row per sequence, a [batch, tokens, hidden] one its batch.
    for (const TorchOp& op : ops) {
      if (op.role == TorchRole::Projection && op.a && event(op.event).begin_ns == layers_end) {
        sequences = op.a->rank() >= 3 ? op.a->dims[0] : op.rows;
      }
    }
  }
  reading.sequences = trace_.shapes ? sequences.value_or(1) : 0;
  reading.bytes += reading.cache_copy_bytes;

  // A generate loop's own bookkeeping: `bool(counter >= n)` / `bool(flags.max() == 0)` — a
  // comparison of a 0-dim integer tensor read as a bool (transformers' generate() decides to
  // stop and checks its cache position so every step) — and checks of the inputs before the
  // first projection (its attention-mask test). Not a read of what the model computed.
  auto bookkeeping = [&](int site, int64_t ns) {
    if (layers_begin >= 0 && ns < layers_begin) return true;
    static const char* const kCounterOps[] = {"aten::eq", "aten::ne", "aten::ge", "aten::gt", "aten::le",
                                              "aten::lt", "aten::add", "aten::sub"};
    auto counter_op = [&](const TorchEvent& op) {
      const bool arithmetic = std::any_of(std::begin(kCounterOps), std::end(kCounterOps),
                                          [&](const char* name) { return op.name == name; });
      if (!arithmetic || op.inputs.empty()) return false;
      const TorchInput& counter = op.inputs[0];
      return counter.rank() == 0 && counter.is_tensor() && torch_float_kind(counter.type).empty() &&
             counter.type != "bool";
    };
    if (counter_op(event(site))) return true;  // the read happened inside the comparison itself
    const std::string& name = event(site).name;
    if (name != "aten::is_nonzero" && name != "aten::item" && name != "aten::_local_scalar_dense") return false;
    const TorchOp* previous = nullptr;
    for (const TorchOp& op : ops) {  // the op that made the value (reads of values made before it skipped)
      if (op.event >= site) break;
      const std::string& before = event(op.event).name;
      if (before == "aten::item" || before == "aten::is_nonzero" || before == "aten::_local_scalar_dense") continue;
      previous = &op;
    }
    return previous && counter_op(event(previous->event));
  };
  read_device_reads(scalar_reads, runtime_calls, layer_at, bookkeeping, pass);
  return pass;
}

}  // namespace

TorchPass read_torch_pass(const TorchTrace& trace, TorchThread thread, const TorchModel& model, int64_t begin_ns,
                          int64_t end_ns) {
  return PassReader(trace, thread, model).read(begin_ns, end_ns);
}

}  // namespace decodelab
