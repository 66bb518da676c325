// Rows on stdout as llama-bench prints them (`-o md|csv|json|jsonl`): `run`, `compare`,
// `lab` and `sweep` hand over their rows as the JSON objects their --json files hold, and
// this file only formats them. md is each command's own markdown table (printed by the
// command); csv, json and jsonl are generic over the row objects, so a field added to a
// row shows up here without an edit. Non-obvious choice: csv flattens nested objects to
// dotted columns (metrics.decode_tokens_per_s) and joins lists of scalars with spaces,
// but leaves out lists of objects or lists (repeats, outputs): those only json/jsonl carry.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace decodelab {

enum class RowFormat { Markdown, Csv, Json, Jsonl };

// "md", "csv", "json", "jsonl" (the -o values).
const char* row_format_name(RowFormat format);
std::vector<std::string> row_format_names();
RowFormat parse_row_format(const std::string& name);  // one of row_format_names(); else md

// The rows as csv (a header of every column any row has, in first-seen order), a JSON
// list, or one JSON object per line. Not for RowFormat::Markdown (the command's table).
std::string format_rows(const std::vector<nlohmann::json>& rows, RowFormat format);

}  // namespace decodelab
