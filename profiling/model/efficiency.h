// The efficiency table's rule: which shape bucket an op falls in, and the η the prediction
// prices it with (Roofs::efficiency; the one pricing rule is in prediction.h).
//
// A bucket is defined by a rule, not by the shapes of a model: the rows class — the
// activation rows of a matmul, the query rows per sequence of attention, the rows of any other
// op: 1, 2-8, 9-64 or 65 and more (one row streams its weights, a few rows start to cost
// compute, a prefill is compute-bound) — and the size class, the nearest power of two of the
// depth K of a matmul (what a matmul's cost per output element scales with), of the mean
// keys each query row of attention reads, and of the declared bytes of any other op.
//
// Non-obvious choice: a bucket the table lacks falls back to the nearest one of the same
// category and precision — the nearest rows class first (it changes what bounds the op),
// then the nearest size class, the smaller on a tie — and the prediction names that
// fallback in its source line; a category with no entry at all takes the device's default
// (1 on a CPU: the roof itself).
#pragma once

#include <cstdint>
#include <string>

#include "engine/events/event_sink.h"
#include "profiling/device_spec.h"

namespace decodelab {

struct ShapeBucket {
  int rows_from = 1;  // 1, 2, 9 or 65
  int size_log2 = 0;
  bool operator==(const ShapeBucket&) const = default;
};

// The first row count of `rows`'s class (1, 2, 9, 65) and the class in words ("2-8").
int rows_class(int64_t rows);
std::string rows_class_label(int rows_from);
// The nearest power of two's exponent of a positive size (0 for sizes up to 1).
int size_class(double size);
// The precision an op's row is kept under: the KV cache's for attention (its bytes are the
// cache's), else the cost model's (a matmul's operands').
Precision table_precision(const OpDesc& op, Precision cost_precision);
// The bucket of a recorded op, by the rule above.
ShapeBucket shape_bucket(const OpDesc& op);
// "rows 2-8, K ~ 2^10" / "rows 1, context ~ 2^9" / "rows 1, bytes ~ 2^20", by category.
std::string describe_bucket(OpCategory category, const ShapeBucket& bucket);

struct EfficiencyLookup {
  double flops = 1;   // η_flops
  double bytes = 1;   // η_bytes
  const Efficiency* entry = nullptr;  // the row used; null when the category has none
  bool exact = false;                 // the row is the op's own bucket
  std::string said;                   // how it was found, for a source line
};

// η for an op of `category`, `precision` and `bucket` against `roofs` by the rule above.
EfficiencyLookup look_up_efficiency(const Roofs& roofs, OpCategory category, Precision precision,
                                    const ShapeBucket& bucket);

}  // namespace decodelab
