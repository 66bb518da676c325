// Result rows in tests: reading a results file, the host a row should name, and comparing
// rows "figures aside": what a run did (scenario, shapes, memory plan,
// tokens, counts of steps and groups, the decode phase's intensity) stays; what it measured
// (timings, rates, roof fractions, limiter verdicts) and where it ran (placement) go. Two
// runs of the same work on the same build then compare equal wherever they ran.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/cli_runner.h"

namespace decodelab::testing {

inline nlohmann::json read_json(const std::filesystem::path& file) {
  return nlohmann::json::parse(read_text_file(file));
}

// This machine's short host name: the node a row run here names in its placement.
inline std::string short_hostname() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string name = host;
  return name.substr(0, name.find('.'));
}

inline nlohmann::json without_figures(nlohmann::json row) {
  for (const char* measured : {"metrics", "metrics_spread", "placement"}) row.erase(measured);
  if (row.contains("repeats")) {
    for (nlohmann::json& repeat : row["repeats"]) {
      nlohmann::json counts;
      for (const char* count : {"decode_tokens", "decode_steps", "groups"})
        if (repeat.contains(count)) counts[count] = repeat[count];
      repeat = counts;
    }
  }
  if (row.contains("decode_roofline") && row["decode_roofline"].is_object()) {
    row["decode_roofline"] = {{"intensity_flop_per_byte", row["decode_roofline"]["intensity_flop_per_byte"]}};
  }
  // Lab rows: the comparison's figures.
  for (const char* measured : {"fixed_tokens_per_s", "buggy_tokens_per_s", "slowdown", "decode_slowdown", "verdict"})
    row.erase(measured);
  // The prediction stays (the same model and roofs wherever the row ran); its errors and
  // verdict are the measurement's.
  for (const char* measured : {"decode_tokens_per_s_prediction_error", "decode_slowdown_prediction_error",
                               "end_to_end_slowdown_prediction_error"})
    row.erase(measured);
  if (row.contains("prediction") && row["prediction"].is_object()) row["prediction"].erase("verdict");
  return row;
}

}  // namespace decodelab::testing
