// Generic row printers for `-o csv|json|jsonl` (see row_output.h).
#include "lab/report/row_output.h"

#include <cstdio>
#include <map>
#include <stdexcept>

namespace decodelab {

namespace {

// RFC 4180: a field holding a comma, a quote or a line break is quoted, quotes doubled.
std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string scalar_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  if (value.is_number_float()) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", value.get<double>());
    return text;
  }
  return value.dump();  // integers, booleans
}

// Flattened leaves: ("metrics.ttft_ms", "1.25"); lists of scalars as one space-joined cell.
void flatten(const nlohmann::json& value, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& cells) {
  if (value.is_object()) {
    for (const auto& [key, child] : value.items()) flatten(child, prefix.empty() ? key : prefix + "." + key, cells);
    return;
  }
  if (value.is_array()) {
    std::string joined;
    for (const nlohmann::json& item : value) {
      if (item.is_structured()) return;  // a list of objects or lists: json/jsonl only
      joined += (joined.empty() ? "" : " ") + scalar_text(item);
    }
    cells.emplace_back(prefix, joined);
    return;
  }
  cells.emplace_back(prefix, scalar_text(value));
}

std::string csv_rows(const std::vector<nlohmann::json>& rows) {
  std::vector<std::string> columns;
  std::map<std::string, size_t> column_index;
  std::vector<std::map<std::string, std::string>> table;
  for (const nlohmann::json& row : rows) {
    std::vector<std::pair<std::string, std::string>> cells;
    flatten(row, "", cells);
    std::map<std::string, std::string> line;
    for (auto& [column, text] : cells) {
      if (column_index.emplace(column, columns.size()).second) columns.push_back(column);
      line[column] = std::move(text);
    }
    table.push_back(std::move(line));
  }
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i) out += ',';
    out += csv_cell(columns[i]);
  }
  out += "\n";
  for (const auto& line : table) {
    for (size_t i = 0; i < columns.size(); ++i) {
      if (i) out += ',';
      const auto cell = line.find(columns[i]);
      if (cell != line.end()) out += csv_cell(cell->second);
    }
    out += "\n";
  }
  return out;
}

}  // namespace

const char* row_format_name(RowFormat format) {
  switch (format) {
    case RowFormat::Markdown: return "md";
    case RowFormat::Csv: return "csv";
    case RowFormat::Json: return "json";
    case RowFormat::Jsonl: return "jsonl";
  }
  return "md";
}

std::vector<std::string> row_format_names() { return {"md", "csv", "json", "jsonl"}; }

RowFormat parse_row_format(const std::string& name) {
  for (RowFormat format : {RowFormat::Csv, RowFormat::Json, RowFormat::Jsonl})
    if (name == row_format_name(format)) return format;
  return RowFormat::Markdown;
}

std::string format_rows(const std::vector<nlohmann::json>& rows, RowFormat format) {
  switch (format) {
    case RowFormat::Csv: return csv_rows(rows);
    case RowFormat::Json: return nlohmann::json(rows).dump(2) + "\n";
    case RowFormat::Jsonl: {
      std::string out;
      for (const nlohmann::json& row : rows) out += row.dump() + "\n";
      return out;
    }
    case RowFormat::Markdown: break;
  }
  throw std::logic_error("format_rows: markdown is the command's own table");
}

}  // namespace decodelab
