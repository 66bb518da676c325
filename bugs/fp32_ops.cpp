// Bug: fp32 ops in a half-precision model.
//
// What real code does: runs a fp16/bf16 model with parts left in fp32 — norms (and
// softmax) upcast with `.float()` and cast back (scope: norms), or projections whose
// weights were never cast because autocast or `model.half()` was forgotten, so every
// matmul reads fp32 weights and casts activations in and out (scope: matmuls), or both.
// The fused projections (q/k/v, gate/up) are one Linear each, so their fp32 copies are
// fused too: one cast in, one fp32 matmul, one cast out per fused projection.
// What a profiler sees: fp32 kernels and cast kernels in a half-precision model; for
// matmuls, twice the weight bytes per step (decode is memory-bound: about 2x slower).
// The fix: autocast / cast the model once; keep norms in the model dtype with fp32
// statistics inside the kernel (as the fixed path does).
#include "bugs/deviations.h"

namespace decodelab::bugs {

namespace {

Tensor fp32_like(const Tensor& tensor, void* data) {
  Tensor view = Tensor::contiguous(data, DType::F32, {tensor.shape[0], tensor.shape[1]});
  return view;
}

}  // namespace

void norm_in_fp32(Ops& ops, const Tensor& x, const Tensor& fp32_weight, float eps, const Tensor& out, void* fp32_in,
                  void* fp32_out, const char* label) {
  const Tensor x32 = fp32_like(x, fp32_in);
  const Tensor out32 = fp32_like(out, fp32_out);
  ops.cast(x, x32, label);  // x.float()
  ops.rmsnorm(x32, fp32_weight, eps, out32, label);
  ops.cast(out32, out, label);  // .to(dtype)
}

void project_in_fp32(Ops& ops, const Tensor& x, const Tensor& fp32_weight, const Tensor& out, void* fp32_in,
                     void* fp32_out, const char* label) {
  const Tensor x32 = fp32_like(x, fp32_in);
  const Tensor out32 = fp32_like(out, fp32_out);
  ops.cast(x, x32, label);
  ops.matmul(x32, fp32_weight, out32, label);
  ops.cast(out32, out, label);
}

}  // namespace decodelab::bugs
