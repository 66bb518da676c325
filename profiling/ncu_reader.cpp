// Nsight Compute CSV -> launches. The header decides the form: a "Metric Name" column
// means the long (details) form, otherwise every column that names a known metric is one.
#include "profiling/ncu_reader.h"

#include <algorithm>
#include <array>

#include "engine/errors.h"
#include "profiling/csv_table.h"

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
        {kDramRate, Quantity::ByteRate},       {kSmThroughput, Quantity::Percent},
        {kMemoryThroughput, Quantity::Percent}, {kOccupancy, Quantity::Percent},
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
constexpr std::array<LabelAlias, 5> kLabelAliases = {{
    {"Duration", Quantity::Time, ncu_metric::kDuration},
    {"Compute (SM) Throughput", Quantity::Percent, ncu_metric::kSmThroughput},
    {"Memory Throughput", Quantity::Percent, ncu_metric::kMemoryThroughput},  // GPU Speed Of Light section
    {"Memory Throughput", Quantity::ByteRate, ncu_metric::kDramRate},         // Memory Workload Analysis section
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

class ExportBuilder {
 public:
  ExportBuilder(std::string file, NcuForm form) { export_.file = std::move(file); export_.form = form; }

  NcuLaunch& launch(const std::string& id, int line) {
    auto [found, inserted] = index_.emplace(id, export_.launches.size());
    if (inserted) {
      export_.launches.emplace_back();
      export_.launches.back().id = id;
      export_.launches.back().line = line;
    }
    return export_.launches[found->second];
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
      throw InputError(export_.file, line, column, problem);
    }
    if (number.status == NumberStatus::Value) value.value = number.value * scale(metric, quantity, unit, unit_line, column);
    launch.metrics.emplace(metric, value);
  }

  NcuExport finish() {
    if (export_.launches.empty()) {
      throw InputError(export_.file, 0, "", "the export holds no kernel launch (nothing was profiled?)");
    }
    return std::move(export_);
  }

 private:
  double scale(const std::string& metric, Quantity quantity, const std::string& unit, int unit_line,
               const std::string& column) const {
    if (unit.empty()) {
      // No unit printed: ncu's base units (nanoseconds for times).
      return quantity == Quantity::Time ? 1e-9 : 1.0;
    }
    const std::optional<UnitScale> parsed = ncu_unit(unit);
    if (!parsed || parsed->quantity != quantity) {
      throw InputError(export_.file, unit_line, column,
                       "unit \"" + unit + "\" for " + metric + ": expected " + quantity_name(quantity));
    }
    return parsed->to_base;
  }

  NcuExport export_;
  std::map<std::string, size_t> index_;
};

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

void check_width(const CsvRecord& record, const Columns& columns, const std::string& file) {
  if (record.fields.size() < columns.size()) {
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

std::string require_id(const CsvRecord& record, size_t id_column, const Columns& columns, const std::string& file) {
  const std::string& id = record.fields[id_column];
  if (id.empty()) throw InputError(file, record.line, csv_column_label(id_column, columns.name(id_column)), "empty launch ID");
  return id;
}

void set_device_from_column(NcuLaunch& launch, const CsvRecord& record, std::optional<size_t> device_column) {
  if (!device_column || !launch.device_name.empty()) return;
  const std::string& device = record.fields[*device_column];
  if (!device.empty() && !numeric(device)) launch.device_name = device;  // a name, not an ordinal
}

NcuExport read_wide(const std::vector<CsvRecord>& records, size_t header_index, const std::string& file) {
  const std::vector<std::string>& header = records[header_index].fields;
  const Columns columns(header);
  const size_t id_column = *columns.find("ID");
  const size_t kernel_column = *columns.find("Kernel Name");
  const std::optional<size_t> device_column = columns.find("Device");
  const std::optional<size_t> device_name_column = columns.find(ncu_metric::kDeviceName);
  struct MetricColumn {
    size_t index;
    std::string metric;
    Quantity quantity;
  };
  std::vector<MetricColumn> metric_columns;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string metric = canonical_metric(header[i]);
    if (const auto quantity = ncu_metric::quantity_of(metric)) metric_columns.push_back({i, metric, *quantity});
  }

  ExportBuilder builder(file, NcuForm::Wide);
  const CsvRecord* units = nullptr;
  for (size_t r = header_index + 1; r < records.size(); ++r) {
    const CsvRecord& record = records[r];
    if (record.blank()) continue;
    if (record.fields == header) {  // a second process's table, concatenated
      units = nullptr;
      continue;
    }
    check_width(record, columns, file);
    if (!units && record.fields[id_column].empty()) {  // the units row under the header
      units = &record;
      continue;
    }
    NcuLaunch& launch = builder.launch(require_id(record, id_column, columns, file), record.line);
    launch.kernel = record.fields[kernel_column];
    if (device_name_column) launch.device_name = record.fields[*device_name_column];
    set_device_from_column(launch, record, device_column);
    for (const MetricColumn& column : metric_columns) {
      builder.add(launch, column.metric, column.quantity, record.fields[column.index],
                  units ? units->fields[column.index] : std::string(), record.line, units ? units->line : record.line,
                  csv_column_label(column.index, header[column.index]));
    }
  }
  return builder.finish();
}

NcuExport read_long(const std::vector<CsvRecord>& records, size_t header_index, const std::string& file) {
  const std::vector<std::string>& header = records[header_index].fields;
  const Columns columns(header);
  const size_t id_column = *columns.find("ID");
  const size_t kernel_column = *columns.find("Kernel Name");
  const std::optional<size_t> device_column = columns.find("Device");
  const size_t name_column = *columns.find("Metric Name");
  const std::optional<size_t> unit_column = columns.find("Metric Unit");
  const std::optional<size_t> value_column = columns.find("Metric Value");
  if (!value_column) {
    throw InputError(file, records[header_index].line, "header", "a \"Metric Name\" column without \"Metric Value\"");
  }

  ExportBuilder builder(file, NcuForm::Long);
  for (size_t r = header_index + 1; r < records.size(); ++r) {
    const CsvRecord& record = records[r];
    if (record.blank() || record.fields == header) continue;
    check_width(record, columns, file);
    NcuLaunch& launch = builder.launch(require_id(record, id_column, columns, file), record.line);
    launch.kernel = record.fields[kernel_column];
    set_device_from_column(launch, record, device_column);
    const std::string& name = record.fields[name_column];
    if (name.empty()) continue;  // a rule's row: no metric
    const std::string& text = record.fields[*value_column];
    const std::string unit = unit_column ? record.fields[*unit_column] : std::string();
    const std::string column = csv_column_label(*value_column, header[*value_column]);
    if (name == ncu_metric::kDeviceName) {
      launch.device_name = text;
      continue;
    }
    const std::string metric = canonical_metric(name);
    if (const auto quantity = ncu_metric::quantity_of(metric)) {
      builder.add(launch, metric, *quantity, text, unit, record.line, record.line, column);
      continue;
    }
    const std::optional<UnitScale> unit_scale = ncu_unit(unit);
    for (const LabelAlias& alias : kLabelAliases) {
      if (name == alias.label && unit_scale && unit_scale->quantity == alias.quantity) {
        builder.add(launch, alias.metric, alias.quantity, text, unit, record.line, record.line, column);
        break;
      }
    }
  }
  return builder.finish();
}

}  // namespace

NcuExport parse_ncu_csv(std::string_view text, const std::string& file_name) {
  std::vector<std::string> tool_messages;
  const std::vector<CsvRecord> records = parse_csv(text, file_name, [&](std::string_view line) {
    if (!is_tool_chatter(line)) return false;
    if (line.find("==WARNING==") != std::string_view::npos || line.find("==ERROR==") != std::string_view::npos) {
      tool_messages.emplace_back(line);
    }
    return true;
  });
  // The header is the first row naming "ID" and "Kernel Name"; rows before it are the
  // profiled program's own output when ncu printed to the same stream.
  int first_row_line = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].blank()) continue;
    if (first_row_line == 0) first_row_line = records[i].line;
    const Columns columns(records[i].fields);
    if (!columns.find("ID") || !columns.find("Kernel Name")) continue;
    return columns.find("Metric Name") ? read_long(records, i, file_name) : read_wide(records, i, file_name);
  }
  const std::string expected = "(expected the output of `ncu --csv --page raw` or `ncu --csv`)";
  if (first_row_line > 0) {
    throw InputError(file_name, first_row_line, "header",
                     "not an Nsight Compute CSV export: no row has \"ID\" and \"Kernel Name\" columns " + expected);
  }
  std::string problem = "no Nsight Compute table in the file " + expected;
  if (!tool_messages.empty()) problem += "; the tool said: " + tool_messages.front();
  throw InputError(file_name, 0, "", problem);
}

NcuExport read_ncu_csv(const std::filesystem::path& file) { return parse_ncu_csv(read_text_file(file), file.string()); }

}  // namespace decodelab
