// swiglu: silu(z) = z / (1 + e^-z) with the accurate expf (not __expf), so results
// match the CPU backend to the last fp32 bits wherever the libraries agree.
#include "engine/cuda/kernels/elementwise.cuh"
#include "engine/cuda/kernels/swiglu.cuh"

namespace decodelab::cuda {

namespace {
struct SiluTimes {
  DType gate_dtype;  // silu(gate) is rounded to it before the product
  __device__ float operator()(float gate, float up) const {
    const float silu = gate / (1.0f + expf(-gate));
    return round_any(gate_dtype, silu) * up;
  }
};
}  // namespace

void launch_swiglu(const KernelTensor& gate, const KernelTensor& up, const KernelTensor& out, cudaStream_t stream) {
  launch_binary(gate, up, out, SiluTimes{gate.dtype}, stream);
}

}  // namespace decodelab::cuda
