// One pass of a torch.profiler trace (a forward: a prefill or a decode step) read into a
// PassReading (profiling/diagnosis/pass_reading.h) from the top-level ops and device reads the model's
// thread recorded between two times: projections give the rows per sequence, pairs of
// attention matmuls (or scaled_dot_product_attention) what attention reads and copies,
// norms, softmax and casts the fp32 work, the sampling op the sequences.
// Non-obvious choice: layers are not named in a PyTorch trace, so an op's layer is the number
// of attentions begun before it, counted only between the first projection and the lm_head
// (the projection onto the embedding table's vocabulary) — what "inside the layers" means for
// a device read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiling/diagnosis/pass_reading.h"
#include "profiling/trace/torch_trace.h"

namespace decodelab {

// The host events of the model's thread: [first, end) in TorchTrace::host_events.
struct TorchThread {
  int first = 0, end = 0;
};

// The model, as its embedding table shows it.
struct TorchModel {
  std::string table_type;  // "c10::BFloat16", ...
  int64_t vocab = 0, hidden = 0;
};

struct TorchPass {
  int64_t begin_ns = 0, end_ns = 0;
  PassReading reading;                 // its `pass` is set once the outline exists
  std::vector<size_t> ops, calls;      // top-level ops and read sites (indices into host_events)
  std::vector<int> op_layers, call_layers;
  bool output = false;         // it projects onto the vocabulary (an lm_head) or chooses a token over it
  int64_t output_rows = 0;     // rows of that projection (or sampling): [batch × tokens]
  std::string output_example;  // the lm_head as recorded
};

TorchPass read_torch_pass(const TorchTrace& trace, TorchThread thread, const TorchModel& model, int64_t begin_ns,
                          int64_t end_ns);

}  // namespace decodelab
