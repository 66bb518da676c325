// The trace: everything one run reported through the event sink — ops (description, host
// enqueue interval, device interval), host calls and nested ranges — plus metadata about
// the device and model (never about bugs or scenario toggles: diagnosis must earn its answer).
// Non-obvious choice: op and call names are interned into the trace's own string pool
// (a pointer-keyed cache makes that a strcmp per op), so a trace outlives the engine's
// strings and a trace read back from a file looks exactly like a recorded one. Before each
// run (before_run) the trace writes the memory its next run's records will take — the ops,
// their tensor lists, ranges and host calls, as many as the last run's and a quarter more:
// a run that recorded into fresh memory faulted a page every few ops, tens of times the cost
// of recording into memory already written, and slowed the run it recorded.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "engine/backend_identity.h"
#include "engine/events/event_sink.h"
#include "engine/model/model_config.h"
#include "profiling/device_spec.h"

namespace decodelab {

// One op as the trace saw it. Device times are -1 until a sync delivered them.
struct TraceOp {
  OpDesc desc;
  int64_t host_begin_ns = 0;  // enqueue call: begin and end on the host thread
  int64_t host_end_ns = 0;
  int64_t device_begin_ns = -1;
  int64_t device_end_ns = -1;

  bool has_device_time() const { return device_begin_ns >= 0 && device_end_ns >= device_begin_ns; }
  double device_seconds() const { return has_device_time() ? (device_end_ns - device_begin_ns) * 1e-9 : 0.0; }
};

struct TraceRange {
  RangeKind kind = RangeKind::Run;
  int index = -1;         // group, step or layer number; -1 where it has none
  int64_t begin_ns = 0;
  int64_t end_ns = -1;    // -1 while still open
  int depth = 0;          // 0 = outermost
  int parent = -1;        // index into Trace::ranges(), -1 for a root

  bool closed() const { return end_ns >= begin_ns; }
  bool contains(int64_t ns) const { return ns >= begin_ns && closed() && ns <= end_ns; }
};

// The model's shape (Hugging Face field names), enough to read a trace without the config.
struct ModelShape {
  std::string name;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  int head_dim = 0;
  int vocab_size = 0;

  static ModelShape of(const ModelConfig& config);
  bool operator==(const ModelShape&) const = default;
};

struct TraceMetadata {
  std::string backend;               // "cpu" | "cuda"
  std::string device;                // BackendIdentity::device
  std::string dtype;                 // model storage dtype: "fp16", ...
  ModelShape model;
  std::optional<DeviceSpec> device_spec;  // peaks: datasheet and/or measured

  bool is_gpu() const { return backend == "cuda"; }
  bool operator==(const TraceMetadata&) const = default;

  // What a runner attaches before recording: the backend's name and device
  // (Backend::identity()), the model's shape and dtype, and the roofs the run will be read against.
  static TraceMetadata of(const BackendIdentity& backend, const ModelConfig& config, DType dtype,
                          std::optional<DeviceSpec> device_spec);
};

// Stable storage for names: a const char* from intern() lives as long as the pool.
class StringPool {
 public:
  const char* intern(const char* text);
  const char* intern(std::string_view text);

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  std::unordered_set<std::string, Hash, std::equal_to<>> strings_;
  // Direct-mapped cache from a caller's pointer to the interned copy (content re-checked).
  struct CacheEntry {
    const char* source = nullptr;
    const char* interned = nullptr;
  };
  std::array<CacheEntry, 64> cache_{};
};

class Trace : public EventSink {
 public:
  explicit Trace(size_t expected_ops = 16384);

  // --- EventSink (host thread only) ---
  void op_enqueued(const OpDesc& op, int64_t host_begin_ns, int64_t host_end_ns) override;
  void ops_executed(const std::vector<OpTiming>& timings) override;
  void host_call(const HostCall& call) override;
  void range_begin(RangeKind kind, int index, int64_t ns) override;
  void range_end(RangeKind kind, int index, int64_t ns) override;
  void before_run() override;

  // --- building a trace by hand (readers, tests) ---
  // Appends a complete op; strings are interned. Returns its index.
  size_t add_op(const OpDesc& op, int64_t host_begin_ns, int64_t host_end_ns, int64_t device_begin_ns = -1,
                int64_t device_end_ns = -1);
  // Appends a complete range; its parent is the latest range one level up (by depth).
  void add_range(RangeKind kind, int index, int64_t begin_ns, int64_t end_ns, int depth);

  // --- reading ---
  const std::vector<TraceOp>& ops() const { return ops_; }
  const std::vector<HostCall>& host_calls() const { return host_calls_; }
  const std::vector<TraceRange>& ranges() const { return ranges_; }
  TraceMetadata& metadata() { return metadata_; }
  const TraceMetadata& metadata() const { return metadata_; }
  // Device timings that named no recorded op (0 in a healthy recording).
  int64_t unmatched_timings() const { return unmatched_timings_; }
  // Index of the op with this id (the latest such op when ids restarted), if any.
  std::optional<size_t> find_op(OpId id) const;
  // Earliest and latest timestamp of anything recorded (0, 0 when empty).
  int64_t first_ns() const;
  int64_t last_ns() const;
  const char* intern(std::string_view text) { return strings_.intern(text); }

  // Deep equality: same ops (names compared as text), calls, ranges and metadata.
  bool operator==(const Trace& other) const;

 private:
  StringPool strings_;
  TraceMetadata metadata_;
  std::vector<TraceOp> ops_;
  std::vector<HostCall> host_calls_;
  std::vector<TraceRange> ranges_;
  std::vector<int> open_ranges_;      // stack of indices into ranges_
  std::vector<size_t> epoch_starts_;  // op ids restart when a new Ops front layer records
  int64_t unmatched_timings_ = 0;

  // Written ahead by before_run: tensor lists with room for a typical op's tensors, taken
  // by op_enqueued (its copy of an op's lists then reuses their memory), and what the
  // records held when the last run began.
  std::vector<std::vector<TensorInfo>> spare_tensor_lists_;
  size_t expected_ops_;
  size_t ops_at_run_start_ = 0, ranges_at_run_start_ = 0, host_calls_at_run_start_ = 0;
};

}  // namespace decodelab
