// The trace files `decodelab diagnose` reads, told apart by their content, not their name:
// decodelab's own Chrome trace (otherData.schema "decodelab-trace") or a torch.profiler
// trace (the Kineto JSON, or the legacy export of a torch built without Kineto), plain or
// gzip-compressed. Either becomes the same pass-level reading the diagnosis judges.
#pragma once

#include <filesystem>

#include "profiling/diagnosis/pass_reading.h"

namespace decodelab {

// Malformed input, or a JSON file that is neither kind, throws InputError.
TraceReading read_trace_file(const std::filesystem::path& file);

}  // namespace decodelab
