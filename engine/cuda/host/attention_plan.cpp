// Attention planning: split count and workspace, from the shape and the device's size.
#include "engine/cuda/host/attention_plan.h"

#include <algorithm>

namespace decodelab::cuda {

namespace {

AttentionPlan plan_with_splits(const AttentionShape& shape, int64_t splits) {
  AttentionPlan plan;
  plan.split_length = std::max<int64_t>(shape.capacity, 1);
  if (splits > 1) {
    plan.split_length = (shape.capacity + splits - 1) / splits;
    plan.splits = static_cast<int>((shape.capacity + plan.split_length - 1) / plan.split_length);
  }
  return plan;
}

}  // namespace

int attention_group_chunks(const AttentionShape& shape) {
  const int group = shape.kv_heads > 0 ? shape.heads / shape.kv_heads : 1;
  return (group + kAttentionMaxGroup - 1) / kAttentionMaxGroup;
}

AttentionPlan plan_attention(const AttentionShape& shape, int multiprocessors) {
  const int64_t base_blocks = std::max<int64_t>(1, shape.rows * shape.kv_heads * attention_group_chunks(shape));
  const int64_t wanted = (2LL * std::max(multiprocessors, 1) + base_blocks - 1) / base_blocks;
  const int64_t longest = (shape.capacity + kAttentionMinSplitLength - 1) / kAttentionMinSplitLength;
  return plan_with_splits(shape, std::clamp<int64_t>(std::min(wanted, longest), 1, kAttentionMaxSplits));
}

size_t attention_workspace_floats(const AttentionShape& shape, const AttentionPlan& plan) {
  if (plan.splits <= 1) return 0;
  return static_cast<size_t>(shape.rows) * shape.heads * plan.splits * (shape.head_dim + 2);
}

AttentionPlan fit_attention_plan(const AttentionShape& shape, AttentionPlan plan, size_t available_floats) {
  if (attention_workspace_floats(shape, plan) <= available_floats) return plan;
  const size_t per_split = static_cast<size_t>(shape.rows) * shape.heads * (shape.head_dim + 2);
  const int64_t splits = per_split == 0 ? 1 : static_cast<int64_t>(available_floats / per_split);
  return plan_with_splits(shape, splits);
}

AttentionPlan plan_attention_within(const AttentionShape& shape, int multiprocessors, size_t reserved_floats,
                                    bool may_grow) {
  const AttentionPlan plan = plan_attention(shape, multiprocessors);
  return may_grow ? plan : fit_attention_plan(shape, plan, reserved_floats);
}

size_t attention_workspace_floats_up_to(const AttentionShape& largest, int multiprocessors) {
  size_t most = 0;
  AttentionShape shape = largest;
  for (int64_t rows = 1; rows <= largest.rows; ++rows) {
    shape.rows = rows;
    most = std::max(most, attention_workspace_floats(shape, plan_attention(shape, multiprocessors)));
  }
  return most;
}

AttentionShape attention_shape_of(int64_t q_rows, int64_t q_columns, const int64_t cache_shape[4]) {
  const int64_t head_dim = std::max<int64_t>(cache_shape[3], 1);
  return {q_rows, static_cast<int>(q_columns / head_dim), static_cast<int>(cache_shape[1]),
          static_cast<int>(cache_shape[3]), cache_shape[2]};
}

size_t AttentionWorkspace::reserve(const AttentionShape& largest) {
  reserved_ = std::max(reserved_, attention_workspace_floats_up_to(largest, multiprocessors_));
  return reserved_;
}

AttentionWorkspace::Call AttentionWorkspace::plan(const AttentionShape& shape, bool capturing) {
  Call call;
  call.device_plan = plan_attention(shape, multiprocessors_);
  call.plan = plan_attention_within(shape, multiprocessors_, reserved_, !capturing);
  call.floats = attention_workspace_floats(shape, call.plan);
  if (!capturing) reserved_ = std::max(reserved_, call.floats);
  return call;
}

}  // namespace decodelab::cuda
