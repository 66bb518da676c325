// argmax: greedy sampling on the device (engine/backend.h: argmax).
#pragma once

#include <cuda_runtime_api.h>

#include "engine/cuda/kernel_tensor.h"

namespace decodelab::cuda {

// logits [sequences, vocab]; tokens [sequences, max_positions] i32; positions [sequences]
// i32 (any stride). tokens[s, positions[s] + 1] = first index of the largest logit (NaN
// counts as largest, as in torch.argmax); skipped when positions[s] + 1 is past the history.
void launch_argmax(const KernelTensor& logits, const KernelTensor& tokens, const KernelTensor& positions,
                   cudaStream_t stream);

}  // namespace decodelab::cuda
