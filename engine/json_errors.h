// One wording for "this file is not valid JSON", shared by every JSON reader (checkpoint
// headers and indexes, traces, results files): nlohmann's reason without its exception
// tag and position (the caller reports the file and line), and a plain hint when the
// text ends before the JSON does — what a truncated file looks like.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace decodelab {

inline std::string json_parse_problem(const nlohmann::json::parse_error& error, size_t text_size) {
  std::string reason = error.what();
  if (const size_t colon = reason.find(": "); colon != std::string::npos) reason = reason.substr(colon + 2);
  std::string problem = "not valid JSON: ";
  problem += reason;
  if (error.byte >= text_size) problem += " (the text ends early: truncated?)";
  return problem;
}

}  // namespace decodelab
