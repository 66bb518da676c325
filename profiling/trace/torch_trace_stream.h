// A torch.profiler trace read straight from its file, plain or gzip, without holding the
// text or a JSON document: a SAX pass over the stream that keeps only the events the
// diagnosis reads (TorchTraceBuilder), so memory follows the events kept, not the file.
// Non-obvious choice: the kind of trace is known only at the end (decodelab's own Chrome
// trace names its schema in otherData, which may come after its events), so the reader
// keeps the first malformed event's error and raises it only once the file turned out to be
// a torch.profiler trace; otherwise it answers "not mine" and the caller reads the file the
// other way.
#pragma once

#include <filesystem>
#include <optional>

#include "profiling/trace/torch_trace.h"

namespace decodelab {

// nullopt: valid JSON but not a torch.profiler trace. Unreadable files, corrupt gzip, bad
// JSON and malformed events of a torch trace throw InputError (file, line, key, what was expected).
std::optional<TorchTrace> stream_torch_trace(const std::filesystem::path& file);

}  // namespace decodelab
