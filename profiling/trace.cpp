// Recording the event stream. Matching a device timing to its op is O(1) in the usual
// case: ids are dense and increasing within one front layer, so the op sits at
// epoch_start + (id - first_id); a binary search covers gaps, and each restart of the
// ids (a new Ops, e.g. the next repeat) opens a new epoch.
#include "profiling/trace.h"

#include <algorithm>
#include <cstring>

namespace decodelab {

ModelShape ModelShape::of(const ModelConfig& config) {
  ModelShape shape;
  shape.name = config.name;
  shape.hidden_size = config.hidden_size;
  shape.intermediate_size = config.intermediate_size;
  shape.num_hidden_layers = config.num_hidden_layers;
  shape.num_attention_heads = config.num_attention_heads;
  shape.num_key_value_heads = config.num_key_value_heads;
  shape.head_dim = config.head_dim;
  shape.vocab_size = config.vocab_size;
  return shape;
}

TraceMetadata TraceMetadata::of(const BackendIdentity& backend, const ModelConfig& config, DType dtype,
                                std::optional<DeviceSpec> device_spec) {
  TraceMetadata meta;
  meta.backend = backend.backend;
  meta.device = backend.device;
  meta.dtype = dtype_name(dtype);
  meta.model = ModelShape::of(config);
  meta.device_spec = std::move(device_spec);
  return meta;
}

const char* StringPool::intern(std::string_view text) {
  auto found = strings_.find(text);
  if (found == strings_.end()) found = strings_.emplace(text).first;
  return found->c_str();  // node-based set: the address is stable
}

const char* StringPool::intern(const char* text) {
  if (text == nullptr) text = "";
  CacheEntry& entry = cache_[(reinterpret_cast<uintptr_t>(text) >> 3) % cache_.size()];
  // Re-check the content: a caller's buffer may be reused with other text.
  if (entry.source == text && std::strcmp(entry.interned, text) == 0) return entry.interned;
  entry.source = text;
  entry.interned = intern(std::string_view(text));
  return entry.interned;
}

Trace::Trace(size_t expected_ops) : expected_ops_(expected_ops) {
  ops_.reserve(expected_ops);
  host_calls_.reserve(256);
  ranges_.reserve(1024);
  open_ranges_.reserve(8);
}

namespace {

// A typical op's tensors: the lists written ahead hold this many (a matmul's two inputs and
// one output, attention's three inputs); an op with more allocates its own.
constexpr size_t kSpareTensors = 3;

// Grows `records` to hold `room` more than it does and writes that memory (the elements
// constructed, then dropped again: the capacity stays).
template <typename Record>
void write_room_ahead(std::vector<Record>& records, size_t room) {
  const size_t size = records.size();
  records.resize(size + room);
  records.resize(size);
}

// As many as were recorded since `start` and a quarter more, at least `floor`.
size_t room_for_next_run(size_t recorded, size_t start, size_t floor) {
  const size_t last_run = recorded - start;
  return std::max(floor, last_run + last_run / 4);
}

}  // namespace

void Trace::before_run() {
  const size_t op_room = room_for_next_run(ops_.size(), ops_at_run_start_, expected_ops_);
  write_room_ahead(ops_, op_room);
  write_room_ahead(ranges_, room_for_next_run(ranges_.size(), ranges_at_run_start_, 1024));
  write_room_ahead(host_calls_, room_for_next_run(host_calls_.size(), host_calls_at_run_start_, 256));
  ops_at_run_start_ = ops_.size();
  ranges_at_run_start_ = ranges_.size();
  host_calls_at_run_start_ = host_calls_.size();
  // Two lists an op (inputs and outputs), allocated one after another now: each allocation
  // writes its heap chunk's header, so the pages they take are written before the run.
  spare_tensor_lists_.reserve(2 * op_room);
  while (spare_tensor_lists_.size() < 2 * op_room) spare_tensor_lists_.emplace_back().reserve(kSpareTensors);
}

void Trace::op_enqueued(const OpDesc& op, int64_t host_begin_ns, int64_t host_end_ns) {
  if (ops_.empty() || op.id <= ops_.back().desc.id) epoch_starts_.push_back(ops_.size());
  TraceOp& record = ops_.emplace_back();
  for (std::vector<TensorInfo>* list : {&record.desc.inputs, &record.desc.outputs}) {
    if (spare_tensor_lists_.empty()) break;
    *list = std::move(spare_tensor_lists_.back());
    spare_tensor_lists_.pop_back();
  }
  record.desc = op;  // the lists' copies reuse the spare lists' memory
  record.desc.name = strings_.intern(op.name);
  record.desc.label = strings_.intern(op.label);
  record.host_begin_ns = host_begin_ns;
  record.host_end_ns = host_end_ns;
}

size_t Trace::add_op(const OpDesc& op, int64_t host_begin_ns, int64_t host_end_ns, int64_t device_begin_ns,
                     int64_t device_end_ns) {
  op_enqueued(op, host_begin_ns, host_end_ns);
  ops_.back().device_begin_ns = device_begin_ns;
  ops_.back().device_end_ns = device_end_ns;
  return ops_.size() - 1;
}

std::optional<size_t> Trace::find_op(OpId id) const {
  for (size_t epoch = epoch_starts_.size(); epoch-- > 0;) {
    const size_t begin = epoch_starts_[epoch];
    const size_t end = epoch + 1 < epoch_starts_.size() ? epoch_starts_[epoch + 1] : ops_.size();
    if (begin == end || id < ops_[begin].desc.id || id > ops_[end - 1].desc.id) continue;
    const uint64_t offset = id - ops_[begin].desc.id;
    if (offset < end - begin && ops_[begin + offset].desc.id == id) return begin + offset;
    auto found = std::lower_bound(ops_.begin() + static_cast<ptrdiff_t>(begin), ops_.begin() + static_cast<ptrdiff_t>(end),
                                  id, [](const TraceOp& op, OpId wanted) { return op.desc.id < wanted; });
    if (found != ops_.begin() + static_cast<ptrdiff_t>(end) && found->desc.id == id) {
      return static_cast<size_t>(found - ops_.begin());
    }
  }
  return std::nullopt;
}

void Trace::ops_executed(const std::vector<OpTiming>& timings) {
  for (const OpTiming& timing : timings) {
    const std::optional<size_t> index = find_op(timing.id);
    if (!index) {
      ++unmatched_timings_;
      continue;
    }
    ops_[*index].device_begin_ns = timing.begin_ns;
    ops_[*index].device_end_ns = timing.end_ns;
  }
}

void Trace::host_call(const HostCall& call) {
  HostCall& record = host_calls_.emplace_back(call);
  record.name = strings_.intern(call.name);
}

void Trace::range_begin(RangeKind kind, int index, int64_t ns) {
  TraceRange range;
  range.kind = kind;
  range.index = index;
  range.begin_ns = ns;
  range.depth = static_cast<int>(open_ranges_.size());
  range.parent = open_ranges_.empty() ? -1 : open_ranges_.back();
  open_ranges_.push_back(static_cast<int>(ranges_.size()));
  ranges_.push_back(range);
}

void Trace::range_end(RangeKind kind, int index, int64_t ns) {
  // Close the innermost open range of this kind and index; ranges opened inside it and
  // never closed end with it. An end that matches nothing open is ignored.
  for (size_t depth = open_ranges_.size(); depth-- > 0;) {
    const TraceRange& candidate = ranges_[static_cast<size_t>(open_ranges_[depth])];
    if (candidate.kind != kind || candidate.index != index) continue;
    for (size_t inner = depth; inner < open_ranges_.size(); ++inner) {
      ranges_[static_cast<size_t>(open_ranges_[inner])].end_ns = ns;
    }
    open_ranges_.resize(depth);
    return;
  }
}

void Trace::add_range(RangeKind kind, int index, int64_t begin_ns, int64_t end_ns, int depth) {
  TraceRange range;
  range.kind = kind;
  range.index = index;
  range.begin_ns = begin_ns;
  range.end_ns = end_ns;
  range.depth = depth;
  for (size_t i = ranges_.size(); i-- > 0;) {
    if (ranges_[i].depth == depth - 1) {
      range.parent = static_cast<int>(i);
      break;
    }
  }
  ranges_.push_back(range);
}

int64_t Trace::first_ns() const {
  int64_t first = INT64_MAX;
  if (!ops_.empty()) first = std::min(first, ops_.front().host_begin_ns);
  for (const TraceOp& op : ops_) {
    if (op.has_device_time()) first = std::min(first, op.device_begin_ns);
  }
  for (const HostCall& call : host_calls_) first = std::min(first, call.begin_ns);
  for (const TraceRange& range : ranges_) first = std::min(first, range.begin_ns);
  return first == INT64_MAX ? 0 : first;
}

int64_t Trace::last_ns() const {
  int64_t last = INT64_MIN;
  for (const TraceOp& op : ops_) last = std::max({last, op.host_end_ns, op.device_end_ns});
  for (const HostCall& call : host_calls_) last = std::max(last, call.end_ns);
  for (const TraceRange& range : ranges_) last = std::max({last, range.begin_ns, range.end_ns});
  return last == INT64_MIN ? 0 : last;
}

namespace {

bool same_tensor(const TensorInfo& a, const TensorInfo& b) {
  if (a.dtype != b.dtype || a.rank != b.rank) return false;
  for (int axis = 0; axis < a.rank; ++axis) {
    if (a.shape[axis] != b.shape[axis] || a.strides[axis] != b.strides[axis]) return false;
  }
  return true;
}

bool same_tensors(const std::vector<TensorInfo>& a, const std::vector<TensorInfo>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), same_tensor);
}

bool same_extent(const AttentionExtent& a, const AttentionExtent& b) {
  return a.query_key_pairs == b.query_key_pairs && a.key_positions_read == b.key_positions_read &&
         a.query_heads == b.query_heads && a.kv_heads == b.kv_heads && a.head_dim == b.head_dim;
}

bool same_op(const TraceOp& a, const TraceOp& b) {
  return a.desc.id == b.desc.id && std::strcmp(a.desc.name, b.desc.name) == 0 &&
         std::strcmp(a.desc.label, b.desc.label) == 0 && a.desc.category == b.desc.category &&
         same_tensors(a.desc.inputs, b.desc.inputs) && same_tensors(a.desc.outputs, b.desc.outputs) &&
         same_extent(a.desc.attention, b.desc.attention) && a.host_begin_ns == b.host_begin_ns &&
         a.host_end_ns == b.host_end_ns && a.device_begin_ns == b.device_begin_ns &&
         a.device_end_ns == b.device_end_ns;
}

bool same_call(const HostCall& a, const HostCall& b) {
  return a.kind == b.kind && std::strcmp(a.name, b.name) == 0 && a.begin_ns == b.begin_ns && a.end_ns == b.end_ns &&
         a.bytes == b.bytes;
}

bool same_range(const TraceRange& a, const TraceRange& b) {
  return a.kind == b.kind && a.index == b.index && a.begin_ns == b.begin_ns && a.end_ns == b.end_ns &&
         a.depth == b.depth && a.parent == b.parent;
}

}  // namespace

bool Trace::operator==(const Trace& other) const {
  return metadata_ == other.metadata_ && ops_.size() == other.ops_.size() &&
         std::equal(ops_.begin(), ops_.end(), other.ops_.begin(), same_op) &&
         host_calls_.size() == other.host_calls_.size() &&
         std::equal(host_calls_.begin(), host_calls_.end(), other.host_calls_.begin(), same_call) &&
         ranges_.size() == other.ranges_.size() &&
         std::equal(ranges_.begin(), ranges_.end(), other.ranges_.begin(), same_range);
}

}  // namespace decodelab
