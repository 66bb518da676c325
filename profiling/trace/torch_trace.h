// A torch.profiler Chrome trace, read into what the host did and what it made the device do:
// the Kineto JSON that `export_chrome_trace()` writes (`cpu_op`, `user_annotation`,
// `python_function` slices on host threads with `Input Dims`, `Input type` and, from torch
// 2.1, `Input Strides`; on a GPU `cuda_runtime` calls, `kernel` and `gpu_memcpy` slices tied
// to them by `correlation`), or the legacy export of a torch built without Kineto, which
// records names and times only.
// Non-obvious choice: nesting is rebuilt from time containment on each host thread (Kineto
// writes no parent links), and the host events are kept in pre-order, so an event's
// descendants are the contiguous range after it — "what ran inside aten::matmul" is a loop.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace decodelab {

// One argument of a cpu_op as the profiler recorded it: a tensor has a type such as
// "float" or "c10::BFloat16" and its dims; scalars and lists have no dims.
struct TorchInput {
  std::string type;
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;  // empty when the trace records none

  bool is_tensor() const;
  int rank() const { return static_cast<int>(dims.size()); }
  int64_t elements() const;
  int64_t bytes() const;     // elements × the type's size (0 for an unknown type)
  bool has_strides() const { return !strides.empty() && strides.size() == dims.size(); }
  // Dense row-major (size-1 axes ignored); false when strides are unknown.
  bool contiguous() const;
  // "c10::BFloat16 [2, 7, 64]"
  std::string describe() const;
};

// Sizes of the dtypes torch.profiler names ("float" 4, "c10::Half" 2, "long int" 8, ...); 0 if unknown.
int64_t torch_type_size(const std::string& type);
// "fp32" | "fp16" | "bf16" for the floating types a half-precision check cares about, else "".
std::string torch_float_kind(const std::string& type);

enum class TorchEventKind { CpuOp, Annotation, PythonFunction, Runtime, Kernel, Memcpy, Memset, Other };

struct TorchEvent {
  TorchEventKind kind = TorchEventKind::Other;
  std::string name;
  int thread = -1;           // host thread index; -1 for device activity
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  int64_t correlation = -1;  // cuda_runtime, kernel, gpu_memcpy: links a call to its device activity
  int64_t bytes = -1;        // gpu_memcpy
  std::vector<TorchInput> inputs;

  // Host events only: the enclosing host event on the same thread, and one past the last
  // descendant (host events are stored in pre-order).
  int parent = -1;
  int subtree_end = 0;
  // Runtime calls only: the device activity (kernel, memcpy, memset) they launched, if recorded.
  int device_activity = -1;

  int64_t duration_ns() const { return end_ns - begin_ns; }
  bool host() const { return thread >= 0; }
};

struct TorchTrace {
  std::string file;
  bool kineto = true;       // false: the legacy export (no categories, no args)
  bool shapes = false;      // cpu_ops carry Input Dims and Input type
  bool strides = false;     // ... and Input Strides
  bool gpu = false;         // device activity (kernels, memcpys) is recorded
  bool gpu_runtime = false; // CUDA/HIP runtime calls are recorded (with or without device activity)
  bool hip = false;         // ... and they are HIP's (ROCm)
  std::string device;       // deviceProperties[0].name, when present
  std::vector<TorchEvent> host_events;    // pre-order per thread; threads one after another
  std::vector<TorchEvent> device_events;  // kernels, memcpys, memsets in time order
  std::vector<std::string> threads;       // "pid/tid" per host thread index

  // The cpu_op enclosing a host event (skipping annotations and Python frames), or -1.
  int enclosing_op(int event) const;
  // Whether a host event sits inside no other cpu_op.
  bool top_level_op(int event) const {
    return host_events[static_cast<size_t>(event)].kind == TorchEventKind::CpuOp && enclosing_op(event) < 0;
  }
};

// Builds a TorchTrace from events in file order, for both readers (a parsed document here, the
// streaming reader in torch_trace_stream.h): keeps the kinds the diagnosis reads, nests each
// host thread's events, ties runtime calls to their device activity.
class TorchTraceBuilder {
 public:
  explicit TorchTraceBuilder(std::string file);
  void set_device(std::string name) { trace_.device = std::move(name); }
  // A complete ("X") event; `category` null in the legacy export. Events of kinds the diagnosis
  // does not read (Python frames, spans, overhead) are dropped here.
  void add(TorchEvent event, const std::string* category, const std::string& thread_key);
  // Whether an event of this category and name would be kept (so a reader can skip its args).
  static bool kept(const std::string* category);
  // Whether the events seen so far look like a torch.profiler trace's.
  bool looks_like_torch() const { return looks_like_torch_; }
  void saw_name(const std::string& name, const std::string& pid);
  TorchTrace finish();

 private:
  TorchTrace trace_;
  std::map<std::string, int> thread_index_;
  std::vector<std::vector<TorchEvent>> per_thread_;
  bool any_category_ = false;
  bool looks_like_torch_ = false;
};

// Whether a parsed JSON document is a torch.profiler trace (not decodelab's own: that one
// carries otherData.schema "decodelab-trace").
bool is_torch_trace(const nlohmann::json& root);
// Malformed input throws InputError naming the file and the event ("traceEvents[12].ts").
TorchTrace parse_torch_trace(const nlohmann::json& root, const std::string& file);

}  // namespace decodelab
