// Telling the two trace kinds apart and reading either.
#include "profiling/trace/trace_file.h"

#include "profiling/trace/chrome_trace.h"
#include "profiling/diagnosis/torch_pass_reading.h"
#include "profiling/trace/torch_trace.h"
#include "profiling/trace/torch_trace_stream.h"
#include "profiling/trace/trace_text.h"

namespace decodelab {

TraceReading read_trace_file(const std::filesystem::path& file) {
  // A torch.profiler trace is streamed (its files run to hundreds of MB); anything else is
  // parsed whole, as decodelab's own Chrome trace.
  if (std::optional<TorchTrace> torch = stream_torch_trace(file)) return read_torch_trace(*torch);
  const std::string name = file.string();
  const nlohmann::json root = parse_trace_json(read_trace_text(file), name);
  if (is_torch_trace(root)) return read_torch_trace(parse_torch_trace(root, name));
  return read_trace(chrome_trace_from_json(root, name));  // decodelab's, or an error saying what was expected
}

}  // namespace decodelab
