// Reads an Nsight Compute CSV export into kernel launches and the metrics the reading
// discipline needs, converted to base units (seconds, bytes, counts, percent). Both forms:
//   wide  (`ncu --csv --page raw`): one row per launch, one column per metric, then a row
//         of units right under the header;
//   long  (`ncu --csv`, the details page): one row per metric per launch, with "Metric
//         Name", "Metric Unit" and "Metric Value" columns (metric names, or the details
//         page's labels such as "Duration" unless `--print-metric-name name`).
// Columns are found by name, so versions that add or drop columns read the same.
// Non-obvious choice: only the metrics listed in ncu_metric (and their label aliases) are
// parsed; a malformed value there is an InputError naming the file, row and column, while
// every other column is left alone — an unrelated metric in an odd unit never blocks a read.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profiling/nsight_units.h"

namespace decodelab {

namespace ncu_metric {
inline constexpr const char* kDuration = "gpu__time_duration.sum";
inline constexpr const char* kDramRead = "dram__bytes_read.sum";
inline constexpr const char* kDramWrite = "dram__bytes_write.sum";
inline constexpr const char* kDramTotal = "dram__bytes.sum";
inline constexpr const char* kDramRate = "dram__bytes.sum.per_second";
inline constexpr const char* kSmThroughput = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kMemoryThroughput = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kOccupancy = "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr const char* kLoadSectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
inline constexpr const char* kLoadRequests = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum";
inline constexpr const char* kTensorInstructions = "sm__inst_executed_pipe_tensor.sum";
inline constexpr const char* kDeviceName = "device__attribute_display_name";

// "sm__sass_thread_inst_executed_op_<prefix><op>_pred_on.sum", prefix f (fp32), h (fp16),
// d (fp64), op add, mul or fma. `smsp__` spellings are read as these (the same sums).
std::string sass_counter(char precision_prefix, std::string_view op);

// Tensor-pipe operation counters (FLOPs), one per source precision.
inline constexpr const char* kTensorFp16 = "sm__ops_path_tensor_src_fp16.sum";
inline constexpr const char* kTensorFp16ToFp16 = "sm__ops_path_tensor_src_fp16_dst_fp16.sum";
inline constexpr const char* kTensorFp16ToFp32 = "sm__ops_path_tensor_src_fp16_dst_fp32.sum";
inline constexpr const char* kTensorBf16 = "sm__ops_path_tensor_src_bf16_dst_fp32.sum";
inline constexpr const char* kTensorTf32 = "sm__ops_path_tensor_src_tf32_dst_fp32.sum";
inline constexpr const char* kTensorFp64 = "sm__ops_path_tensor_src_fp64.sum";
inline constexpr const char* kTensorFp8 = "sm__ops_path_tensor_src_fp8.sum";

// Every metric the reader parses, in the order scripts/ncu-profile.sh collects them.
const std::vector<std::string>& all();
// What a metric measures, or nullopt when the reader does not use it.
std::optional<Quantity> quantity_of(std::string_view metric);
}  // namespace ncu_metric

struct NcuValue {
  std::optional<double> value;  // base units; nullopt when the export says "n/a"
  int line = 0;                 // where the value was read
};

struct NcuLaunch {
  std::string id;           // the export's "ID" (one per profiled launch)
  std::string kernel;       // "Kernel Name"
  std::string device_name;  // device__attribute_display_name, or a "Device" column holding a name
  int line = 0;             // the launch's first row
  std::map<std::string, NcuValue> metrics;  // canonical metric name -> value

  const NcuValue* find(std::string_view metric) const;
  // The value when present and not "n/a".
  std::optional<double> value(std::string_view metric) const;
};

enum class NcuForm : uint8_t { Wide, Long };
const char* ncu_form_name(NcuForm form);  // "wide (--page raw)", "long (details page)"

struct NcuExport {
  std::string file;
  NcuForm form = NcuForm::Wide;
  std::vector<NcuLaunch> launches;  // in the export's order
};

// Throws InputError (file, row, column) for an export it cannot read.
NcuExport read_ncu_csv(const std::filesystem::path& file);
NcuExport parse_ncu_csv(std::string_view text, const std::string& file_name);

}  // namespace decodelab
