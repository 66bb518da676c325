// embedding: out[m, :] = table[tokens[m / rows_per_sequence, positions[m]], :] — the
// token ids are read on the device from the per-sequence history (engine/backend.h).
#pragma once

#include <cuda_runtime_api.h>

#include "engine/cuda/kernel_tensor.h"

namespace decodelab::cuda {

// table [vocab, hidden]; tokens [sequences, max_positions] i32; positions [M] i32;
// out [M, hidden]. An id or position out of range yields a zero row (a kernel cannot throw).
void launch_embedding(const KernelTensor& table, const KernelTensor& tokens, const KernelTensor& positions,
                      int rows_per_sequence, const KernelTensor& out, cudaStream_t stream);

}  // namespace decodelab::cuda
