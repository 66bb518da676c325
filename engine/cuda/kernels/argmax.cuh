// argmax: greedy sampling on the device (engine/backend.h: argmax).
#pragma once

#include <cuda_runtime_api.h>

#include "engine/cuda/host/argmax_plan.h"
#include "engine/cuda/kernel_tensor.h"

namespace decodelab::cuda {

// logits [sequences, vocab]; tokens [sequences, max_positions] i32; positions [sequences]
// i32 (any stride). tokens[s, positions[s] + 1] = first index of the largest logit (NaN
// counts as largest, as in torch.argmax); skipped when positions[s] + 1 is past the history.
// `workspace`: argmax_workspace_bytes() of device memory for the chunked plan of few rows
// (host/argmax_plan.h); null runs one block per row whatever the row count.
void launch_argmax(const KernelTensor& logits, const KernelTensor& tokens, const KernelTensor& positions,
                   void* workspace, cudaStream_t stream);

}  // namespace decodelab::cuda
