// The device a forward pass runs on: memory, one in-order stream, and the ops.
// Every op is enqueued and returns at once; results exist on the device only after
// the stream reaches them. The host waits only in synchronize() and copy_to_host().
// Each op carries the OpId the front layer (engine/ops.h) gave it; the backend keeps
// each op's device start/end and hands them over in take_timings() after a sync.
//
// Conventions shared by every op:
//  - matrices are row-major; a Linear weight is [out, in] and y = x · Wᵀ;
//  - fp16/bf16 values are widened to fp32 for arithmetic; accumulation is fp32;
//    each op rounds its output once to the output dtype (as torch's kernels do);
//  - token ids and positions are int32 tensors.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend_identity.h"
#include "engine/base/tensor.h"
#include "engine/events/event_sink.h"

namespace decodelab {

// The largest attention a run will ask for (Backend::reserve_attention).
struct AttentionBounds {
  int64_t max_rows = 0;  // query rows of one call
  int heads = 0;         // query heads
  int kv_heads = 0;
  int head_dim = 0;
  int64_t capacity = 0;  // positions the cache holds per sequence
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;                 // "cpu" | "cuda"
  virtual std::string device_description() const = 0;  // e.g. "AMD EPYC (2 threads)"
  // The CPU kernel variants this machine runs, widest first (the CPU backend); none elsewhere.
  virtual std::vector<std::string> kernel_variants() const { return {}; }
  // The CPU kernel variant this backend runs (engine/cpu/kernel_variant.h); "" elsewhere.
  virtual std::string kernel_variant() const { return ""; }
  BackendIdentity identity() const { return {name(), device_description()}; }

  // --- memory (synchronous; not part of the timed stream) ---
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* pointer) = 0;
  virtual size_t available_memory() const = 0;  // bytes a new allocation may still take
  virtual void upload(void* device_destination, const void* host_source, size_t bytes) = 0;

  // --- stream ---
  // Host-to-device copy of small data (token ids); the host buffer is copied at enqueue.
  virtual void upload_async(void* device_destination, const void* host_source, size_t bytes, OpId id) = 0;
  // Blocking device-to-host read: enqueue the copy, wait for it. pinned=false models a
  // pageable destination (an extra staging copy on CUDA).
  virtual void copy_to_host(void* host_destination, const void* device_source, size_t bytes, bool pinned,
                            OpId id) = 0;
  virtual void synchronize() = 0;
  // A zero-work op whose device time marks when the stream reached it.
  virtual void marker(OpId id) = 0;
  // Device intervals of ops finished since the last call (call after a sync).
  virtual std::vector<OpTiming> take_timings() = 0;

  // --- graphs (CUDA graphs; backends without them keep these defaults) ---
  // supports_graphs(): the backend can capture and was asked to (BackendOptions::cuda_graphs).
  // Between begin_capture() and end_capture() ops are recorded into a graph, not run;
  // replay_captured(id) enqueues the whole graph as one op. Op ids seen during capture
  // are not reported again at replay time.
  virtual bool supports_graphs() const { return false; }
  virtual void begin_capture() {}
  virtual void end_capture() {}
  virtual void replay_captured(OpId /*id*/) {}

  // --- scratch reserved ahead (backends without op scratch keep this default) ---
  // Makes room now for attention calls of up to `bounds.max_rows` query rows over caches
  // of `bounds.capacity` positions, so that such a call inside a graph capture (where
  // nothing may be allocated) runs the same plan as the same call run eagerly.
  virtual void reserve_attention(const AttentionBounds& /*bounds*/) {}

  // --- roof probe (backends without one keep this default) ---
  // Enqueues a compute-only op for measuring the arithmetic roof: every compute thread of
  // the device runs `rounds` rounds of independent fp32 FMA chains held in registers, no
  // memory traffic. Returns the FLOPs that op does; 0 = no probe (nothing is enqueued).
  virtual double fma_probe(int64_t /*rounds*/, OpId /*id*/) { return 0; }

  // --- ops ---
  // Token ids live in a per-sequence history tokens[sequences, max_positions] (prompt, then
  // generated tokens), indexed by position, so a decode step reads and writes fixed buffers.
  // out[m, :] = table[tokens[m / rows_per_sequence, positions[m]], :].
  virtual void embedding(const Tensor& table, const Tensor& tokens, const Tensor& positions, int rows_per_sequence,
                         const Tensor& out, OpId id) = 0;
  // Llama RMSNorm: out = weight * round(x / sqrt(mean(x²) + eps)), statistics in fp32.
  virtual void rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out, OpId id) = 0;
  // out[M, N] = x[M, K] · weight[N, K]ᵀ, fp32 accumulation. x and weight may differ in dtype.
  virtual void matmul(const Tensor& x, const Tensor& weight, const Tensor& out, OpId id) = 0;
  // In place, rotate-half RoPE on q [M, heads*head_dim] and k [M, kv_heads*head_dim] at
  // positions[M]; inv_freq [head_dim/2] fp32 (llama3 scaling already applied).
  virtual void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq,
                    int head_dim, OpId id) = 0;
  // Write new keys/values [M, kv_heads*head_dim] into caches viewed as [sequences, kv_heads,
  // positions, head_dim] (any strides): row m belongs to sequence m / rows_per_sequence and
  // goes to position positions[m].
  virtual void kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache,
                        const Tensor& positions, int rows_per_sequence, OpId id) = 0;
  // Causal grouped-query attention: query row m of sequence m / rows_per_sequence attends
  // to cached positions 0..positions[m]. q, out: [M, heads*head_dim]; caches as in kv_store.
  // Scores scaled by `scale`, softmax in fp32.
  virtual void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions,
                         int rows_per_sequence, float scale, const Tensor& out, OpId id) = 0;
  // out = round(round(silu(gate)) * up), elementwise, as eager torch computes it.
  virtual void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out, OpId id) = 0;
  // out = a + b, elementwise (out may alias a).
  virtual void add(const Tensor& a, const Tensor& b, const Tensor& out, OpId id) = 0;
  // Greedy sampling: tokens[m, positions[m] + 1] = argmax(logits[m, :]) (first index on
  // ties), one logits row per sequence; positions may be a strided view.
  virtual void argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions, OpId id) = 0;
  // Elementwise dtype conversion, same shape.
  virtual void cast(const Tensor& x, const Tensor& out, OpId id) = 0;
  // out = src for any strided src (rank <= 4) into a view of the same shape (transpose copies).
  virtual void copy(const Tensor& src, const Tensor& out, OpId id) = 0;
  // out[m] = start + m % period (int32): positions of packed sequences.
  virtual void fill_positions(const Tensor& out, int start, int period, OpId id) = 0;
  // positions[m] += 1 (int32): the end of a decode step.
  virtual void advance_positions(const Tensor& positions, OpId id) = 0;
};

enum class BackendKind { Cpu, Cuda };

struct BackendOptions {
  int threads = 0;              // CPU kernel threads; 0 = every core
  bool cuda_graphs = false;     // CUDA: capture decode steps as graphs
  bool sync_after_launch = false;  // CUDA debug switch
  // CPU: the kernel variant to run (engine/cpu/kernel_variant.h) where DECODELAB_CPU_KERNELS
  // names none — a calibration's choice; empty: the widest this CPU runs.
  std::string cpu_kernels;

  static BackendOptions with_threads(int threads) {
    BackendOptions options;
    options.threads = threads;
    return options;
  }
};

// Whether a backend was compiled in and has a device to run on.
bool cuda_backend_compiled();
bool cuda_device_available();
// Why cuda_device_available() is false, in the CUDA runtime's words (or "this build has
// no CUDA backend"); empty when it is true.
std::string cuda_unavailable_reason();
std::unique_ptr<Backend> make_backend(BackendKind kind, const BackendOptions& options);

}  // namespace decodelab
