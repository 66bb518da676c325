// Result rows in tests: reading a results file, the host a row should name, and comparing
// rows "figures aside": what a run did (scenario, shapes, memory plan,
// tokens, counts of steps and groups, the decode phase's intensity) stays; what it measured
// (timings, rates, intervals, the machine check, roof fractions, limiter verdicts) keeps
// only its names, and where it ran (placement) goes. Two runs of the same work on the same
// build then compare equal wherever they ran, with the same figures under the same names.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/cli_runner.h"

namespace decodelab::testing {

// This machine's short host name: the node a row run here names in its placement.
inline std::string short_hostname() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string name = host;
  return name.substr(0, name.find('.'));
}

// The names of a measured section without its values: the same figures under the same names.
inline nlohmann::json names_only(const nlohmann::json& value) {
  if (value.is_object()) {
    nlohmann::json names = nlohmann::json::object();
    for (const auto& [key, child] : value.items()) names[key] = names_only(child);
    return names;
  }
  return nullptr;
}

inline nlohmann::json without_figures(nlohmann::json row) {
  row.erase("placement");
  row.erase("suspect");  // present only when a figure fell far below its prediction, a measured state
  for (const char* measured : {"metrics", "intervals", "machine", "run", "fixed", "buggy", "headline", "verdict", "pairs",
                               "fixed_tokens_per_s", "buggy_tokens_per_s", "decode_slowdown", "end_to_end_slowdown",
                               "timed_seconds", "budget_seconds", "stopped_because", "contended", "machine_during",
                               "machine_after"}) {
    if (row.contains(measured)) row[measured] = names_only(row[measured]);
  }
  if (row.contains("repeats")) {
    for (nlohmann::json& repeat : row["repeats"]) {
      nlohmann::json counts = names_only(repeat);
      for (const char* count : {"decode_tokens", "decode_steps", "groups"})
        if (repeat.contains(count)) counts[count] = repeat[count];
      repeat = counts;
    }
  }
  if (row.contains("decode_roofline") && row["decode_roofline"].is_object()) {
    nlohmann::json reading = names_only(row["decode_roofline"]);
    reading.erase("above_roof");  // present only above the roof, a measured state
    reading["intensity_flop_per_byte"] = row["decode_roofline"]["intensity_flop_per_byte"];
    row["decode_roofline"] = reading;
  }
  // The prediction is priced with the calibration as it was when the row ran, which
  // `decodelab calibrate` may replace between two runs of the same point, so they may be
  // priced differently: its figures are names only, like the errors
  // and verdict beside them. Its noise is present only on a noisy machine, a measured state.
  if (row.contains("prediction") && row["prediction"].is_object()) row["prediction"].erase("noise");
  for (auto& [key, value] : row.items()) {
    if (key.rfind("predicted_", 0) == 0 || key.find("_prediction_error") != std::string::npos || key == "prediction")
      value = names_only(value);
  }
  return row;
}

}  // namespace decodelab::testing
