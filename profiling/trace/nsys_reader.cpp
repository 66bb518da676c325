// nsys stats CSV -> rows. A small state machine: outside a table, look for a header this
// reader knows; inside one, every record up to a blank line, the tool's next message or
// the next header is a data row.
#include "profiling/trace/nsys_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>

#include "engine/base/errors.h"
#include "profiling/trace/csv_table.h"
#include "profiling/trace/nsight_units.h"

namespace decodelab {

const char* nsys_report_name(NsysReport report) {
  switch (report) {
    case NsysReport::GpuTrace: return "cuda_gpu_trace";
    case NsysReport::ApiTrace: return "cuda_api_trace";
    case NsysReport::NvtxTrace: return "nvtx_pushpop_trace";
    case NsysReport::KernelSummary: return "cuda_gpu_kern_sum";
    case NsysReport::ApiSummary: return "cuda_api_sum";
  }
  return "?";
}

bool NsysTables::has(NsysReport report) const { return std::find(reports.begin(), reports.end(), report) != reports.end(); }

namespace {

std::string lower(std::string_view text) {
  std::string result(text);
  for (char& c : result) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

// The tool's own lines between tables ("Processing [x.sqlite] with [cuda_gpu_trace.py]...").
bool is_tool_message(const std::vector<std::string>& fields) {
  std::string_view first = fields.empty() ? std::string_view() : std::string_view(fields[0]);
  while (!first.empty() && first.front() == ' ') first.remove_prefix(1);
  for (std::string_view prefix : {"Processing [", "NOTICE:", "Generating SQLite", "Exporting ", "SKIPPED:", "WARNING:",
                                   "ERROR:", "It is assumed", "Consider using", "** "}) {
    if (first.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

// A recognised header: the report and each column's name and unit.
struct Header {
  NsysReport report = NsysReport::GpuTrace;
  std::vector<HeaderUnit> columns;
  std::vector<std::string> lowered;  // the column names in lower case, made once: find() runs per cell
  int line = 0;

  std::optional<size_t> find(std::string_view name) const {
    const std::string wanted = lower(name);
    for (size_t i = 0; i < lowered.size(); ++i) {
      if (lowered[i] == wanted) return i;
    }
    return std::nullopt;
  }
  bool has(std::string_view name) const { return find(name).has_value(); }
};

std::optional<Header> recognise(const CsvRecord& record) {
  Header header;
  header.line = record.line;
  for (const std::string& field : record.fields) {
    header.columns.push_back(split_header_unit(field));
    header.lowered.push_back(lower(header.columns.back().name));
  }
  const bool times = header.has("Start") && header.has("Name");
  if (times && header.has("End") && (header.has("Lvl") || header.has("RangeId") || header.has("NameTree") || header.has("RangeStack"))) {
    header.report = NsysReport::NvtxTrace;
  } else if (times && header.has("Duration") &&
             (header.has("Result") || header.has("Thread Name") || header.has("TID") || header.has("T-Pri"))) {
    header.report = NsysReport::ApiTrace;
  } else if (times && header.has("Duration")) {
    header.report = NsysReport::GpuTrace;
  } else if (header.has("Total Time") && header.has("Name") && header.has("Instances")) {
    header.report = NsysReport::KernelSummary;
  } else if (header.has("Total Time") && header.has("Name") && header.has("Num Calls")) {
    header.report = NsysReport::ApiSummary;
  } else {
    return std::nullopt;
  }
  return header;
}

// Reads the cells of one data row, with errors that name the file, row and column.
class RowReader {
 public:
  RowReader(const std::string& file, const Header& header, const CsvRecord& record)
      : file_(file), header_(header), record_(record) {
    const size_t width = header.columns.size();
    if (record.fields.size() < width) {
      const size_t missing = record.fields.size();
      throw InputError(file, record.line, column_label(missing),
                       "the row ends after " + std::to_string(missing) + " of " + std::to_string(width) +
                           " columns: the report is truncated or malformed");
    }
    if (record.fields.size() > width) {
      throw InputError(file, record.line, csv_column_label(width, ""),
                       "the row has " + std::to_string(record.fields.size()) + " cells but the header " +
                           std::to_string(width) + ": the report is malformed");
    }
  }

  std::string text(std::string_view column) const {
    const auto index = header_.find(column);
    return index ? record_.fields[*index] : std::string();
  }

  // A time column in nanoseconds; required columns must hold a number.
  std::optional<double> time_ns(std::string_view column, bool required) const {
    return scaled(column, nsys_time_unit_to_ns, "time", "ns, us, ms or s", required);
  }

  std::optional<double> bytes(std::string_view column) const {
    return scaled(column, nsys_byte_unit_to_bytes, "byte", "B, KB, MB, GB, KiB, MiB or GiB", false);
  }

  std::optional<int64_t> integer(std::string_view column, bool required) const {
    const auto index = header_.find(column);
    if (!index) return std::nullopt;
    const std::optional<double> value = number(*index, required);
    if (!value) return std::nullopt;
    if (*value < 0 || std::floor(*value) != *value) fail(*index, "expected a whole number ≥ 0");
    return static_cast<int64_t>(*value);
  }

  [[noreturn]] void fail(size_t index, const std::string& problem) const {
    throw InputError(file_, record_.line, column_label(index), problem + ", got \"" + record_.fields[index] + "\"");
  }

  int line() const { return record_.line; }

 private:
  // A column's value in base units: its header unit through `to_base`, which must know it.
  std::optional<double> scaled(std::string_view column, std::optional<double> (*to_base)(std::string_view),
                               const char* kind, const char* expected, bool required) const {
    const auto index = header_.find(column);
    if (!index) return std::nullopt;
    const std::optional<double> scale = to_base(header_.columns[*index].unit);
    if (!scale) {
      throw InputError(file_, header_.line, column_label(*index),
                       std::string("unknown ") + kind + " unit \"" + header_.columns[*index].unit + "\" (expected " +
                           expected + ")");
    }
    const std::optional<double> value = number(*index, required);
    return value ? std::optional<double>(*value * *scale) : std::nullopt;
  }

  std::string column_label(size_t index) const {
    std::string header;
    if (index < header_.columns.size()) {
      header = header_.columns[index].name;
      if (!header_.columns[index].unit.empty()) header += " (" + header_.columns[index].unit + ")";
    }
    return csv_column_label(index, header);
  }

  std::optional<double> number(size_t index, bool required) const {
    const ParsedNumber parsed = parse_export_number(record_.fields[index]);
    if (parsed.status == NumberStatus::Malformed) fail(index, "expected a number");
    if (parsed.status == NumberStatus::Missing) {
      if (required) fail(index, "expected a number");
      return std::nullopt;
    }
    return parsed.value;
  }

  const std::string& file_;
  const Header& header_;
  const CsvRecord& record_;
};

void read_row(const RowReader& row, const Header& header, NsysTables& tables) {
  switch (header.report) {
    case NsysReport::GpuTrace: {
      NsysGpuOp op;
      op.start_ns = *row.time_ns("Start", true);
      op.duration_ns = *row.time_ns("Duration", true);
      if (op.duration_ns < 0) row.fail(*header.find("Duration"), "expected a duration ≥ 0");
      op.correlation = row.integer("CorrId", false);
      op.name = tables.intern(row.text("Name"));
      op.device = tables.intern(row.text("Device"));
      op.stream = tables.intern(row.text("Strm"));
      op.bytes = row.bytes("Bytes");
      op.source_kind = tables.intern(row.text("SrcMemKd"));
      op.destination_kind = tables.intern(row.text("DstMemKd"));
      op.line = row.line();
      tables.gpu_ops.push_back(std::move(op));
      break;
    }
    case NsysReport::ApiTrace: {
      NsysApiCall call;
      call.start_ns = *row.time_ns("Start", true);
      call.duration_ns = *row.time_ns("Duration", true);
      if (call.duration_ns < 0) row.fail(*header.find("Duration"), "expected a duration ≥ 0");
      call.name = tables.intern(row.text("Name"));
      call.correlation = row.integer("CorrId", false);
      call.thread = tables.intern(row.text("TID"));
      call.line = row.line();
      tables.api_calls.push_back(std::move(call));
      break;
    }
    case NsysReport::NvtxTrace: {
      NsysRange range;
      range.start_ns = *row.time_ns("Start", true);
      range.end_ns = *row.time_ns("End", true);
      if (range.end_ns < range.start_ns) row.fail(*header.find("End"), "expected an end at or after the start");
      range.name = row.text("Name");
      range.line = row.line();
      tables.ranges.push_back(std::move(range));
      break;
    }
    case NsysReport::KernelSummary:
    case NsysReport::ApiSummary: {
      NsysSummaryRow summary;
      summary.name = row.text("Name");
      summary.total_ns = *row.time_ns("Total Time", true);
      summary.count = *row.integer(header.report == NsysReport::KernelSummary ? "Instances" : "Num Calls", true);
      if (header.has("Med")) summary.median_ns = row.time_ns("Med", false);
      summary.line = row.line();
      (header.report == NsysReport::KernelSummary ? tables.kernel_summary : tables.api_summary).push_back(std::move(summary));
      break;
    }
  }
}

}  // namespace

void parse_nsys_csv(std::string_view text, const std::string& file_name, NsysTables& tables) {
  std::optional<Header> table;
  std::string skipped;  // the tool's reason when a report had nothing to show
  size_t tables_found = 0;
  for_each_csv_record(text, file_name, {}, [&](const CsvRecord& record) {
    if (record.blank() || is_tool_message(record.fields)) {
      table.reset();
      if (skipped.empty() && !record.fields.empty() && record.fields[0].find("SKIPPED") != std::string::npos) {
        skipped = record.fields[0];
      }
      return;
    }
    if (std::optional<Header> header = recognise(record)) {
      table = std::move(header);
      tables.reports.push_back(table->report);
      tables.sources.push_back(file_name + ": " + nsys_report_name(table->report));
      ++tables_found;
      return;
    }
    if (table) read_row(RowReader(file_name, *table, record), *table, tables);  // else: outside any known table
  });
  if (tables_found == 0) {
    std::string problem =
        "no nsys stats table found: expected the CSV of cuda_gpu_trace, cuda_api_trace, nvtx_pushpop_trace, "
        "cuda_gpu_kern_sum or cuda_api_sum (`nsys stats --format csv --report ...`)";
    if (!skipped.empty()) problem += "; the tool said: " + skipped;
    throw InputError(file_name, 0, "", problem);
  }
}

void read_nsys_csv(const std::filesystem::path& file, NsysTables& tables) {
  parse_nsys_csv(read_text_file(file), file.string(), tables);
}

}  // namespace decodelab
