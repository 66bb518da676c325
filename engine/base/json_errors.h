// One wording for "this file is not valid JSON", shared by every JSON reader (checkpoint
// headers and indexes, traces, results files): nlohmann's reason without its exception
// tag and position (the caller reports the file and line), and a plain hint when the
// text ends before the JSON does — what a truncated file looks like.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace decodelab {

// Catch nlohmann::json::exception, not only parse_error: a number too large for a double
// ("1e999") is an out_of_range error thrown by the parser.
inline std::string json_parse_problem(const nlohmann::json::exception& error, size_t text_size) {
  std::string reason = error.what();
  if (const size_t tag_end = reason.find("] "); reason.rfind("[json.exception.", 0) == 0 && tag_end != std::string::npos)
    reason = reason.substr(tag_end + 2);
  const auto* parse_error = dynamic_cast<const nlohmann::json::parse_error*>(&error);
  if (parse_error) {  // "parse error at line 1, column 7: <reason>"
    if (const size_t colon = reason.find(": "); colon != std::string::npos) reason = reason.substr(colon + 2);
  }
  std::string problem = "not valid JSON: ";
  problem += reason;
  if (parse_error && parse_error->byte >= text_size) problem += " (the text ends early: truncated?)";
  return problem;
}

// 1-based line of a parse error's byte in `text` (0 when the error has no position).
inline int json_error_line(const nlohmann::json::exception& error, std::string_view text) {
  const auto* parse_error = dynamic_cast<const nlohmann::json::parse_error*>(&error);
  if (!parse_error) return 0;
  const size_t end = parse_error->byte < text.size() ? parse_error->byte : text.size();
  int line = 1;
  for (size_t i = 0; i < end; ++i) line += text[i] == '\n';
  return line;
}

}  // namespace decodelab
