// How the CUDA attention splits each row's keys across blocks (FlashDecoding), and how
// much fp32 workspace a split needs. Plain C++ without CUDA headers (engine/cuda/host/
// is built in every configuration), so tests check the planning without a GPU.
// The non-obvious choice: a plan is made from the cache capacity, never the current
// length (only the device knows positions), so one plan serves every step of a captured
// graph; and because nothing may be allocated during a capture, the workspace of the
// largest decode plan is reserved before it (Backend::reserve_attention), so a captured
// step runs the plan an eager step runs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace decodelab::cuda {

constexpr int kAttentionMaxHeadDim = 256;
constexpr int kAttentionMaxGroup = 8;     // query heads sharing a KV head handled by one block
constexpr int kAttentionMaxSplits = 128;
constexpr int64_t kAttentionMinSplitLength = 64;

struct AttentionShape {
  int64_t rows = 0;       // query rows M
  int heads = 0;          // query heads
  int kv_heads = 0;
  int head_dim = 0;
  int64_t capacity = 0;   // cached positions per sequence (the cache's third dim)
};

// The split of each row's keys into independent blocks: enough blocks to fill the device
// (twice its multiprocessors), each at least 64 positions long, at most 128 splits;
// splits past a row's length exit at once.
struct AttentionPlan {
  int splits = 1;
  int64_t split_length = 0;
  // Spelled out: .cu files include this header and compile as C++17.
  bool operator==(const AttentionPlan& other) const {
    return splits == other.splits && split_length == other.split_length;
  }
};

// Blocks per (row, KV head): one per group of up to kAttentionMaxGroup query heads.
int attention_group_chunks(const AttentionShape& shape);
AttentionPlan plan_attention(const AttentionShape& shape, int multiprocessors);
// fp32 workspace (floats) a plan needs: partial outputs, maxima and sums per split.
size_t attention_workspace_floats(const AttentionShape& shape, const AttentionPlan& plan);
// The largest plan no larger than `plan` whose workspace fits in `available_floats`.
AttentionPlan fit_attention_plan(const AttentionShape& shape, AttentionPlan plan, size_t available_floats);
// The plan a call runs: the device's plan when the workspace holds it or may grow to it
// (`may_grow`: not capturing), else the largest that fits `reserved_floats`.
AttentionPlan plan_attention_within(const AttentionShape& shape, int multiprocessors, size_t reserved_floats,
                                    bool may_grow);
// Workspace that covers the plan of every call of up to `largest.rows` rows (the plan's
// splits shrink as rows grow, so the largest need is not always at the most rows).
size_t attention_workspace_floats_up_to(const AttentionShape& largest, int multiprocessors);

// The shape an attention call plans from: q [rows, heads * head_dim] and a cache
// [sequences, kv_heads, capacity, head_dim].
AttentionShape attention_shape_of(int64_t q_rows, int64_t q_columns, const int64_t cache_shape[4]);

// CudaBackend's attention planning, kept free of CUDA so that tests run the very code the
// backend runs: the fp32 workspace reserved so far (it only grows, as the backend's
// scratch does), the plan each call runs, and whether a captured call had to run fewer
// splits than an eager one (its shape was not reserved before the capture).
class AttentionWorkspace {
 public:
  explicit AttentionWorkspace(int multiprocessors) : multiprocessors_(multiprocessors) {}

  struct Call {
    AttentionPlan plan;          // what runs
    AttentionPlan device_plan;   // what an eager call of this shape runs
    size_t floats = 0;           // workspace the plan needs (never more than reserved after it)
    bool smaller_than_device_plan() const { return !(plan == device_plan); }
  };
  // Before a capture: the workspace of every decode call up to `largest` (Backend::
  // reserve_attention). Returns the floats now reserved.
  size_t reserve(const AttentionShape& largest);
  // One call: outside a capture the workspace grows to the device's plan; inside one it
  // cannot (nothing may be allocated), so the plan shrinks to what is reserved.
  Call plan(const AttentionShape& shape, bool capturing);
  size_t reserved_floats() const { return reserved_; }

 private:
  int multiprocessors_;
  size_t reserved_ = 0;
};

}  // namespace decodelab::cuda
