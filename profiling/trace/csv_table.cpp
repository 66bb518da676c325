// A one-pass RFC 4180 splitter. A quote opens a quoted field only at the start of a field;
// elsewhere it is an ordinary character, as spreadsheet tools read it.
#include "profiling/trace/csv_table.h"

#include <cstdint>
#include <fstream>
#include <sstream>

#include "engine/base/errors.h"

namespace decodelab {

void for_each_csv_record(std::string_view text, const std::string& file_name,
                         const std::function<bool(std::string_view)>& skip_line,
                         const std::function<void(const CsvRecord&)>& visit) {
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte order mark
  CsvRecord record;
  size_t position = 0;
  int line = 1;
  while (position < text.size()) {
    const size_t line_end = text.find('\n', position);
    std::string_view first_line = text.substr(position, line_end == std::string_view::npos ? std::string_view::npos : line_end - position);
    if (!first_line.empty() && first_line.back() == '\r') first_line.remove_suffix(1);
    if (skip_line && skip_line(first_line)) {
      if (line_end == std::string_view::npos) break;
      position = line_end + 1;
      ++line;
      continue;
    }

    record.line = line;
    record.fields.clear();
    std::string field;
    bool quoted = false;       // inside a quoted field
    bool field_started = false;  // a character (or an opening quote) was seen in this field
    int quote_line = line;
    bool record_done = false;
    while (!record_done) {
      if (position >= text.size()) {
        if (quoted) {
          throw InputError(file_name, quote_line, "column " + std::to_string(record.fields.size() + 1),
                           "a quoted field is never closed: the file is truncated or malformed");
        }
        record.fields.push_back(std::move(field));
        record_done = true;
        break;
      }
      const char c = text[position++];
      if (quoted) {
        if (c == '"') {
          if (position < text.size() && text[position] == '"') {
            field += '"';
            ++position;
          } else {
            quoted = false;
          }
        } else {
          if (c == '\n') ++line;
          field += c;
        }
        continue;
      }
      switch (c) {
        case '"':
          if (!field_started) {
            quoted = true;
            quote_line = line;
            field_started = true;
          } else {
            field += c;
          }
          break;
        case ',':
          record.fields.push_back(std::move(field));
          field.clear();
          field_started = false;
          break;
        case '\r':
          if (position < text.size() && text[position] == '\n') break;  // CRLF: the \n ends the record
          field += c;
          field_started = true;
          break;
        case '\n':
          record.fields.push_back(std::move(field));
          ++line;
          record_done = true;
          break;
        default:
          field += c;
          field_started = true;
      }
    }
    visit(record);
  }
}

std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& file_name,
                                 const std::function<bool(std::string_view)>& skip_line) {
  std::vector<CsvRecord> records;
  for_each_csv_record(text, file_name, skip_line, [&](const CsvRecord& record) { records.push_back(record); });
  return records;
}

std::string read_text_file(const std::filesystem::path& file) {
  std::error_code error;
  if (std::filesystem::is_directory(file, error)) throw InputError(file.string(), 0, "", "is a directory, expected a CSV file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string(), 0, "", "cannot be read (missing or not permitted)");
  // One buffer of the file's size: an export is held once, not once more in a stream's copy.
  std::string text;
  const std::uintmax_t size = std::filesystem::file_size(file, error);
  if (!error) text.reserve(static_cast<size_t>(size));
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) text.append(chunk, static_cast<size_t>(in.gcount()));
  if (in.bad()) throw InputError(file.string(), 0, "", "cannot be read (an I/O error)");
  return text;
}

std::string csv_column_label(size_t index, const std::string& header) {
  std::string label = "column " + std::to_string(index + 1);
  if (!header.empty()) label += " \"" + header + "\"";
  return label;
}

}  // namespace decodelab
