// Writing a Trace as Chrome Trace Event JSON. Track ids: pid 1; tid 1 = host, tid 2 =
// device stream. Event order: track names, ranges (host, then their device spans), ops
// (enqueue, device, flow), host calls.
#include "profiling/trace/chrome_trace.h"

#include <algorithm>

#include "profiling/atomic_file.h"
#include "profiling/model/cost_model.h"

namespace decodelab {

namespace {

constexpr int kPid = 1;
constexpr int kHostTid = 1;
constexpr int kDeviceTid = 2;
constexpr int kTrackNameEvents = 5;  // process and thread names, sort indices

class EventWriter {
 public:
  explicit EventWriter(int64_t origin_ns) : origin_ns_(origin_ns) {}

  double micros(int64_t ns) const { return static_cast<double>(ns - origin_ns_) / 1000.0; }
  static double duration(int64_t begin_ns, int64_t end_ns) { return static_cast<double>(end_ns - begin_ns) / 1000.0; }

  nlohmann::json slice(const std::string& name, const char* category, int tid, int64_t begin_ns, int64_t end_ns,
                       nlohmann::json args) const {
    return {{"name", name}, {"cat", category}, {"ph", "X"}, {"ts", micros(begin_ns)}, {"dur", duration(begin_ns, end_ns)},
            {"pid", kPid}, {"tid", tid}, {"args", std::move(args)}};
  }

 private:
  int64_t origin_ns_;
};

nlohmann::json tensor_json(const TensorInfo& tensor) {
  nlohmann::json shape = nlohmann::json::array();
  nlohmann::json strides = nlohmann::json::array();
  for (int axis = 0; axis < tensor.rank; ++axis) {
    shape.push_back(tensor.shape[static_cast<size_t>(axis)]);
    strides.push_back(tensor.strides[static_cast<size_t>(axis)]);
  }
  return {{"dtype", dtype_name(tensor.dtype)}, {"shape", shape}, {"strides", strides}};
}

nlohmann::json tensors_json(const std::vector<TensorInfo>& tensors) {
  nlohmann::json list = nlohmann::json::array();
  for (const TensorInfo& tensor : tensors) list.push_back(tensor_json(tensor));
  return list;
}

// The whole description, plus the cost model's figures for people reading the slice.
nlohmann::json op_args(const TraceOp& op, size_t index) {
  const OpCost cost = op_cost(op.desc);
  nlohmann::json args = {{"op_index", index},
                         {"op_id", op.desc.id},
                         {"label", op.desc.label},
                         {"category", op_category_name(op.desc.category)},
                         {"inputs", tensors_json(op.desc.inputs)},
                         {"outputs", tensors_json(op.desc.outputs)},
                         {"flops", cost.flops},
                         {"bytes", cost.bytes()},
                         {"precision", precision_name(cost.precision)}};
  if (op.desc.category == OpCategory::Attention) {
    const AttentionExtent& extent = op.desc.attention;
    args["attention"] = {{"query_key_pairs", extent.query_key_pairs},
                         {"key_positions_read", extent.key_positions_read},
                         {"query_heads", extent.query_heads},
                         {"kv_heads", extent.kv_heads},
                         {"head_dim", extent.head_dim}};
  }
  return args;
}

// Where a range's work ran: from the first device begin to the last device end of the ops
// enqueued inside the range (ops that never ran count for nothing). Ops are found by
// their enqueue time, which a recording keeps in order.
struct DeviceSpan {
  int64_t begin_ns = 0;
  int64_t end_ns = -1;
  int64_t ops = 0;
};

DeviceSpan device_span(const std::vector<TraceOp>& ops, bool in_enqueue_order, const TraceRange& range) {
  DeviceSpan span;
  auto first = ops.begin();
  if (in_enqueue_order) {
    first = std::partition_point(ops.begin(), ops.end(),
                                 [&](const TraceOp& op) { return op.host_begin_ns < range.begin_ns; });
  }
  for (auto op = first; op != ops.end(); ++op) {
    if (op->host_begin_ns > range.end_ns) {
      if (in_enqueue_order) break;
      continue;
    }
    if (op->host_begin_ns < range.begin_ns || !op->has_device_time()) continue;
    span.begin_ns = span.ops == 0 ? op->device_begin_ns : std::min(span.begin_ns, op->device_begin_ns);
    span.end_ns = span.ops == 0 ? op->device_end_ns : std::max(span.end_ns, op->device_end_ns);
    ++span.ops;
  }
  return span;
}

// The engine's own name for the range, the one its NVTX range carries too.
std::string range_name(const TraceRange& range) { return decodelab::range_name(range.kind, range.index); }

nlohmann::json metadata_json(const TraceMetadata& meta) {
  nlohmann::json json = {{"backend", meta.backend},
                         {"device", meta.device},
                         {"dtype", meta.dtype},
                         {"model",
                          {{"name", meta.model.name},
                           {"hidden_size", meta.model.hidden_size},
                           {"intermediate_size", meta.model.intermediate_size},
                           {"num_hidden_layers", meta.model.num_hidden_layers},
                           {"num_attention_heads", meta.model.num_attention_heads},
                           {"num_key_value_heads", meta.model.num_key_value_heads},
                           {"head_dim", meta.model.head_dim},
                           {"vocab_size", meta.model.vocab_size}}}};
  if (meta.device_spec) json["device_spec"] = to_json(*meta.device_spec);
  return json;
}

}  // namespace

nlohmann::json chrome_trace_json(const Trace& trace) {
  const int64_t origin = trace.first_ns();
  const EventWriter writer(origin);
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", kPid}, {"args", {{"name", "decodelab"}}}});
  events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", kPid}, {"tid", kHostTid}, {"args", {{"name", "host"}}}});
  events.push_back(
      {{"name", "thread_name"}, {"ph", "M"}, {"pid", kPid}, {"tid", kDeviceTid}, {"args", {{"name", "device stream"}}}});
  events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", kPid}, {"tid", kHostTid}, {"args", {{"sort_index", 0}}}});
  events.push_back(
      {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", kPid}, {"tid", kDeviceTid}, {"args", {{"sort_index", 1}}}});

  for (const TraceRange& range : trace.ranges()) {
    nlohmann::json args = {{"kind", range_kind_name(range.kind)}, {"index", range.index}, {"depth", range.depth}};
    if (range.closed()) {
      events.push_back(writer.slice(range_name(range), "range", kHostTid, range.begin_ns, range.end_ns, std::move(args)));
    } else {  // still open when the trace was written: a begin without an end
      events.push_back({{"name", range_name(range)}, {"cat", "range"}, {"ph", "B"}, {"ts", writer.micros(range.begin_ns)},
                        {"pid", kPid}, {"tid", kHostTid}, {"args", std::move(args)}});
    }
  }

  // Each closed range again on the device track, where its ops ran, so that Perfetto lines
  // steps and layers up with the work (the host track shows when they were enqueued). The
  // category differs, so that a reader takes the ranges from the host track alone.
  const auto& ops = trace.ops();
  const bool in_enqueue_order = std::is_sorted(
      ops.begin(), ops.end(), [](const TraceOp& a, const TraceOp& b) { return a.host_begin_ns < b.host_begin_ns; });
  for (const TraceRange& range : trace.ranges()) {
    if (!range.closed()) continue;
    const DeviceSpan span = device_span(ops, in_enqueue_order, range);
    if (span.ops == 0) continue;
    events.push_back(writer.slice(range_name(range), "device_range", kDeviceTid, span.begin_ns, span.end_ns,
                                  {{"kind", range_kind_name(range.kind)},
                                   {"index", range.index},
                                   {"depth", range.depth},
                                   {"device_ops", span.ops}}));
  }

  for (size_t i = 0; i < ops.size(); ++i) {
    const TraceOp& op = ops[i];
    const bool ran = op.has_device_time();
    nlohmann::json enqueue_args = ran ? nlohmann::json{{"op_index", i}, {"op_id", op.desc.id}} : op_args(op, i);
    events.push_back(writer.slice(op.desc.name, "enqueue", kHostTid, op.host_begin_ns, op.host_end_ns, std::move(enqueue_args)));
    if (!ran) continue;
    events.push_back(writer.slice(op.desc.name, op_category_name(op.desc.category), kDeviceTid, op.device_begin_ns,
                                  op.device_end_ns, op_args(op, i)));
    const uint64_t flow = i + 1;
    events.push_back({{"name", "launch"}, {"cat", "launch"}, {"ph", "s"}, {"id", flow}, {"ts", writer.micros(op.host_begin_ns)},
                      {"pid", kPid}, {"tid", kHostTid}});
    events.push_back({{"name", "launch"}, {"cat", "launch"}, {"ph", "f"}, {"bp", "e"}, {"id", flow},
                      {"ts", writer.micros(op.device_begin_ns)}, {"pid", kPid}, {"tid", kDeviceTid}});
  }

  for (const HostCall& call : trace.host_calls()) {
    events.push_back(writer.slice(call.name, "host_call", kHostTid, call.begin_ns, call.end_ns,
                                  {{"kind", host_call_kind_name(call.kind)}, {"bytes", call.bytes}}));
  }

  // Time order, a parent before the children that start with it (longer first): viewers
  // nest slices of one track by this order when their start times are equal.
  std::stable_sort(events.begin() + kTrackNameEvents, events.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    const double a_ts = a["ts"].get<double>();
    const double b_ts = b["ts"].get<double>();
    if (a_ts != b_ts) return a_ts < b_ts;
    return a.value("dur", 0.0) > b.value("dur", 0.0);
  });

  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"schema", "decodelab-trace"},
            {"schema_version", kChromeTraceSchemaVersion},
            {"origin_ns", origin},
            {"metadata", metadata_json(trace.metadata())}}}};
}

void write_chrome_trace(const Trace& trace, const std::filesystem::path& file) {
  save_file_atomically(file, chrome_trace_json(trace).dump());
}

}  // namespace decodelab
