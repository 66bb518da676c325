// What each pass of a trace shows a profiler, read once for every check of the diagnosis:
// for the prefill and each decode step, the rows it pushes through the layers per sequence
// it samples, what attention reads and through which strides, copies that feed attention,
// device-to-host reads and where they sit, and fp32 work — grouped as the outline is
// (runs → groups → passes). Two readers fill it: read_trace() for decodelab's own traces
// (here) and read_torch_trace() for torch.profiler traces (torch_pass_reading.h); the
// diagnosis judges both with the same checks.
// Non-obvious choice: a copy counts as a cache copy only when its result is exactly the
// view attention reads in the same layer (same dtype, shape and strides) and its source is
// a strided view of the same shape — a .contiguous() feeding attention. Copies whose bytes
// merely grow (the KV store of a step without cache, the last-token gather) are not it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "profiling/trace.h"
#include "profiling/diagnosis/trace_outline.h"

namespace decodelab {

// One pass (a prefill or a decode step) as a profiler sees it.
struct PassReading {
  const PassOutline* pass = nullptr;
  int64_t sequences = 0;      // rows of the logits it samples from: tokens it produces
  int64_t rows = 0;           // most rows a matmul ran: tokens it pushes through the layers
  int64_t key_positions = 0;  // cached positions attention reads per sequence (most over layers)
  double flops = 0;
  double bytes = 0;

  std::string rows_example;          // the matmul that ran `rows`: its name and operands

  int attention_ops = 0;
  int strided_attention_ops = 0;    // K or V read through a view whose [position, head_dim]
                                    // block is not dense (strides not {head_dim, 1})
  std::string strided_view;         // that view: "K fp16 [4, 2, 256, 64] strides [...]"
  int cache_copies = 0;             // copies of a strided view whose result attention reads
  int fresh_copies = 0;             // such copies in a step that recomputes every position it attends
                                    // to (no cache): copies of its own projections, not of a cache
  double cache_copy_bytes = 0;
  std::string copy_example;
  double attention_seconds = 0, attention_bytes = 0;  // device time and declared bytes
  double matmul_seconds = 0, matmul_bytes = 0;

  int device_reads = 0;   // DeviceToHost host calls
  int reads_in_layers = 0;
  int syncs = 0;          // Synchronize host calls
  double wait_seconds = 0;  // host time blocked in those calls
  std::string read_example;  // the call (or op chain) that read
  int library_reads = 0;     // reads of the loop's own bookkeeping (counters, input checks): not counted above
  std::string library_read_example;
  std::set<int> layers;

  int opaque_ops = 0;     // ops with no tensors (a captured graph replayed): work the trace cannot see into

  int matmuls = 0, fp32_matmuls = 0;
  int norms = 0, fp32_norms = 0;
  int softmaxes = 0, fp32_softmaxes = 0;  // a separate attention softmax (torch traces; decodelab's is fused)
  int casts = 0;                          // fp32 <-> half conversions of tensors (not scalars)
  double fp32_weight_bytes = 0;
  std::string fp32_matmul_example, fp32_norm_example, cast_example;

  double rows_per_sequence() const { return sequences > 0 ? static_cast<double>(rows) / sequences : 0.0; }
  bool multi_row() const { return sequences > 0 && rows > sequences; }
  bool reads_device() const { return device_reads + syncs > 0; }
  // fp32 compute: matmuls, norms or softmax on fp32 input. Cast ops alone are not fp32 work
  // (a correct half model may convert a RoPE table or the logits); they size the evidence.
  bool fp32_work() const { return fp32_matmuls + fp32_norms + fp32_softmaxes > 0; }
  // Whether the layers' ops are in the trace (not hidden in a replayed graph).
  bool shows_layers() const { return matmuls > 0; }
};

// The readings of one group: its prefill(s) and its decode steps in step order.
struct GroupReading {
  const GroupOutline* group = nullptr;
  std::vector<PassReading> prefills;
  std::vector<PassReading> steps;
  int64_t uploads = 0;  // HostToDevice calls: prompts sent to the device

  int64_t sequences() const {
    for (const auto* list : {&prefills, &steps})
      for (const PassReading& pass : *list)
        if (pass.sequences > 0) return pass.sequences;
    return 1;
  }
};

// What the recording is and holds, beside its passes: the trace's kind and model, and what
// its recorder could not record (a torch.profiler trace without strides or shapes).
struct TraceFacts {
  std::string source = "decodelab";  // "decodelab" | "torch.profiler"
  std::string backend, device, dtype, model;
  int layers = 0;
  bool shapes = true;        // tensor shapes and dtypes are recorded
  bool strides = true;       // strides are recorded
  bool reads_block = true;   // a device read waits for a device (false: a torch trace of a CPU run)
  std::vector<std::string> limits;  // the reader's own notes: what it could not see, how it found passes
  // Whether the trace holds an autoregressive generate loop to diagnose (a decodelab trace
  // always does; a torch.profiler trace only where the reader found decode steps), and if not, why.
  bool generate_loop = true;
  std::string not_diagnosed;
  // The device timeline, where device activity is recorded (torch traces): from the first
  // activity's begin to the last one's end, the union of kernels, and of all activity.
  double device_span_seconds = 0, kernel_busy_seconds = 0, device_busy_seconds = 0;
  int64_t idle_gaps = 0;  // gaps between activities (all streams merged)
};

struct TraceReading {
  TraceFacts facts;
  TraceOutline outline;  // the readings point into it
  std::vector<std::vector<GroupReading>> runs;
  std::vector<const PassReading*> steps;          // every decode step, in order
  std::vector<const PassReading*> visible_steps;  // those whose layers' ops are in the trace
  std::vector<const PassReading*> prefills;

  // Decode steps that replay a captured graph show one opaque op: most steps do so here.
  // Only a step that launches a graph (an opaque op) counts: a step merely without matmuls is not one.
  bool steps_replay_graphs() const {
    const auto replaying = std::count_if(steps.begin(), steps.end(), [](const PassReading* p) {
      return !p->shows_layers() && p->opaque_ops > 0;
    });
    return !steps.empty() && 2 * visible_steps.size() <= steps.size() && 2 * static_cast<size_t>(replaying) > steps.size();
  }
  // The passes the layout and precision checks count over: the decode steps that show
  // their ops, or the prefills (the same kernels and layout) when the trace has no decode
  // steps (a generation of one token) or its steps replay a graph.
  bool judges_steps() const { return !steps.empty() && !steps_replay_graphs(); }
  const std::vector<const PassReading*>& judged() const { return judges_steps() ? visible_steps : prefills; }
  const char* judged_name() const { return judges_steps() ? "decode steps" : "prefills"; }
  const char* judged_unit() const { return judges_steps() ? "step" : "prefill"; }

  // Lists every prefill and decode step (steps, visible_steps, prefills): once `runs` stopped
  // growing, since the lists point into it.
  void index_passes();

  TraceReading() = default;
  TraceReading(TraceReading&&) = default;  // moving keeps every vector's buffer, so the pointers hold
  TraceReading(const TraceReading&) = delete;
  TraceReading& operator=(const TraceReading&) = delete;
};

TraceReading read_trace(const Trace& trace);

// "fp16 [4, 64]"; with strides "fp16 [4, 2, 256, 64] strides [32768, 16384, 64, 1]".
std::string tensor_text(const TensorInfo& tensor, bool with_strides = false);
// "name (fp16 [1, 64], fp16 [64, 64])": an op and its inputs, as evidence quotes it.
std::string op_text(const std::string& name, const std::vector<std::string>& inputs);

}  // namespace decodelab
