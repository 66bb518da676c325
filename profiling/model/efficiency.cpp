// The efficiency table's buckets and lookup (see efficiency.h).
#include "profiling/model/efficiency.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "profiling/model/cost_model.h"

namespace decodelab {

int rows_class(int64_t rows) {
  if (rows <= 1) return 1;
  if (rows <= 8) return 2;
  if (rows <= 64) return 9;
  return 65;
}

std::string rows_class_label(int rows_from) {
  switch (rows_from) {
    case 1: return "1";
    case 2: return "2-8";
    case 9: return "9-64";
    default: return std::to_string(rows_from) + "+";
  }
}

int size_class(double size) { return size > 1 ? static_cast<int>(std::lround(std::log2(size))) : 0; }

Precision table_precision(const OpDesc& op, Precision cost_precision) {
  if (op.category == OpCategory::Attention && op.inputs.size() >= 2) return dtype_precision(op.inputs[1].dtype);
  return cost_precision;
}

ShapeBucket shape_bucket(const OpDesc& op) {
  ShapeBucket bucket;
  if (op.category == OpCategory::Matmul && op.inputs.size() >= 2 && op.inputs[1].rank >= 1) {
    bucket.rows_from = rows_class(tensor_rows(op.inputs[0]));
    bucket.size_log2 = size_class(static_cast<double>(op.inputs[1].shape[static_cast<size_t>(op.inputs[1].rank - 1)]));
    return bucket;
  }
  if (op.category == OpCategory::Attention && !op.inputs.empty()) {
    // Query rows per sequence, and the keys each query row reads on average.
    const AttentionExtent& extent = op.attention;
    const int64_t query_rows = std::max<int64_t>(1, tensor_rows(op.inputs[0]));
    const double per_row = static_cast<double>(extent.query_key_pairs) / static_cast<double>(query_rows);
    const double rows_per_key = extent.key_positions_read > 0
                                    ? static_cast<double>(extent.query_key_pairs) / static_cast<double>(extent.key_positions_read)
                                    : 1.0;
    bucket.rows_from = rows_class(std::llround(std::max(1.0, rows_per_key)));
    bucket.size_log2 = size_class(per_row);
    return bucket;
  }
  bucket.rows_from = rows_class(op.inputs.empty() ? 1 : tensor_rows(op.inputs[0]));
  bucket.size_log2 = size_class(op_cost(op).bytes());
  return bucket;
}

std::string describe_bucket(OpCategory category, const ShapeBucket& bucket) {
  const char* size = category == OpCategory::Matmul      ? "K"
                     : category == OpCategory::Attention ? "context"
                                                         : "bytes";
  return "rows " + rows_class_label(bucket.rows_from) + ", " + size + " ~ 2^" + std::to_string(bucket.size_log2);
}

namespace {

int rows_class_index(int rows_from) { return rows_from <= 1 ? 0 : rows_from <= 2 ? 1 : rows_from <= 9 ? 2 : 3; }

}  // namespace

EfficiencyLookup look_up_efficiency(const Roofs& roofs, OpCategory category, Precision precision,
                                    const ShapeBucket& bucket) {
  EfficiencyLookup found;
  found.flops = roofs.default_flops_efficiency;
  found.bytes = roofs.default_bytes_efficiency;
  if (precision == Precision::Tf32) precision = Precision::Fp32;  // tf32 runs as fp32 where no table says otherwise
  const std::string name = op_category_name(category);
  const Efficiency* best = nullptr;
  auto distance = [&](const Efficiency& row) {
    return std::make_pair(std::abs(rows_class_index(row.rows_from) - rows_class_index(bucket.rows_from)),
                          std::make_pair(std::abs(row.size_log2 - bucket.size_log2), row.size_log2));
  };
  for (const Efficiency& row : roofs.efficiency) {
    if (row.category != name || row.precision != precision) continue;
    if (!best || distance(row) < distance(*best)) best = &row;
  }
  if (!best) {
    found.said = roofs.efficiency_source.empty() ? "no efficiency entry for " + name + ": the roofs"
                                                 : "the device's stated efficiency (" + roofs.efficiency_source + ")";
    return found;
  }
  found.entry = best;
  found.flops = best->flops;
  found.bytes = best->bytes;
  found.exact = best->rows_from == bucket.rows_from && best->size_log2 == bucket.size_log2;
  const ShapeBucket used{best->rows_from, best->size_log2};
  found.said = found.exact ? "timed at " + describe_bucket(category, used)
                           : "nearest timed bucket " + describe_bucket(category, used) + " for " +
                                 describe_bucket(category, bucket);
  return found;
}

}  // namespace decodelab
