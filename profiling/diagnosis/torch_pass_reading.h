// A torch.profiler trace read into the same pass-level reading as decodelab's own traces
// (profiling/diagnosis/pass_reading.h), so that the same checks judge it: passes, request groups and,
// per pass, rows per sequence, what attention reads, copies feeding it, device reads and
// where they sit, fp32 work.
//
// How the structure a decodelab trace states in ranges is found in a PyTorch program's:
//  - a pass (a forward) begins at each top-level aten::embedding; user_annotation ranges
//    (record_function), when present, bound passes and request groups more tightly, and
//    ProfilerStep#N ranges (profiler.step()) separate runs;
//  - without ranges, a new request group begins where attention's key length does not grow
//    by one token per pass (a new prefill), or the batch changes;
//  - the layers of a pass are its attentions in order (a pair of batched matmuls, or one
//    scaled_dot_product_attention): an op belongs to the layer of the last attention begun
//    before it, between the first projection and the lm_head (the projection onto the
//    embedding table's vocabulary);
//  - a device read is an aten::_local_scalar_dense (.item(), `if tensor:`, int(tensor)) or,
//    on a GPU, a cudaMemcpy to the host or a cuda*Synchronize call; the reads inside one
//    top-level op count once.
// Non-obvious choice: the checks never see a name of the program's own code (module or
// range names); ranges are used for where they begin and end only.
#pragma once

#include "profiling/diagnosis/pass_reading.h"
#include "profiling/trace/torch_trace.h"

namespace decodelab {

TraceReading read_torch_trace(const TorchTrace& trace);

}  // namespace decodelab
