// libFuzzer target: the scenario parser, as `decodelab run` and `decodelab sweep` use it.
// The input is a scenario file's text: YAML syntax, then the sweep expansion, then full
// validation of each point (the model is resolved through the catalogue, as in the CLI).
// The one thing bad input may do is throw InputError; any other exception escapes and
// libFuzzer reports it (an uncaught exception aborts), as do ASan/UBSan findings.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/base/errors.h"
#include "lab/scenario/scenario.h"
#include "lab/run/sweep.h"

namespace {

// Validating every point of a large sweep reads the model file each time; a handful of
// points exercises the same code.
constexpr size_t kPointsValidated = 8;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::filesystem::path file = "fuzz/scenario.yaml";
  try {
    const YAML::Node document = decodelab::parse_scenario_text(text, file);
    const std::vector<decodelab::SweepPoint> points = decodelab::expand_sweep(document, file);
    for (size_t i = 0; i < points.size() && i < kPointsValidated; ++i) {
      const decodelab::Scenario scenario = decodelab::parse_scenario(points[i].scenario, file);
      (void)decodelab::scenario_to_yaml(scenario);  // rendering back must work for any valid scenario
    }
  } catch (const decodelab::InputError&) {
  }
  return 0;
}
