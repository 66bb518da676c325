// libFuzzer target: the Chrome trace reader (profiling/trace/chrome_trace.h). A trace it accepts
// must also survive a round trip: written back with chrome_trace_json and read again, it
// is the same trace — so the fuzzer checks the writer and the reader against each other.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/base/errors.h"
#include "profiling/trace/chrome_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  decodelab::Trace trace;
  try {
    trace = decodelab::parse_chrome_trace(text, "fuzz.json");
  } catch (const decodelab::InputError&) {
    return 0;
  }
  const std::string written = decodelab::chrome_trace_json(trace).dump();
  const decodelab::Trace again = decodelab::parse_chrome_trace(written, "round-trip.json");  // must not throw
  if (!(again == trace)) std::abort();  // the writer and the reader disagree
  return 0;
}
