// How closely two runs' logits must agree: a backend against the float64 reference, CUDA
// against the CPU backend, graphs on against graphs off. Per row, the largest |a - b| may
// be `logit_tolerance(dtype)` times the row's largest |reference logit| (at least 1): a
// few units in the last place of the dtype the activations are rounded to, since every
// backend computes in fp32 and rounds once per op. One definition, used by the tests and
// by `decodelab diff-logits` (the GPU check), so the documented figure is the checked one.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/base/dtype.h"

namespace decodelab {

// fp32: 1e-4; fp16: 6 units of 2^-11; bf16: 4 units of 2^-8.
double logit_tolerance(DType dtype);

struct LogitAgreement {
  int64_t rows = 0, columns = 0;
  double worst_relative_error = 0;  // max over rows of max |a - b| / max(1, max |reference|)
  int64_t worst_row = 0, worst_column = 0;
  int64_t differing_values = 0;     // bitwise: 0 means identical
  bool non_finite = false;          // a NaN or Inf on either side (never agrees)
};

// Compares `other` with `reference`, both [rows, columns] row-major.
LogitAgreement compare_logits(const std::vector<float>& reference, const std::vector<float>& other, int64_t rows,
                              int64_t columns);

}  // namespace decodelab
