// fill_positions / advance_positions: the int32 position vectors a decode loop keeps on
// the device, so that a step (or a captured graph of one) never needs the host.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace decodelab::cuda {

// positions[m * stride] = start + m % period, m < count.
void launch_fill_positions(int32_t* positions, int64_t count, int64_t stride, int start, int period,
                           cudaStream_t stream);
// positions[m * stride] += 1, m < count.
void launch_advance_positions(int32_t* positions, int64_t count, int64_t stride, cudaStream_t stream);

}  // namespace decodelab::cuda
