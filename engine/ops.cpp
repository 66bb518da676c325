// The op front layer: ids, descriptions for the sink, emulated dispatch cost, enqueue.
#include "engine/ops.h"

#include <algorithm>
#include <climits>

#include "engine/base/clock.h"
#include "engine/base/errors.h"
#include "engine/numerics.h"
#include "engine/events/nvtx_ranges.h"

namespace decodelab {

namespace {

std::vector<TensorInfo> infos(std::initializer_list<const Tensor*> tensors) {
  std::vector<TensorInfo> result;
  result.reserve(tensors.size());
  for (const Tensor* tensor : tensors) result.push_back(TensorInfo::of(*tensor));
  return result;
}

}  // namespace

Ops::Ops(Backend& backend, EventSink* sink, double host_overhead_us)
    : backend_(backend), sink_(sink), host_overhead_ns_(static_cast<int64_t>(host_overhead_us * 1000.0)) {}

OpId Ops::begin_op(int64_t& host_begin_ns) {
  host_begin_ns = now_ns();
  if (host_overhead_ns_ > 0) {
    // Emulated framework dispatch: the host is busy, as an eager framework's would be.
    const int64_t until = host_begin_ns + host_overhead_ns_;
    while (now_ns() < until) {
    }
  }
  return next_id_++;
}

void Ops::describe(OpDesc&& desc, int64_t host_begin_ns) {
  if (sink_ && !capturing_) sink_->op_enqueued(desc, host_begin_ns, now_ns());
}

#define DECODELAB_DESCRIBE(...)                       \
  do {                                                \
    if (sink_) describe(OpDesc{__VA_ARGS__, AttentionExtent{}}, begin); \
  } while (0)

void Ops::embedding(const Tensor& table, const Tensor& tokens, const Tensor& positions, int rows_per_sequence,
                    const Tensor& out) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.embedding(table, tokens, positions, rows_per_sequence, out, id);
  DECODELAB_DESCRIBE(id, "embedding", "embed_tokens", OpCategory::Embedding, infos({&table, &tokens, &positions}),
                     infos({&out}));
  if (check_numerics_) check_outputs("embedding", "embed_tokens", {&out});
}

void Ops::rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out, const char* label) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.rmsnorm(x, weight, eps, out, id);
  DECODELAB_DESCRIBE(id, "rmsnorm", label, OpCategory::Norm, infos({&x, &weight}), infos({&out}));
  if (check_numerics_) check_outputs("rmsnorm", label, {&out});
}

void Ops::matmul(const Tensor& x, const Tensor& weight, const Tensor& out, const char* label) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.matmul(x, weight, out, id);
  DECODELAB_DESCRIBE(id, "matmul", label, OpCategory::Matmul, infos({&x, &weight}), infos({&out}));
  if (check_numerics_) check_outputs("matmul", label, {&out});
}

void Ops::rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq, int head_dim) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.rope(q, k, positions, inv_freq, head_dim, id);
  DECODELAB_DESCRIBE(id, "rope", "rotary_emb", OpCategory::Rope, infos({&q, &k, &positions, &inv_freq}),
                     infos({&q, &k}));
  if (check_numerics_) check_outputs("rope", "rotary_emb", {&q, &k});
}

void Ops::kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache,
                   const Tensor& positions, int rows_per_sequence) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.kv_store(k_new, v_new, k_cache, v_cache, positions, rows_per_sequence, id);
  DECODELAB_DESCRIBE(id, "kv_store", "kv_cache", OpCategory::Copy, infos({&k_new, &v_new, &positions}),
                     infos({&k_cache, &v_cache}));
}

void Ops::attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions,
                    int rows_per_sequence, float scale, const Tensor& out, const AttentionExtent& extent) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.attention(q, k_cache, v_cache, positions, rows_per_sequence, scale, out, id);
  if (sink_) {
    OpDesc desc{id, "attention", "self_attn", OpCategory::Attention, infos({&q, &k_cache, &v_cache, &positions}),
                infos({&out}), extent};
    describe(std::move(desc), begin);
  }
  if (check_numerics_) check_outputs("attention", "self_attn", {&out});
}

void Ops::swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.swiglu(gate, up, out, id);
  DECODELAB_DESCRIBE(id, "swiglu", "act_fn", OpCategory::Activation, infos({&gate, &up}), infos({&out}));
  if (check_numerics_) check_outputs("swiglu", "act_fn", {&out});
}

void Ops::add(const Tensor& a, const Tensor& b, const Tensor& out, const char* label) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.add(a, b, out, id);
  DECODELAB_DESCRIBE(id, "add", label, OpCategory::Elementwise, infos({&a, &b}), infos({&out}));
  if (check_numerics_) check_outputs("add", label, {&out});
}

void Ops::argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.argmax(logits, tokens, positions, id);
  DECODELAB_DESCRIBE(id, "argmax", "greedy", OpCategory::Sampling, infos({&logits, &positions}), infos({&tokens}));
}

void Ops::cast(const Tensor& x, const Tensor& out, const char* label) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.cast(x, out, id);
  DECODELAB_DESCRIBE(id, "cast", label, OpCategory::Cast, infos({&x}), infos({&out}));
  if (check_numerics_) check_outputs("cast", label, {&out});
}

void Ops::copy(const Tensor& src, const Tensor& out, const char* label) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.copy(src, out, id);
  DECODELAB_DESCRIBE(id, "copy", label, OpCategory::Copy, infos({&src}), infos({&out}));
  if (check_numerics_) check_outputs("copy", label, {&out});
}

void Ops::fill_positions(const Tensor& out, int start, int period) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.fill_positions(out, start, period, id);
  DECODELAB_DESCRIBE(id, "fill_positions", "positions", OpCategory::Other, {}, infos({&out}));
}

void Ops::advance_positions(const Tensor& positions) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.advance_positions(positions, id);
  DECODELAB_DESCRIBE(id, "advance_positions", "positions", OpCategory::Other, infos({&positions}),
                     infos({&positions}));
}

#undef DECODELAB_DESCRIBE

void Ops::upload(void* device_destination, const void* host_source, size_t bytes) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.upload_async(device_destination, host_source, bytes, id);
  if (sink_) {
    const Tensor view = Tensor::contiguous(device_destination, DType::I32, {static_cast<int64_t>(bytes / 4)});
    describe(OpDesc{id, "memcpy_htod", "", OpCategory::Memcpy, {}, infos({&view}), AttentionExtent{}}, begin);
    sink_->host_call(HostCall{HostCallKind::HostToDevice, "memcpy_htod", begin, now_ns(), static_cast<int64_t>(bytes)});
  }
}

void Ops::read_to_host(void* host_destination, const void* device_source, size_t bytes, bool pinned,
                       const char* label) {
  int64_t begin;
  const OpId id = begin_op(begin);
  if (sink_) {
    const Tensor view =
        Tensor::contiguous(const_cast<void*>(device_source), DType::I32, {static_cast<int64_t>((bytes + 3) / 4)});
    describe(OpDesc{id, "memcpy_dtoh", label, OpCategory::Memcpy, infos({&view}), {}, AttentionExtent{}}, begin);
  }
  backend_.copy_to_host(host_destination, device_source, bytes, pinned, id);
  if (sink_) {
    sink_->host_call(HostCall{HostCallKind::DeviceToHost, "memcpy_dtoh", begin, now_ns(), static_cast<int64_t>(bytes)});
  }
  // No collect_timings() here: taking timings costs host time that depends on the timer
  // (CUPTI flushes its buffers), which a read inside a step would add to the step.
}

void Ops::synchronize() {
  const int64_t begin = now_ns();
  backend_.synchronize();
  if (sink_) sink_->host_call(HostCall{HostCallKind::Synchronize, "synchronize", begin, now_ns(), 0});
  collect_timings();
}

OpId Ops::marker(const char* label) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.marker(id);
  pending_markers_[id] = true;
  if (sink_) describe(OpDesc{id, "marker", label, OpCategory::Marker, {}, {}, AttentionExtent{}}, begin);
  return id;
}

std::optional<int64_t> Ops::marker_time_ns(OpId marker) const {
  auto found = marker_times_.find(marker);
  if (found == marker_times_.end()) return std::nullopt;
  return found->second;
}

int64_t Ops::busy_ns_between(OpId after, OpId through) const {
  std::vector<std::pair<int64_t, int64_t>> intervals;
  for (const OpTiming& timing : op_timings_) {
    if (timing.id > after && timing.id <= through) intervals.emplace_back(timing.begin_ns, timing.end_ns);
  }
  std::sort(intervals.begin(), intervals.end());
  int64_t busy = 0, covered_until = INT64_MIN;
  for (const auto& [begin, end] : intervals) {
    const int64_t from = std::max(begin, covered_until);
    if (end > from) busy += end - from;
    covered_until = std::max(covered_until, end);
  }
  return busy;
}

void Ops::begin_capture() {
  backend_.begin_capture();
  capturing_ = true;
}

void Ops::end_capture() {
  backend_.end_capture();
  capturing_ = false;
}

void Ops::replay_captured(const char* label) {
  int64_t begin;
  const OpId id = begin_op(begin);
  backend_.replay_captured(id);
  if (sink_) describe(OpDesc{id, "graph_replay", label, OpCategory::Other, {}, {}, AttentionExtent{}}, begin);
}

void Ops::range_begin(RangeKind kind, int index) {
  if (check_numerics_) {
    if (kind == RangeKind::Group) group_ = index;
    if (kind == RangeKind::Prefill) in_prefill_ = true;
    if (kind == RangeKind::Step) step_ = index;
    if (kind == RangeKind::Layer) layer_ = index;
  }
  nvtx_push_range(kind, index);  // warm-ups and captures too: an Nsight timeline shows every run
  if (sink_ && !capturing_) sink_->range_begin(kind, index, now_ns());
}

void Ops::range_end(RangeKind kind, int index) {
  if (check_numerics_) {
    if (kind == RangeKind::Prefill) in_prefill_ = false;
    if (kind == RangeKind::Step) step_ = -1;
    if (kind == RangeKind::Layer) layer_ = -1;
  }
  if (sink_ && !capturing_) sink_->range_end(kind, index, now_ns());
  nvtx_pop();
}

std::string Ops::position_text() const {
  const std::string phase = in_prefill_ ? "the prefill" : step_ >= 0 ? "decode step " + std::to_string(step_) : "the run";
  std::string text = layer_ >= 0 ? "layer " + std::to_string(layer_) + " of " + phase : phase;
  if (group_ >= 0) text += " (group " + std::to_string(group_) + ")";
  return text;
}

void Ops::check_finite(const Tensor& tensor, const std::string& what) {
  const NonFiniteScan scan = scan_device_tensor(backend_, tensor, next_id_++);
  if (scan.count == 0) return;
  throw NumericalError(what + " " + tensor.shape_string() + " " + dtype_name(tensor.dtype) + " holds " +
                       std::to_string(scan.count) + " non-finite value" + (scan.count == 1 ? "" : "s") +
                       " (the first: " + non_finite_name(scan.first_value) + " at " +
                       index_string(tensor, scan.first) + ")");
}

void Ops::check_outputs(const char* name, const char* label, std::initializer_list<const Tensor*> outputs) {
  // The read waits for the op (the stream is in order), so its outputs are final here.
  for (const Tensor* output : outputs) {
    std::string what = std::string("the first non-finite value comes from ") + name;
    if (label && *label) what += " '" + std::string(label) + "'";
    what += " in " + position_text() + ": its output";
    check_finite(*output, what);
  }
}

void Ops::collect_timings() {
  std::vector<OpTiming> timings = backend_.take_timings();
  for (const OpTiming& timing : timings) {
    auto pending = pending_markers_.find(timing.id);
    if (pending != pending_markers_.end()) {
      marker_times_[timing.id] = timing.begin_ns;
      pending_markers_.erase(pending);
    } else {
      op_timings_.push_back(timing);
    }
  }
  if (sink_ && !timings.empty()) sink_->ops_executed(timings);
}

}  // namespace decodelab
