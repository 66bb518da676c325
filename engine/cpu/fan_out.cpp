// The parallel regions a recorded op's CPU kernel opens (see fan_out.h): each op's shapes
// as its kernel reads them, put to that kernel's threshold.
#include "engine/cpu/fan_out.h"

#include <cstring>

namespace decodelab::cpu {

namespace {

int64_t dimension(const TensorInfo& tensor, int axis) {
  return axis < tensor.rank ? tensor.shape[static_cast<size_t>(axis)] : 1;
}

}  // namespace

int parallel_regions(const OpDesc& op) {
  const auto named = [&](const char* name) { return std::strcmp(op.name, name) == 0; };
  const auto& in = op.inputs;
  const auto& out = op.outputs;
  if (named("matmul") && in.size() >= 2) {
    const int64_t rows = dimension(in[0], 0), k = dimension(in[0], 1), n = dimension(in[1], 0);
    if (rows == 0 || n == 0) return 0;
    return (matmul_widen_fans_out(rows, k) ? 1 : 0) + (matmul_fans_out(rows, n, k) ? 1 : 0);
  }
  if (named("attention") && !in.empty())
    return attention_fans_out(2 * op.attention.query_key_pairs * dimension(in[0], 1)) ? 1 : 0;
  if ((named("add") || named("swiglu") || named("cast") || named("copy")) && !out.empty())
    return elementwise_fans_out(out[0].numel()) ? 1 : 0;
  if (named("rmsnorm") && !in.empty()) return rmsnorm_fans_out(dimension(in[0], 0), dimension(in[0], 1)) ? 1 : 0;
  if (named("rope") && in.size() >= 2)
    return rope_fans_out(dimension(in[0], 0), dimension(in[0], 1), dimension(in[1], 1)) ? 1 : 0;
  if (named("kv_store") && !in.empty()) return kv_store_fans_out(2 * in[0].numel()) ? 1 : 0;
  if (named("embedding") && !out.empty()) return embedding_fans_out(dimension(out[0], 0), dimension(out[0], 1)) ? 1 : 0;
  if (named("argmax") && !in.empty()) return argmax_fans_out(dimension(in[0], 0), dimension(in[0], 1)) ? 1 : 0;
  return 0;
}

}  // namespace decodelab::cpu
