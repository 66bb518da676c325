// Bug: no KV cache.
//
// What real code does: generates with `use_cache=False` (or a hand-written loop that
// calls model(input_ids) on the whole sequence each step), so every step re-runs the
// prompt and everything generated so far, and keeps only the last position's logits.
// What a profiler sees: step time and FLOPs that grow linearly with position (total work
// O(n^2)); decode matmuls with M = prefix length instead of M = batch; prefill-shaped
// attention in every step.
// The fix: keep past keys/values (past_key_values / a preallocated KV cache) and run each
// decode step on the one new token.
#include "bugs/deviations.h"
#include "engine/model/model.h"

namespace decodelab::bugs {

void decode_step_without_cache(Model& model, Ops& ops, const ForwardPass& cached_step,
                               const Tensor& prefix_positions) {
  // The whole prefix: positions 0..L-1 of every sequence, L = the cached step's position + 1.
  const int prefix_length = cached_step.first_position + 1;
  ForwardPass pass = cached_step;
  pass.rows_per_sequence = prefix_length;
  pass.first_position = 0;
  pass.positions = prefix_positions.rows(0, int64_t{cached_step.sequences} * prefix_length);
  ops.fill_positions(pass.positions, 0, prefix_length);
  model.forward(ops, pass);
}

}  // namespace decodelab::bugs
