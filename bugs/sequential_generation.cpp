// Bug: sequential generation instead of batching.
//
// What real code does: calls generate() once per request in a Python loop, so N requests
// run N times at batch 1 instead of once at batch N.
// What a profiler sees: batch-1 decode steps, N times the steps, and the whole model's
// weights streamed again for every request (decode at small batch is memory-bound, so a
// batch of N costs about the same per step as one request).
// The fix: pad to a common length and generate the batch together (or continuous batching).
#include "bugs/deviations.h"

namespace decodelab::bugs {

int group_size(const BugSet& bugs, int batch_size) { return bugs.sequential_generation ? 1 : batch_size; }

}  // namespace decodelab::bugs
