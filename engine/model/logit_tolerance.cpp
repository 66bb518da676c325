// The logit tolerance and the row-wise comparison (see the header).
#include "engine/model/logit_tolerance.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace decodelab {

double logit_tolerance(DType dtype) {
  switch (dtype) {
    case DType::F16: return 6.0 / 2048;
    case DType::BF16: return 4.0 / 256;
    default: return 1e-4;
  }
}

LogitAgreement compare_logits(const std::vector<float>& reference, const std::vector<float>& other, int64_t rows,
                              int64_t columns) {
  const size_t count = static_cast<size_t>(rows) * static_cast<size_t>(columns);
  if (reference.size() != count || other.size() != count)
    throw std::invalid_argument("compare_logits: both sides must hold rows x columns values");
  LogitAgreement agreement;
  agreement.rows = rows;
  agreement.columns = columns;
  for (int64_t row = 0; row < rows; ++row) {
    const float* a = reference.data() + row * columns;
    const float* b = other.data() + row * columns;
    double scale = 1.0, worst = 0.0;
    int64_t worst_column = 0;
    for (int64_t column = 0; column < columns; ++column) scale = std::max(scale, std::fabs(static_cast<double>(a[column])));
    for (int64_t column = 0; column < columns; ++column) {
      if (!std::isfinite(a[column]) || !std::isfinite(b[column])) agreement.non_finite = true;
      if (std::memcmp(&a[column], &b[column], sizeof(float)) != 0) ++agreement.differing_values;
      const double error = std::fabs(static_cast<double>(a[column]) - b[column]);
      if (error > worst) {
        worst = error;
        worst_column = column;
      }
    }
    if (worst / scale > agreement.worst_relative_error) {
      agreement.worst_relative_error = worst / scale;
      agreement.worst_row = row;
      agreement.worst_column = worst_column;
    }
  }
  return agreement;
}

}  // namespace decodelab
