// Chrome Trace Event JSON (what Perfetto and chrome://tracing open), written from a Trace
// and read back into one. Layout: one process, two tracks — "host" (ranges as nested X
// slices, each op's enqueue, host calls) and "device stream" (each op's execution, with
// its shapes, strides, dtypes, FLOPs, bytes, category and label as args, under the same
// ranges again, category "device_range", each spanning its first to its last device op)
// — and a flow arrow from each enqueue to its device slice. otherData carries the trace
// metadata. The reader takes ranges from the host track only (their exact host times).
// Non-obvious choice: an op's full description is written once, on its device slice (or
// on its enqueue slice when it never ran), keyed by "op_index", its position in the
// trace, which stays unique when op ids restart; times are µs with ns resolution
// relative to "origin_ns", so a write -> read round trip is exact.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "profiling/trace.h"

namespace decodelab {

constexpr int kChromeTraceSchemaVersion = 1;

nlohmann::json chrome_trace_json(const Trace& trace);
// Atomic write (temp file + rename).
void write_chrome_trace(const Trace& trace, const std::filesystem::path& file);

// Loads a trace this writer produced (plain or gzip-compressed). Malformed input throws
// InputError naming the file and the event index ("traceEvents[12]") or the line of a
// JSON syntax error.
Trace read_chrome_trace(const std::filesystem::path& file);
Trace parse_chrome_trace(std::string_view text, const std::string& file_name);
Trace chrome_trace_from_json(const nlohmann::json& root, const std::string& file_name);

}  // namespace decodelab
