// CSV as the profiling tools write it (Nsight Compute, Nsight Systems): RFC 4180 fields
// (quotes, doubled quotes, commas and line breaks inside quotes, CRLF), each record with
// the line it starts on, so that every later error names the file, the row and the column.
// Non-obvious choice: the text is split into records up front and a quote left open at
// the end of the file is an error naming the line where the field opened — a truncated
// export fails here, loudly, not as a shifted column further on.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace decodelab {

struct CsvRecord {
  int line = 0;  // 1-based line on which the record starts
  std::vector<std::string> fields;

  // An empty line (one empty field).
  bool blank() const { return fields.empty() || (fields.size() == 1 && fields[0].empty()); }
};

// Lines for which `skip_line` returns true, when they start a record, are dropped (the
// tools' own chatter, such as "==PROF== Connected to process"). Throws InputError.
std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& file_name,
                                 const std::function<bool(std::string_view)>& skip_line = {});

// The same records handed to `visit` one at a time (the record is reused between calls), so
// that a trace of millions of rows never holds all its cells at once.
void for_each_csv_record(std::string_view text, const std::string& file_name,
                         const std::function<bool(std::string_view)>& skip_line,
                         const std::function<void(const CsvRecord&)>& visit);

// The whole file; an InputError naming it when it cannot be read.
std::string read_text_file(const std::filesystem::path& file);

// "column 3 \"Duration (ns)\"": how errors name a column (1-based, with its header).
std::string csv_column_label(size_t index, const std::string& header);

}  // namespace decodelab
