// libFuzzer target: the Nsight Compute CSV reader (profiling/trace/ncu_reader.h) and the reading
// `decodelab ncu` prints from what it accepts (limiter, % of roof, against the default
// device's roofs from configs/devices/). The input is an export's text, wide or long form.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/base/errors.h"
#include "profiling/trace/ncu_reader.h"
#include "profiling/nsight/ncu_reading.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const decodelab::NcuExport exported = decodelab::parse_ncu_csv(text, "fuzz.csv");
    const decodelab::NcuReport report = decodelab::read_ncu_report(exported);
    (void)decodelab::format_ncu_report(report);
    (void)decodelab::to_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);  // as `decodelab ncu --json`
  } catch (const decodelab::InputError&) {
  }
  return 0;
}
