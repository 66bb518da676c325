// Reading a torch.profiler trace: the events kept (complete "X" slices), their kinds from
// `cat` (or, in the legacy export, from the name), the recorded inputs, nesting per host
// thread, and each runtime call's device activity by correlation id.
#include "profiling/trace/torch_trace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "engine/base/errors.h"

namespace decodelab {

using nlohmann::json;

bool TorchInput::is_tensor() const { return torch_type_size(type) > 0; }

int64_t TorchInput::elements() const {
  int64_t count = 1;
  for (int64_t dim : dims) count *= dim;
  return count;
}

int64_t TorchInput::bytes() const { return is_tensor() ? elements() * torch_type_size(type) : 0; }

bool TorchInput::contiguous() const {
  if (!has_strides()) return false;
  int64_t expected = 1;
  for (size_t axis = dims.size(); axis-- > 0;) {
    if (dims[axis] != 1 && strides[axis] != expected) return false;
    expected *= dims[axis];
  }
  return true;
}

namespace {

std::string list_text(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text.append(i ? ", " : "").append(std::to_string(values[i]));
  return text + "]";
}

}  // namespace

std::string TorchInput::describe() const { return type + " " + list_text(dims); }

int64_t torch_type_size(const std::string& type) {
  static const std::unordered_map<std::string, int64_t> sizes = {
      {"float", 4},          {"double", 8},         {"c10::Half", 2},       {"c10::BFloat16", 2},
      {"long int", 8},       {"long", 8},           {"int64_t", 8},         {"int", 4},
      {"short int", 2},      {"short", 2},          {"signed char", 1},     {"unsigned char", 1},
      {"bool", 1},           {"c10::complex<float>", 8}, {"c10::complex<double>", 16},
      {"c10::Float8_e4m3fn", 1}, {"c10::Float8_e5m2", 1}};
  const auto found = sizes.find(type);
  return found == sizes.end() ? 0 : found->second;
}

std::string torch_float_kind(const std::string& type) {
  if (type == "float") return "fp32";
  if (type == "c10::Half") return "fp16";
  if (type == "c10::BFloat16") return "bf16";
  return "";
}

int TorchTrace::enclosing_op(int event) const {
  for (int at = host_events[static_cast<size_t>(event)].parent; at >= 0; at = host_events[static_cast<size_t>(at)].parent) {
    if (host_events[static_cast<size_t>(at)].kind == TorchEventKind::CpuOp) return at;
  }
  return -1;
}

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The category names Kineto writes, in today's spelling and the capitalised one of torch
// 1.8-1.10; anything else (spans, instants, overhead) is not read.
std::optional<TorchEventKind> kind_of_category(const std::string& category) {
  const std::string cat = lower(category);
  if (cat == "cpu_op" || cat == "operator") return TorchEventKind::CpuOp;
  if (cat == "user_annotation") return TorchEventKind::Annotation;
  if (cat == "python_function") return TorchEventKind::PythonFunction;
  if (cat == "cuda_runtime" || cat == "runtime" || cat == "cuda_driver") return TorchEventKind::Runtime;
  if (cat == "kernel") return TorchEventKind::Kernel;
  if (cat == "gpu_memcpy" || cat == "memcpy") return TorchEventKind::Memcpy;
  if (cat == "gpu_memset" || cat == "memset") return TorchEventKind::Memset;
  return std::nullopt;
}

bool is_device_kind(TorchEventKind kind) {
  return kind == TorchEventKind::Kernel || kind == TorchEventKind::Memcpy || kind == TorchEventKind::Memset;
}

// Ties between slices of equal interval: the range encloses the op, the op the runtime call.
int nesting_rank(TorchEventKind kind) {
  switch (kind) {
    case TorchEventKind::Annotation: return 0;
    case TorchEventKind::PythonFunction: return 1;
    case TorchEventKind::CpuOp: return 2;
    default: return 3;
  }
}

class TorchReader {
 public:
  explicit TorchReader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& problem) const {
    throw InputError(file_, 0, path, problem);
  }

  double number(const json& event, const char* key, const std::string& path) const {
    const auto found = event.find(key);
    if (found == event.end()) fail(path + "." + key, "missing");
    if (!found->is_number() || !std::isfinite(found->get<double>())) fail(path + "." + key, "expected a number");
    return found->get<double>();
  }

  // "pid/tid": Kineto writes numbers, the legacy export and some spans strings.
  static std::string id_text(const json& event, const char* key) {
    const auto found = event.find(key);
    if (found == event.end()) return "";
    return found->is_string() ? found->get<std::string>() : found->dump();
  }

  // Input Dims / Input type / Input Strides, aligned by position. Entries that are not a flat
  // list of integers (a TensorList's list of shapes in torch 2.x) are kept as non-tensors.
  std::vector<TorchInput> inputs(const json& args, const std::string& path) const {
    std::vector<TorchInput> result;
    const auto dims = args.find("Input Dims");
    if (dims == args.end()) return result;
    if (!dims->is_array()) fail(path + ".args.Input Dims", "expected a list");
    const auto types = args.find("Input type");
    const auto strides = args.find("Input Strides");
    auto flat = [](const json& value, std::vector<int64_t>& out) {
      if (!value.is_array()) return false;
      for (const json& item : value) {
        if (!item.is_number_integer()) return false;
      }
      for (const json& item : value) out.push_back(item.get<int64_t>());
      return true;
    };
    for (size_t i = 0; i < dims->size(); ++i) {
      TorchInput input;
      if (types != args.end() && types->is_array() && i < types->size() && (*types)[i].is_string()) {
        input.type = (*types)[i].get<std::string>();
      }
      if (!flat((*dims)[i], input.dims)) {
        input.dims.clear();
        input.type = input.type.empty() ? "list" : input.type;
        if (input.is_tensor()) input.type = "TensorList";
      }
      if (strides != args.end() && strides->is_array() && i < strides->size() && !flat((*strides)[i], input.strides)) {
        input.strides.clear();
      }
      result.push_back(std::move(input));
    }
    return result;
  }

 private:
  std::string file_;
};

int64_t nanoseconds(double microseconds) { return std::llround(microseconds * 1000.0); }

}  // namespace

bool is_torch_trace(const json& root) {
  const json* events = &root;
  if (root.is_object()) {
    if (root.contains("otherData") && root["otherData"].is_object() &&
        root["otherData"].value("schema", "") == "decodelab-trace") {
      return false;
    }
    const auto found = root.find("traceEvents");
    if (found == root.end()) return false;
    events = &*found;
  }
  if (!events->is_array()) return false;
  for (const json& event : *events) {
    if (!event.is_object()) continue;
    if (event.contains("cat") && event["cat"].is_string() && kind_of_category(event["cat"].get<std::string>())) return true;
    if (event.value("pid", json()) == "CPU functions") return true;  // the legacy export's process name
    if (event.contains("name") && event["name"].is_string() && event["name"].get<std::string>().rfind("aten::", 0) == 0) {
      return true;
    }
  }
  return false;
}

TorchTraceBuilder::TorchTraceBuilder(std::string file) { trace_.file = std::move(file); }

bool TorchTraceBuilder::kept(const std::string* category) {
  if (!category) return true;
  const auto kind = kind_of_category(*category);
  return kind && *kind != TorchEventKind::PythonFunction;  // Python frames nest nothing the diagnosis reads
}

void TorchTraceBuilder::saw_name(const std::string& name, const std::string& pid) {
  if (pid == "CPU functions" || name.rfind("aten::", 0) == 0) looks_like_torch_ = true;
}

void TorchTraceBuilder::add(TorchEvent event, const std::string* category, const std::string& thread_key) {
  if (category) {
    any_category_ = true;
    const auto kind = kind_of_category(*category);
    if (kind) looks_like_torch_ = true;
    if (!kind || *kind == TorchEventKind::PythonFunction) return;
    event.kind = *kind;
  } else {  // the legacy export: ops are "ns::op", everything else a record_function range
    event.kind = event.name.find("::") != std::string::npos ? TorchEventKind::CpuOp : TorchEventKind::Annotation;
  }
  if (event.kind == TorchEventKind::CpuOp) {
    if (!event.inputs.empty()) trace_.shapes = true;
  } else {
    event.inputs.clear();
  }
  if (event.kind == TorchEventKind::Runtime) {
    trace_.gpu_runtime = true;
    if (event.name.rfind("hip", 0) == 0) trace_.hip = true;
  }
  if (is_device_kind(event.kind)) {
    trace_.device_events.push_back(std::move(event));
    return;
  }
  auto [slot, added] = thread_index_.emplace(thread_key, static_cast<int>(per_thread_.size()));
  if (added) {
    per_thread_.emplace_back();
    trace_.threads.push_back(thread_key);
  }
  event.thread = slot->second;
  per_thread_[static_cast<size_t>(slot->second)].push_back(std::move(event));
}

TorchTrace TorchTraceBuilder::finish() {
  TorchTrace trace = std::move(trace_);
  trace.kineto = any_category_;
  trace.gpu = !trace.device_events.empty();

  // Nesting per thread: begin order, the longer (then the enclosing kind) first.
  for (std::vector<TorchEvent>& thread : per_thread_) {
    std::stable_sort(thread.begin(), thread.end(), [](const TorchEvent& a, const TorchEvent& b) {
      if (a.begin_ns != b.begin_ns) return a.begin_ns < b.begin_ns;
      if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
      return nesting_rank(a.kind) < nesting_rank(b.kind);
    });
    const int offset = static_cast<int>(trace.host_events.size());
    std::vector<int> open;
    for (size_t k = 0; k < thread.size(); ++k) {
      const int index = offset + static_cast<int>(k);
      TorchEvent& event = thread[k];
      while (!open.empty() && trace.host_events[static_cast<size_t>(open.back())].end_ns < event.end_ns) {
        trace.host_events[static_cast<size_t>(open.back())].subtree_end = index;
        open.pop_back();
      }
      event.parent = open.empty() ? -1 : open.back();
      trace.host_events.push_back(std::move(event));
      open.push_back(index);
    }
    for (int index : open) trace.host_events[static_cast<size_t>(index)].subtree_end = static_cast<int>(trace.host_events.size());
    std::vector<TorchEvent>().swap(thread);  // its events were moved: release the buffer as we go
  }
  per_thread_.clear();

  std::stable_sort(trace.device_events.begin(), trace.device_events.end(),
                   [](const TorchEvent& a, const TorchEvent& b) { return a.begin_ns < b.begin_ns; });
  std::unordered_map<int64_t, int> by_correlation;
  for (size_t i = 0; i < trace.device_events.size(); ++i) {
    if (trace.device_events[i].correlation >= 0) by_correlation.emplace(trace.device_events[i].correlation, static_cast<int>(i));
  }
  for (TorchEvent& event : trace.host_events) {
    if (event.kind != TorchEventKind::Runtime || event.correlation < 0) continue;
    if (const auto found = by_correlation.find(event.correlation); found != by_correlation.end()) {
      event.device_activity = found->second;
    }
  }
  return trace;
}

TorchTrace parse_torch_trace(const json& root, const std::string& file) {
  const TorchReader reader(file);
  TorchTraceBuilder builder(file);
  const json* events = &root;
  std::string events_path = "";
  if (root.is_object()) {
    const auto found = root.find("traceEvents");
    if (found == root.end()) reader.fail("traceEvents", "missing: expected a torch.profiler Chrome trace");
    events = &*found;
    events_path = "traceEvents";
    if (const auto properties = root.find("deviceProperties"); properties != root.end() && properties->is_array() &&
                                                                !properties->empty() && (*properties)[0].is_object()) {
      builder.set_device((*properties)[0].value("name", ""));
    }
  }
  if (!events->is_array()) reader.fail(events_path, "expected a list of events");

  bool strides = false;
  for (size_t i = 0; i < events->size(); ++i) {
    const std::string path = events_path + "[" + std::to_string(i) + "]";
    const json& event = (*events)[i];
    if (!event.is_object()) reader.fail(path, "expected an event object");
    const auto phase = event.find("ph");
    if (phase == event.end() || !phase->is_string()) reader.fail(path + ".ph", "expected a phase string");
    if (phase->get<std::string>() != "X") continue;  // metadata, flows, instants, counters
    const auto name = event.find("name");
    if (name == event.end() || !name->is_string()) reader.fail(path + ".name", "expected a string");

    TorchEvent parsed;
    parsed.name = name->get<std::string>();
    std::string category_text;
    const std::string* category = nullptr;
    if (const auto found = event.find("cat"); found != event.end()) {
      if (!found->is_string()) reader.fail(path + ".cat", "expected a string");
      category_text = found->get<std::string>();
      category = &category_text;
      if (!TorchTraceBuilder::kept(category)) {
        builder.add(std::move(parsed), category, "");  // counted as a Kineto category, then dropped
        continue;
      }
    }
    const double begin = reader.number(event, "ts", path);
    const double duration = reader.number(event, "dur", path);
    if (duration < 0) reader.fail(path + ".dur", "expected a duration >= 0");
    parsed.begin_ns = nanoseconds(begin);
    parsed.end_ns = nanoseconds(begin + duration);
    if (const auto args = event.find("args"); args != event.end()) {
      if (!args->is_object()) reader.fail(path + ".args", "expected an object");
      if (const auto correlation = args->find("correlation"); correlation != args->end() && correlation->is_number_integer()) {
        parsed.correlation = correlation->get<int64_t>();
      }
      if (const auto bytes = args->find("bytes"); bytes != args->end() && bytes->is_number_integer()) {
        parsed.bytes = bytes->get<int64_t>();
      }
      parsed.inputs = reader.inputs(*args, path);
      if (args->contains("Input Strides")) strides = true;
    }
    builder.add(std::move(parsed), category, TorchReader::id_text(event, "pid") + "/" + TorchReader::id_text(event, "tid"));
  }
  TorchTrace trace = builder.finish();
  trace.strides = strides && trace.shapes;
  return trace;
}

}  // namespace decodelab
