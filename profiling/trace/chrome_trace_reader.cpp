// Reading a decodelab Chrome trace back into a Trace. Every field is checked; a problem
// names the file and the JSON path ("traceEvents[12].args.inputs[0].dtype"). Events of
// other categories (a viewer's additions, foreign tools) are skipped, not refused.
#include <algorithm>
#include <cmath>
#include <map>

#include "engine/base/errors.h"
#include "profiling/trace/chrome_trace.h"
#include "profiling/trace/trace_text.h"

namespace decodelab {

namespace {

using nlohmann::json;

template <typename Enum>
std::optional<Enum> enum_by_name(const std::string& name, const char* (*name_of)(Enum), int count) {
  for (int value = 0; value < count; ++value) {
    if (name == name_of(static_cast<Enum>(value))) return static_cast<Enum>(value);
  }
  return std::nullopt;
}

// "args.dtype"; a key of the root is just its name.
std::string child(const std::string& path, const char* key) { return path.empty() ? std::string(key) : path + "." + key; }

class ChromeTraceReader {
 public:
  explicit ChromeTraceReader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& problem) const {
    throw InputError(file_, 0, path, problem);
  }

  const json& field(const json& object, const char* key, const std::string& path) const {
    if (!object.is_object()) fail(path, "expected an object");
    auto found = object.find(key);
    if (found == object.end()) fail(child(path, key), "missing");
    return *found;
  }

  std::string text(const json& object, const char* key, const std::string& path) const {
    const json& value = field(object, key, path);
    if (!value.is_string()) fail(child(path, key), "expected a string");
    return value.get<std::string>();
  }

  int64_t integer(const json& object, const char* key, const std::string& path) const {
    const json& value = field(object, key, path);
    if (!value.is_number_integer()) fail(child(path, key), "expected an integer");
    return value.get<int64_t>();
  }

  double number(const json& object, const char* key, const std::string& path) const {
    const json& value = field(object, key, path);
    if (!value.is_number() || !std::isfinite(value.get<double>())) fail(child(path, key), "expected a number");
    return value.get<double>();
  }

  // A µs timestamp back to ns on the recording clock.
  int64_t nanoseconds(const json& object, const char* key, const std::string& path, int64_t origin) const {
    return origin + std::llround(number(object, key, path) * 1000.0);
  }

  TensorInfo tensor(const json& value, const std::string& path) const {
    TensorInfo info;
    const std::string dtype = text(value, "dtype", path);
    const std::optional<DType> parsed = parse_dtype(dtype);
    if (!parsed) fail(path + ".dtype", "expected fp32, fp16, bf16 or i32, got '" + dtype + "'");
    info.dtype = *parsed;
    const json& shape = field(value, "shape", path);
    const json& strides = field(value, "strides", path);
    if (!shape.is_array() || shape.size() > 4) fail(path + ".shape", "expected a list of at most 4 sizes");
    if (!strides.is_array() || strides.size() != shape.size()) fail(path + ".strides", "expected one stride per dim");
    info.rank = static_cast<int>(shape.size());
    for (size_t axis = 0; axis < shape.size(); ++axis) {
      if (!shape[axis].is_number_integer() || !strides[axis].is_number_integer()) {
        fail(path + ".shape", "expected integer sizes and strides");
      }
      info.shape[axis] = shape[axis].get<int64_t>();
      info.strides[axis] = strides[axis].get<int64_t>();
    }
    return info;
  }

  std::vector<TensorInfo> tensors(const json& args, const char* key, const std::string& path) const {
    const json& list = field(args, key, path);
    if (!list.is_array()) fail(child(path, key), "expected a list of tensors");
    std::vector<TensorInfo> result;
    for (size_t i = 0; i < list.size(); ++i) result.push_back(tensor(list[i], child(path, key) + "[" + std::to_string(i) + "]"));
    return result;
  }

  // An op description from a slice's name and args; names are interned by the trace.
  OpDesc description(Trace& trace, const json& event, const json& args, const std::string& path) const {
    OpDesc desc;
    desc.id = static_cast<OpId>(integer(args, "op_id", path + ".args"));
    desc.name = trace.intern(text(event, "name", path));
    desc.label = trace.intern(text(args, "label", path + ".args"));
    const std::string category = text(args, "category", path + ".args");
    const auto parsed = enum_by_name<OpCategory>(category, op_category_name, static_cast<int>(OpCategory::Other) + 1);
    if (!parsed) fail(path + ".args.category", "unknown op category '" + category + "'");
    desc.category = *parsed;
    desc.inputs = tensors(args, "inputs", path + ".args");
    desc.outputs = tensors(args, "outputs", path + ".args");
    if (args.contains("attention")) {
      const json& extent = args["attention"];
      const std::string where = path + ".args.attention";
      desc.attention.query_key_pairs = integer(extent, "query_key_pairs", where);
      desc.attention.key_positions_read = integer(extent, "key_positions_read", where);
      desc.attention.query_heads = static_cast<int>(integer(extent, "query_heads", where));
      desc.attention.kv_heads = static_cast<int>(integer(extent, "kv_heads", where));
      desc.attention.head_dim = static_cast<int>(integer(extent, "head_dim", where));
    }
    return desc;
  }

  TraceMetadata metadata(const json& other) const {
    TraceMetadata meta;
    const json& source = field(other, "metadata", "otherData");
    const std::string path = "otherData.metadata";
    meta.backend = text(source, "backend", path);
    meta.device = text(source, "device", path);
    meta.dtype = text(source, "dtype", path);
    const json& model = field(source, "model", path);
    const std::string model_path = path + ".model";
    meta.model.name = text(model, "name", model_path);
    auto dim = [&](const char* key) { return static_cast<int>(integer(model, key, model_path)); };
    meta.model.hidden_size = dim("hidden_size");
    meta.model.intermediate_size = dim("intermediate_size");
    meta.model.num_hidden_layers = dim("num_hidden_layers");
    meta.model.num_attention_heads = dim("num_attention_heads");
    meta.model.num_key_value_heads = dim("num_key_value_heads");
    meta.model.head_dim = dim("head_dim");
    meta.model.vocab_size = dim("vocab_size");
    if (source.contains("device_spec")) meta.device_spec = device_spec_from_json(source["device_spec"], file_ + ": " + path + ".device_spec");
    return meta;
  }

 private:
  std::string file_;
};

struct PendingOp {
  std::optional<OpDesc> desc;
  bool has_host = false;
  int64_t host_begin_ns = 0, host_end_ns = 0;
  int64_t device_begin_ns = -1, device_end_ns = -1;
};

struct PendingRange {
  RangeKind kind;
  int index, depth;
  int64_t begin_ns, end_ns;
};

}  // namespace

Trace parse_chrome_trace(std::string_view text, const std::string& file_name) {
  return chrome_trace_from_json(parse_trace_json(text, file_name), file_name);
}

Trace chrome_trace_from_json(const json& root, const std::string& file_name) {
  const ChromeTraceReader reader(file_name);
  if (!root.is_object()) reader.fail("", "expected a JSON object with traceEvents");
  if (!root.contains("otherData")) {
    reader.fail("otherData", "missing: expected a trace written by decodelab (otherData.schema \"decodelab-trace\") "
                             "or by torch.profiler (cpu_op events)");
  }
  const json& other = reader.field(root, "otherData", "");
  if (!other.is_object() || other.value("schema", "") != "decodelab-trace") {
    reader.fail("otherData.schema", "expected \"decodelab-trace\" (a trace written by decodelab)");
  }
  const int64_t version = reader.integer(other, "schema_version", "otherData");
  if (version > kChromeTraceSchemaVersion) {
    reader.fail("otherData.schema_version", "version " + std::to_string(version) + " is newer than this reader (" +
                                                std::to_string(kChromeTraceSchemaVersion) + ")");
  }
  const int64_t origin = reader.integer(other, "origin_ns", "otherData");
  Trace trace;
  trace.metadata() = reader.metadata(other);

  const json& events = reader.field(root, "traceEvents", "");
  if (!events.is_array()) reader.fail("traceEvents", "expected a list of events");
  std::map<int64_t, PendingOp> ops;
  std::vector<PendingRange> ranges;
  std::vector<HostCall> calls;
  std::vector<size_t> open_ranges;  // B events awaiting an E
  for (size_t i = 0; i < events.size(); ++i) {
    const std::string path = "traceEvents[" + std::to_string(i) + "]";
    const json& event = events[i];
    if (!event.is_object()) reader.fail(path, "expected an event object");
    const std::string phase = reader.text(event, "ph", path);
    if (phase == "E") {
      if (open_ranges.empty()) reader.fail(path, "an end event with no open range");
      ranges[open_ranges.back()].end_ns = reader.nanoseconds(event, "ts", path, origin);
      open_ranges.pop_back();
      continue;
    }
    if (phase != "X" && phase != "B") continue;  // metadata, flows, instants, counters
    const std::string category = reader.text(event, "cat", path);
    const int64_t begin = reader.nanoseconds(event, "ts", path, origin);
    int64_t end = -1;
    if (phase == "X") {
      const double duration = reader.number(event, "dur", path);
      if (duration < 0) reader.fail(path + ".dur", "expected a duration >= 0");
      end = begin + std::llround(duration * 1000.0);
    }
    const json& args = reader.field(event, "args", path);
    if (category == "range") {
      const std::string kind = reader.text(args, "kind", path + ".args");
      const auto parsed = enum_by_name<RangeKind>(kind, range_kind_name, static_cast<int>(RangeKind::Layer) + 1);
      if (!parsed) reader.fail(path + ".args.kind", "unknown range kind '" + kind + "'");
      ranges.push_back(PendingRange{*parsed, static_cast<int>(reader.integer(args, "index", path + ".args")),
                                    static_cast<int>(reader.integer(args, "depth", path + ".args")), begin, end});
      if (phase == "B") open_ranges.push_back(ranges.size() - 1);
      continue;
    }
    if (phase != "X") continue;
    if (category == "host_call") {
      const std::string kind = reader.text(args, "kind", path + ".args");
      const auto parsed =
          enum_by_name<HostCallKind>(kind, host_call_kind_name, static_cast<int>(HostCallKind::HostToDevice) + 1);
      if (!parsed) reader.fail(path + ".args.kind", "unknown host call kind '" + kind + "'");
      calls.push_back(HostCall{*parsed, trace.intern(reader.text(event, "name", path)), begin, end,
                               reader.integer(args, "bytes", path + ".args")});
      continue;
    }
    if (!args.is_object() || !args.contains("op_index")) continue;  // not one of our op slices
    const int64_t index = reader.integer(args, "op_index", path + ".args");
    if (index < 0) reader.fail(path + ".args.op_index", "expected an index >= 0");
    PendingOp& pending = ops[index];
    if (category == "enqueue") {
      if (pending.has_host) reader.fail(path, "a second enqueue slice for op_index " + std::to_string(index));
      pending.has_host = true;
      pending.host_begin_ns = begin;
      pending.host_end_ns = end;
    } else {
      if (pending.device_begin_ns >= 0) reader.fail(path, "a second device slice for op_index " + std::to_string(index));
      pending.device_begin_ns = begin;
      pending.device_end_ns = end;
    }
    if (args.contains("inputs")) pending.desc = reader.description(trace, event, args, path);
  }

  // Ranges in begin order, parents before children that begin with them.
  std::stable_sort(ranges.begin(), ranges.end(), [](const PendingRange& a, const PendingRange& b) {
    return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.depth < b.depth;
  });
  for (const PendingRange& range : ranges) trace.add_range(range.kind, range.index, range.begin_ns, range.end_ns, range.depth);

  int64_t expected = 0;
  for (const auto& [index, pending] : ops) {
    const std::string what = "op_index " + std::to_string(index);
    if (index != expected++) reader.fail("traceEvents", "ops are not numbered 0..n-1: " + what + " follows a gap");
    if (!pending.has_host) reader.fail("traceEvents", what + " has a device slice but no enqueue slice");
    if (!pending.desc) reader.fail("traceEvents", what + " has no description (inputs, outputs)");
    trace.add_op(*pending.desc, pending.host_begin_ns, pending.host_end_ns, pending.device_begin_ns, pending.device_end_ns);
  }
  // Host calls in time order, as a recording holds them (a file need not list them so).
  std::stable_sort(calls.begin(), calls.end(),
                   [](const HostCall& a, const HostCall& b) { return a.begin_ns < b.begin_ns; });
  for (const HostCall& call : calls) trace.host_call(call);
  return trace;
}

Trace read_chrome_trace(const std::filesystem::path& file) {
  return parse_chrome_trace(read_trace_text(file), file.string());
}

}  // namespace decodelab
