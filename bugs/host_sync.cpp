// Bug: host syncs in the decode loop.
//
// What real code does: reads a device value on the host inside the loop — `.item()` on
// the new token to check for end-of-sequence (per token), the same check written as a
// loop over the batch (per sequence), or a debug print of an activation after every
// layer (per layer). Each read is a device-to-host copy into pageable memory, and the host
// must wait for the whole queue before it: the host loses its run-ahead, the device idles
// while the host enqueues the next ops.
// What a profiler sees: device-to-host copies and stream syncs inside steps; gaps on the
// device timeline after each one; step time = host time + device time instead of the max.
// The fix: keep tokens on the device; read back once at the end (or every K steps,
// asynchronously into pinned memory, to check stop conditions).
#include <cstdint>

#include "bugs/deviations.h"

namespace decodelab::bugs {

void sync_after_layer(Ops& ops, const BugSet& bugs, const Tensor& hidden) {
  if (bugs.host_sync_per != HostSyncPer::Layer) return;
  uint32_t value = 0;  // print(hidden[0, 0].item())
  ops.read_to_host(&value, hidden.data, dtype_size(hidden.dtype), /*pinned=*/false, "item");
}

void sync_after_step(Ops& ops, const BugSet& bugs, const Tensor& tokens, int written_position, int sequences) {
  int32_t token = 0;
  auto read_token = [&](int sequence) {  // tokens[sequence, position].item()
    const int64_t offset = sequence * tokens.strides[0] + written_position * tokens.strides[1];
    ops.read_to_host(&token, tokens.as<int32_t>() + offset, sizeof token, /*pinned=*/false, "item");
  };
  if (bugs.host_sync_per == HostSyncPer::Token) read_token(0);
  if (bugs.host_sync_per == HostSyncPer::Sequence)
    for (int sequence = 0; sequence < sequences; ++sequence) read_token(sequence);
}

}  // namespace decodelab::bugs
