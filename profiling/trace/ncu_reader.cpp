// Nsight Compute CSV -> launches. The header decides the form: a "Metric Name" column
// means the long (details) form, otherwise every column that names a known metric is one.
#include "profiling/trace/ncu_reader.h"

#include <algorithm>
#include <array>

#include "engine/base/errors.h"
#include "profiling/trace/csv_table.h"

namespace decodelab {

namespace ncu_metric {

std::string sass_counter(char precision_prefix, std::string_view op) {
  return std::string("sm__sass_thread_inst_executed_op_") + precision_prefix + std::string(op) + "_pred_on.sum";
}

const std::vector<std::string>& all() {
  static const std::vector<std::string> metrics = [] {
    std::vector<std::string> list = {kDuration, kDramRead, kDramWrite, kSmThroughput, kMemoryThroughput, kOccupancy,
                                     kLoadSectors, kLoadRequests};
    for (char prefix : {'f', 'h', 'd'}) {
      for (const char* op : {"add", "mul", "fma"}) list.push_back(sass_counter(prefix, op));
    }
    for (const char* tensor : {kTensorFp16, kTensorBf16, kTensorTf32, kTensorFp64}) list.emplace_back(tensor);
    list.emplace_back(kDeviceName);
    return list;
  }();
  return metrics;
}

std::optional<Quantity> quantity_of(std::string_view metric) {
  static const std::map<std::string, Quantity, std::less<>> quantities = [] {
    std::map<std::string, Quantity, std::less<>> map = {
        {kDuration, Quantity::Time},           {kDramRead, Quantity::Bytes},
        {kDramWrite, Quantity::Bytes},         {kDramTotal, Quantity::Bytes},
        {kDramOpRead, Quantity::Bytes},        {kDramOpWrite, Quantity::Bytes},
        {kDramRate, Quantity::ByteRate},       {kSmThroughput, Quantity::Percent},
        {kMemoryThroughput, Quantity::Percent}, {kOccupancy, Quantity::Percent},
        {kDramThroughput, Quantity::Percent},  {kGpuDramThroughput, Quantity::Percent},
        {kSmCycles, Quantity::Count},          {kSmCycleRate, Quantity::Frequency},
        {kLoadSectors, Quantity::Count},       {kLoadRequests, Quantity::Count},
        {kTensorInstructions, Quantity::Count}, {kTensorFp16, Quantity::Count},
        {kTensorFp16ToFp16, Quantity::Count},  {kTensorFp16ToFp32, Quantity::Count},
        {kTensorBf16, Quantity::Count},        {kTensorTf32, Quantity::Count},
        {kTensorFp64, Quantity::Count},        {kTensorFp8, Quantity::Count}};
    for (char prefix : {'f', 'h', 'd'}) {
      for (const char* op : {"add", "mul", "fma"}) map.emplace(sass_counter(prefix, op), Quantity::Count);
    }
    return map;
  }();
  auto found = quantities.find(metric);
  if (found == quantities.end()) return std::nullopt;
  return found->second;
}

}  // namespace ncu_metric

const NcuValue* NcuLaunch::find(std::string_view metric) const {
  auto found = metrics.find(std::string(metric));
  return found == metrics.end() ? nullptr : &found->second;
}

std::optional<double> NcuLaunch::value(std::string_view metric) const {
  const NcuValue* found = find(metric);
  return found ? found->value : std::nullopt;
}

const char* ncu_form_name(NcuForm form) {
  return form == NcuForm::Wide ? "wide (--page raw)" : "long (details page)";
}

namespace {

// The details page's labels (without --print-metric-name name), told apart by their unit.
struct LabelAlias {
  const char* label;
  Quantity quantity;
  const char* metric;
};
constexpr std::array<LabelAlias, 6> kLabelAliases = {{
    {"Duration", Quantity::Time, ncu_metric::kDuration},
    {"Compute (SM) Throughput", Quantity::Percent, ncu_metric::kSmThroughput},
    {"Memory Throughput", Quantity::Percent, ncu_metric::kMemoryThroughput},  // GPU Speed Of Light section
    {"Memory Throughput", Quantity::ByteRate, ncu_metric::kDramRate},         // Memory Workload Analysis section
    {"DRAM Throughput", Quantity::Percent, ncu_metric::kGpuDramThroughput},
    {"Achieved Occupancy", Quantity::Percent, ncu_metric::kOccupancy},
}};

std::string canonical_metric(std::string_view name) {
  constexpr std::string_view per_smsp = "smsp__sass_thread_inst_executed_op_";
  if (name.substr(0, per_smsp.size()) == per_smsp) return "sm__" + std::string(name.substr(6));
  return std::string(name);
}

bool is_tool_chatter(std::string_view line) {
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  return line.substr(0, 2) == "==";
}

bool numeric(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool ncu_starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

constexpr std::string_view kAttributePrefix = "device__attribute_";

// Column positions by header name.
class Columns {
 public:
  explicit Columns(const std::vector<std::string>& header) : header_(header) {}
  std::optional<size_t> find(std::string_view name) const {
    for (size_t i = 0; i < header_.size(); ++i) {
      if (header_[i] == name) return i;
    }
    return std::nullopt;
  }
  const std::string& name(size_t index) const { return header_[index]; }
  size_t size() const { return header_.size(); }

 private:
  const std::vector<std::string>& header_;
};

// A row must reach `required` cells (the whole header in the wide form; up to "Metric
// Value" in the long form, whose rule cells ncu leaves off metric rows) and never exceed it.
void check_width(const CsvRecord& record, const Columns& columns, size_t required, const std::string& file) {
  if (record.fields.size() < required) {
    const size_t missing = record.fields.size();
    throw InputError(file, record.line, csv_column_label(missing, columns.name(missing)),
                     "the row ends after " + std::to_string(record.fields.size()) + " of " +
                         std::to_string(columns.size()) + " columns: the export is truncated or malformed");
  }
  if (record.fields.size() > columns.size()) {
    throw InputError(file, record.line, csv_column_label(columns.size(), ""),
                     "the row has " + std::to_string(record.fields.size()) + " cells but the header " +
                         std::to_string(columns.size()) + ": the export is malformed");
  }
}

bool has_cell(const std::vector<std::string>& row, std::string_view prefix) {
  return std::any_of(row.begin(), row.end(), [&](const std::string& cell) { return ncu_starts_with(cell, prefix); });
}

// What a file that holds no ncu table is instead, when it is something often handed over
// by mistake; "" when it is nothing recognised.
std::string other_export(const std::vector<std::string>& row) {
  if (has_cell(row, "Invocations") || has_cell(row, "Time(%)") || has_cell(row, "Correlation_ID") ||
      (has_cell(row, "Grid X") && has_cell(row, "Duration"))) {
    return "an nvprof CSV (nvprof --csv), not an Nsight Compute export: profile again with `ncu --csv` "
           "(nvprof does not support GPUs from Volta's successors on)";
  }
  if (has_cell(row, "Time (%)") || has_cell(row, "Total Time (") || has_cell(row, "Start (") ||
      has_cell(row, "CorrId") || has_cell(row, "Med (")) {
    return "an Nsight Systems report (nsys stats --format csv), not an Nsight Compute export: read it with "
           "`decodelab nsys FILE`";
  }
  return "";
}

// The export, launch by launch, from records handed over one at a time.
class NcuTableReader {
 public:
  explicit NcuTableReader(std::string file) : file_(std::move(file)) {}

  void visit(const CsvRecord& record) {
    if (record.blank()) return;
    if (!header_) {
      if (first_row_line_ == 0) first_row_line_ = record.line;
      if (std::find(record.fields.begin(), record.fields.end(), "ID") == record.fields.end() ||
          std::find(record.fields.begin(), record.fields.end(), "Kernel Name") == record.fields.end()) {
        // The profiled program's own output, printed to the same stream; or another tool's table.
        if (other_.empty() && rows_before_header_++ < kRowsToRecognise) {
          other_ = other_export(record.fields);
          if (!other_.empty()) other_line_ = record.line;
        }
        return;
      }
      start_table(record);
      return;
    }
    if (record.fields == header_->fields) {  // a second process's table, concatenated
      units_.reset();
      return;
    }
    if (form_ == NcuForm::Long) {
      long_row(record);
    } else {
      wide_row(record);
    }
  }

  bool has_table() const { return header_.has_value(); }
  int first_row_line() const { return first_row_line_; }
  // What the file is instead (see other_export) and the line that says so; "" if unknown.
  const std::string& other() const { return other_; }
  int other_line() const { return other_line_; }

  NcuExport finish() {
    if (launches_.empty()) {
      throw InputError(file_, 0, "", "the export holds no kernel launch (nothing was profiled?)");
    }
    NcuExport result;
    result.file = file_;
    result.form = form_;
    result.launches = std::move(launches_);
    return result;
  }

 private:
  void start_table(const CsvRecord& record) {
    header_ = record;
    const Columns columns(header_->fields);
    id_column_ = *columns.find("ID");
    kernel_column_ = *columns.find("Kernel Name");
    device_column_ = columns.find("Device");
    cc_column_ = columns.find("CC");
    required_ = header_->fields.size();
    if (const auto name_column = columns.find("Metric Name")) {
      form_ = NcuForm::Long;
      name_column_ = *name_column;
      unit_column_ = columns.find("Metric Unit");
      value_column_ = columns.find("Metric Value");
      if (!value_column_) {
        throw InputError(file_, record.line, "header", "a \"Metric Name\" column without \"Metric Value\"");
      }
      size_t last = std::max({id_column_, kernel_column_, name_column_, *value_column_});
      for (const auto& column : {device_column_, cc_column_, unit_column_}) {
        if (column) last = std::max(last, *column);
      }
      required_ = last + 1;
      return;
    }
    form_ = NcuForm::Wide;
    const std::vector<std::string>& header = header_->fields;
    for (size_t i = 0; i < header.size(); ++i) {
      const std::string metric = canonical_metric(header[i]);
      if (const auto quantity = ncu_metric::quantity_of(metric)) {
        metric_columns_.push_back({i, metric, *quantity});
      } else if (metric == ncu_metric::kDeviceName) {
        device_name_column_ = i;
      } else if (ncu_starts_with(metric, kAttributePrefix)) {
        attribute_columns_.push_back(i);
      }
    }
  }

  NcuLaunch& launch(const CsvRecord& record) {
    const std::string& id = record.fields[id_column_];
    if (id.empty()) {
      throw InputError(file_, record.line, csv_column_label(id_column_, header_->fields[id_column_]), "empty launch ID");
    }
    auto [found, inserted] = index_.emplace(id, launches_.size());
    if (inserted) {
      launches_.emplace_back();
      NcuLaunch& added = launches_.back();
      added.id = id;
      added.line = record.line;
      added.kernel = record.fields[kernel_column_];
      if (device_column_) {
        const std::string& device = record.fields[*device_column_];
        if (numeric(device)) {
          added.device_ordinal = device;
        } else {
          added.device_name = device;  // a name, not an ordinal
        }
      }
      if (cc_column_) added.compute_capability = record.fields[*cc_column_];
    }
    return launches_[found->second];
  }

  // Parses one value of a known metric; `unit_line` is where its unit was read.
  void add(NcuLaunch& launch, const std::string& metric, Quantity quantity, const std::string& text,
           const std::string& unit, int line, int unit_line, const std::string& column) {
    if (launch.metrics.count(metric)) return;  // a metric shown in two sections: the first wins
    NcuValue value;
    value.line = line;
    const ParsedNumber number = parse_export_number(text);
    if (number.status == NumberStatus::Malformed) {
      std::string problem = "expected a number for " + metric + ", got \"" + text + "\"";
      if (text.find(',') != std::string::npos) problem += " (commas are read as thousands separators only)";
      throw InputError(file_, line, column, problem);
    }
    if (number.status == NumberStatus::Value) value.value = number.value * scale(metric, quantity, unit, unit_line, column);
    launch.metrics.emplace(metric, value);
  }

  // device__attribute_* values: the display name as text, the rest as numbers when they are.
  static void add_attribute(NcuLaunch& launch, const std::string& name, const std::string& text) {
    if (name == ncu_metric::kDeviceName) {
      if (!text.empty()) launch.device_name = text;
      return;
    }
    const ParsedNumber number = parse_export_number(text);
    if (number.status == NumberStatus::Value) launch.attributes.emplace(name, number.value);
  }

  double scale(const std::string& metric, Quantity quantity, const std::string& unit, int unit_line,
               const std::string& column) const {
    if (unit.empty()) {
      // No unit printed: ncu's base units (nanoseconds for times).
      return quantity == Quantity::Time ? 1e-9 : 1.0;
    }
    const std::optional<UnitScale> parsed = ncu_unit(unit);
    if (!parsed || parsed->quantity != quantity) {
      throw InputError(file_, unit_line, column, "unit \"" + unit + "\" for " + metric + ": expected " + quantity_name(quantity));
    }
    return parsed->to_base;
  }

  void wide_row(const CsvRecord& record) {
    const Columns columns(header_->fields);
    check_width(record, columns, required_, file_);
    if (!units_ && record.fields[id_column_].empty()) {  // the units row under the header
      units_ = record;
      return;
    }
    NcuLaunch& launch = this->launch(record);
    if (device_name_column_) add_attribute(launch, ncu_metric::kDeviceName, record.fields[*device_name_column_]);
    for (size_t column : attribute_columns_) add_attribute(launch, header_->fields[column], record.fields[column]);
    for (const MetricColumn& column : metric_columns_) {
      add(launch, column.metric, column.quantity, record.fields[column.index],
          units_ ? units_->fields[column.index] : std::string(), record.line, units_ ? units_->line : record.line,
          csv_column_label(column.index, header_->fields[column.index]));
    }
  }

  void long_row(const CsvRecord& record) {
    const Columns columns(header_->fields);
    check_width(record, columns, required_, file_);
    NcuLaunch& launch = this->launch(record);
    const std::string& name = record.fields[name_column_];
    if (name.empty()) return;  // a rule's row: no metric
    const std::string& text = record.fields[*value_column_];
    const std::string unit = unit_column_ ? record.fields[*unit_column_] : std::string();
    if (ncu_starts_with(name, kAttributePrefix)) {
      add_attribute(launch, name, text);
      return;
    }
    const std::string column = csv_column_label(*value_column_, header_->fields[*value_column_]);
    const std::string metric = canonical_metric(name);
    if (const auto quantity = ncu_metric::quantity_of(metric)) {
      add(launch, metric, *quantity, text, unit, record.line, record.line, column);
      return;
    }
    const std::optional<UnitScale> unit_scale = ncu_unit(unit);
    for (const LabelAlias& alias : kLabelAliases) {
      if (name == alias.label && unit_scale && unit_scale->quantity == alias.quantity) {
        add(launch, alias.metric, alias.quantity, text, unit, record.line, record.line, column);
        break;
      }
    }
  }

  struct MetricColumn {
    size_t index;
    std::string metric;
    Quantity quantity;
  };

  // Another tool's header, if any, shows within the first rows (after its own chatter).
  static constexpr int kRowsToRecognise = 64;

  std::string file_;
  int first_row_line_ = 0;
  int rows_before_header_ = 0;
  std::string other_;
  int other_line_ = 0;
  std::optional<CsvRecord> header_;
  NcuForm form_ = NcuForm::Wide;
  size_t required_ = 0;
  size_t id_column_ = 0, kernel_column_ = 0, name_column_ = 0;
  std::optional<size_t> device_column_, cc_column_, unit_column_, value_column_, device_name_column_;
  std::vector<MetricColumn> metric_columns_;
  std::vector<size_t> attribute_columns_;
  std::optional<CsvRecord> units_;
  std::vector<NcuLaunch> launches_;
  std::map<std::string, size_t> index_;
};

}  // namespace

NcuExport parse_ncu_csv(std::string_view text, const std::string& file_name) {
  std::string_view start = text;
  if (ncu_starts_with(start, "\xEF\xBB\xBF")) start.remove_prefix(3);
  if (ncu_starts_with(start, "version https://git-lfs.github.com/spec/")) {
    throw InputError(file_name, 1, "",
                     "a git-LFS pointer, not the export itself: fetch the file (git lfs pull) and read it again");
  }
  std::vector<std::string> tool_messages;
  NcuTableReader reader(file_name);
  for_each_csv_record(
      text, file_name,
      [&](std::string_view line) {
        if (!is_tool_chatter(line)) return false;
        if (line.find("==WARNING==") != std::string_view::npos || line.find("==ERROR==") != std::string_view::npos) {
          tool_messages.emplace_back(line);
        }
        return true;
      },
      [&](const CsvRecord& record) { reader.visit(record); });
  if (reader.has_table()) return reader.finish();

  const std::string expected = "(expected the output of `ncu --csv --page raw` or `ncu --csv`)";
  if (reader.first_row_line() > 0) {
    if (!reader.other().empty()) throw InputError(file_name, reader.other_line(), "header", reader.other());
    throw InputError(file_name, reader.first_row_line(), "header",
                     "not an Nsight Compute CSV export: no row has \"ID\" and \"Kernel Name\" columns " + expected);
  }
  std::string problem = "no Nsight Compute table in the file " + expected;
  if (!tool_messages.empty()) problem += "; the tool said: " + tool_messages.front();
  throw InputError(file_name, 0, "", problem);
}

NcuExport read_ncu_csv(const std::filesystem::path& file) { return parse_ncu_csv(read_text_file(file), file.string()); }

}  // namespace decodelab
