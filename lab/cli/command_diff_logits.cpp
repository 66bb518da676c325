// `decodelab diff-logits REFERENCE.npy OTHER.npy --dtype DTYPE`: whether two runs'
// --dump-logits files agree within the logit tolerance (engine/model/logit_tolerance.h), e.g.
// CUDA against the CPU backend, or CUDA graphs on against off. Prints the worst relative
// error with its row and column, the tolerance, and whether the files are bitwise
// identical; exits 1 when they do not agree (2 for unreadable or mismatched files).
#include <cstdio>
#include <stdexcept>
#include <string>

#include "engine/base/dtype.h"
#include "engine/base/errors.h"
#include "engine/model/logit_tolerance.h"
#include "lab/cli/commands.h"
#include "lab/npy.h"

namespace decodelab {

void execute_diff_logits(const DiffLogitsArguments& arguments) {
  const std::optional<DType> dtype = parse_dtype(arguments.dtype);
  if (!dtype || *dtype == DType::I32)
    throw InputError("--dtype", 0, arguments.dtype, "expected the run's dtype: fp32, fp16 or bf16");
  const NpyMatrix reference = read_npy(arguments.reference_file);
  const NpyMatrix other = read_npy(arguments.other_file);
  if (reference.shape != other.shape || reference.shape.size() != 2) {
    auto text = [](const NpyMatrix& matrix) {
      std::string shape;
      for (int64_t dim : matrix.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(dim);
      return "(" + shape + ")";
    };
    throw InputError(arguments.other_file, 0, "shape",
                     "expected the shape of " + arguments.reference_file + ", " + text(reference) +
                         " ([requests, vocab]), got " + text(other));
  }
  const double tolerance = arguments.tolerance > 0 ? arguments.tolerance : logit_tolerance(*dtype);
  const LogitAgreement agreement = compare_logits(reference.values, other.values, reference.shape[0], reference.shape[1]);
  const bool agree = !agreement.non_finite && agreement.worst_relative_error <= tolerance;
  std::printf("%lld rows x %lld logits: worst relative error %.3g at row %lld, column %lld (tolerance %.3g for %s); "
              "%s; %lld values differ bitwise%s\n",
              static_cast<long long>(agreement.rows), static_cast<long long>(agreement.columns),
              agreement.worst_relative_error, static_cast<long long>(agreement.worst_row),
              static_cast<long long>(agreement.worst_column), tolerance, dtype_name(*dtype),
              agree ? "agree" : "DIFFER", static_cast<long long>(agreement.differing_values),
              agreement.non_finite ? "; a NaN or Inf is present" : "");
  std::fflush(stdout);
  if (!agree) throw std::runtime_error("the logits differ beyond the tolerance");
}

}  // namespace decodelab
