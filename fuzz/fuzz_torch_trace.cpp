// libFuzzer target: the torch.profiler trace reader (profiling/trace/torch_trace.h) and the reading
// and diagnosis built on it (profiling/diagnosis/torch_pass_reading.h). Whatever JSON arrives, reading
// it either throws InputError or yields a diagnosis; it never crashes, and every pass it
// finds points into the outline it built.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/base/errors.h"
#include "profiling/diagnosis/diagnosis.h"
#include "profiling/diagnosis/pass_reading.h"
#include "profiling/diagnosis/torch_pass_reading.h"
#include "profiling/trace/torch_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json root = nlohmann::json::parse(text, nullptr, false);
  if (root.is_discarded() || !decodelab::is_torch_trace(root)) return 0;
  try {
    const decodelab::TraceReading reading = decodelab::read_torch_trace(decodelab::parse_torch_trace(root, "fuzz.json"));
    for (const decodelab::PassReading* pass : reading.steps)
      if (pass->pass == nullptr) std::abort();
    (void)decodelab::format_diagnosis(decodelab::diagnose(reading));
  } catch (const decodelab::InputError&) {
  }
  return 0;
}
