// Reads an Nsight Compute CSV export into kernel launches and the metrics the reading
// discipline needs, converted to base units (seconds, bytes, counts, percent). Both forms:
//   wide  (`ncu --csv --page raw`): one row per launch, one column per metric, then a row
//         of units right under the header;
//   long  (`ncu --csv`, the details page): one row per metric per launch, with "Metric
//         Name", "Metric Unit" and "Metric Value" columns (metric names, or the details
//         page's labels such as "Duration" unless `--print-metric-name name`). The rule
//         columns after "Metric Value" ("Rule Name" ... "Estimated Speedup") are filled on
//         rule rows only: ncu ends a metric row after its value, so those cells may be absent,
//         while a row that ends before "Metric Value" is a cut file.
// Columns are found by name, so versions that add or drop columns read the same. The file is
// read record by record (only the metrics below are kept), so a large export is never held
// as a table of cells.
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

#include "profiling/trace/nsight_units.h"

namespace decodelab {

namespace ncu_metric {
inline constexpr const char* kDuration = "gpu__time_duration.sum";
inline constexpr const char* kDramRead = "dram__bytes_read.sum";
inline constexpr const char* kDramWrite = "dram__bytes_write.sum";
inline constexpr const char* kDramTotal = "dram__bytes.sum";
// The same bytes under the names newer GPUs (GB20x, GH100 in some versions) offer instead.
inline constexpr const char* kDramOpRead = "dram__bytes_op_read.sum";
inline constexpr const char* kDramOpWrite = "dram__bytes_op_write.sum";
// DRAM throughput as a share of its peak (the details page's "DRAM Throughput").
inline constexpr const char* kDramThroughput = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kGpuDramThroughput = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed";
// Elapsed SM cycles and their rate: the duration when gpu__time_duration was not collected.
inline constexpr const char* kSmCycles = "sm__cycles_elapsed.avg";
inline constexpr const char* kSmCycleRate = "sm__cycles_elapsed.avg.per_second";
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

// Device attributes (ncu's "device__attribute_*" metrics) that identify the GPU.
inline constexpr const char* kComputeCapabilityMajor = "device__attribute_compute_capability_major";
inline constexpr const char* kComputeCapabilityMinor = "device__attribute_compute_capability_minor";
inline constexpr const char* kMemoryClock = "device__attribute_max_mem_frequency_khz";
inline constexpr const char* kMemoryBusWidth = "device__attribute_global_memory_bus_width";

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
  std::string device_ordinal;       // a "Device" column holding a number ("0")
  std::string compute_capability;   // the "CC" column ("8.0"), or device__attribute_compute_capability_*
  int line = 0;             // the launch's first row
  std::map<std::string, NcuValue> metrics;  // canonical metric name -> value
  // device__attribute_* values other than the display name, as numbers (unit as printed).
  std::map<std::string, double> attributes;

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

// Throws InputError (file, row, column) for an export it cannot read; a file that is no
// ncu export but something often mistaken for one (a git-LFS pointer, an nvprof CSV, an
// Nsight Systems report) is named as such.
NcuExport read_ncu_csv(const std::filesystem::path& file);
NcuExport parse_ncu_csv(std::string_view text, const std::string& file_name);

}  // namespace decodelab
