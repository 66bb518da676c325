// The front layer between the forward pass and a backend. Every op goes through here
// once: it gets an OpId, is described to the event sink (when one is attached), pays
// the emulated host dispatch cost (host_overhead_us), and is enqueued on the backend.
// At each synchronize() — the take point, never a host read inside a step, since taking
// timings costs host time that differs between timers — the backend's device timings are
// forwarded to the sink and marker times are kept for the generator's clocks. Recording
// off costs one branch per op.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/backend.h"
#include "engine/events/event_sink.h"

namespace decodelab {

class Ops {
 public:
  explicit Ops(Backend& backend, EventSink* sink = nullptr, double host_overhead_us = 0.0);

  // --check-numerics: after every op, wait for it and scan its floating-point outputs on
  // the host; the first output holding a NaN or an Inf throws NumericalError naming the
  // op, its label and where it ran (group, prefill or step, layer). Slow by design.
  void set_check_numerics(bool enabled) { check_numerics_ = enabled; }
  bool check_numerics() const { return check_numerics_; }
  // Throws NumericalError when `tensor` holds a non-finite value; `what` names it.
  void check_finite(const Tensor& tensor, const std::string& what);

  Backend& backend() { return backend_; }
  EventSink* sink() const { return sink_; }
  int64_t ops_enqueued() const { return next_id_ - 1; }

  void embedding(const Tensor& table, const Tensor& tokens, const Tensor& positions, int rows_per_sequence,
                 const Tensor& out);
  void rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out, const char* label);
  void matmul(const Tensor& x, const Tensor& weight, const Tensor& out, const char* label);
  void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq, int head_dim);
  void kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache,
                const Tensor& positions, int rows_per_sequence);
  void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions,
                 int rows_per_sequence, float scale, const Tensor& out, const AttentionExtent& extent);
  void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out);
  void add(const Tensor& a, const Tensor& b, const Tensor& out, const char* label);
  void argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions);
  void cast(const Tensor& x, const Tensor& out, const char* label);
  void copy(const Tensor& src, const Tensor& out, const char* label);
  void fill_positions(const Tensor& out, int start, int period);
  void advance_positions(const Tensor& positions);

  // Host-to-device copy of host data (copied at enqueue).
  void upload(void* device_destination, const void* host_source, size_t bytes);
  // Blocking device-to-host read (what .item() / .cpu() do): enqueue, then wait. Takes no
  // timings: they are collected at the next synchronize().
  void read_to_host(void* host_destination, const void* device_source, size_t bytes, bool pinned,
                    const char* label);
  void synchronize();

  // A timestamp on the device's timeline; its time is known after the next sync.
  OpId marker(const char* label);
  std::optional<int64_t> marker_time_ns(OpId marker) const;
  // Device busy time of the ops enqueued after marker `after` up to marker `through` (the
  // union of their device intervals, markers excluded); known after the next sync.
  int64_t busy_ns_between(OpId after, OpId through) const;

  // Graph capture, where the backend supports it: ops between begin_capture() and
  // end_capture() are recorded, not run, and not described to the sink; each
  // replay_captured() enqueues them all as one op ("graph_replay").
  bool graphs_available() const { return backend_.supports_graphs(); }
  void begin_capture();
  void end_capture();
  void replay_captured(const char* label);

  // A range of the model's structure: reported to the sink and pushed as an NVTX range of
  // the same name (engine/events/nvtx_ranges.h). Ranges nest; each end closes the latest begin.
  void range_begin(RangeKind kind, int index = -1);
  void range_end(RangeKind kind, int index = -1);

 private:
  // Starts an op: assigns its id, emulates dispatch cost. Returns the host begin time.
  OpId begin_op(int64_t& host_begin_ns);
  void describe(OpDesc&& desc, int64_t host_begin_ns);
  void collect_timings();
  // --check-numerics after an op: each output scanned (after the op ran).
  void check_outputs(const char* name, const char* label, std::initializer_list<const Tensor*> outputs);
  std::string position_text() const;  // "layer 1 of decode step 3 (group 0)"

  Backend& backend_;
  EventSink* sink_;
  int64_t host_overhead_ns_;
  bool capturing_ = false;
  OpId next_id_ = 1;
  std::unordered_map<OpId, int64_t> marker_times_;
  std::unordered_map<OpId, bool> pending_markers_;
  std::vector<OpTiming> op_timings_;  // every op's device interval, in arrival order
  bool check_numerics_ = false;
  // Where the forward pass is, kept only while checking numerics (for the message).
  int group_ = -1, step_ = -1, layer_ = -1;
  bool in_prefill_ = false;
};

}  // namespace decodelab
