// Reads `nsys stats --format csv` reports into rows: cuda_gpu_trace (kernels, copies and
// memsets on the device), cuda_api_trace (host API calls), nvtx_pushpop_trace (NVTX
// ranges), cuda_gpu_kern_sum and cuda_api_sum (totals per name). A file may hold one
// report (`--output BASE` writes BASE_<report>.csv) or several with the tool's chatter
// between them (`--output -`); each table is recognised by its header, columns are found
// by name, and the unit in a header ("Duration (us)", "Bytes (MB)") is honoured.
// Non-obvious choice: the names of device ops and API calls are views into one pool of
// distinct strings the tables own (a trace repeats a few hundred kernel names over
// millions of rows), so NsysTables can be moved but not copied.
// Inside a table every row must be whole — a row with a cell missing
// or a bad number is an InputError naming the file, row and column — while lines outside
// any recognised table (notices, "Processing [...]", other reports) are skipped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace decodelab {

enum class NsysReport : uint8_t { GpuTrace, ApiTrace, NvtxTrace, KernelSummary, ApiSummary };
const char* nsys_report_name(NsysReport report);  // "cuda_gpu_trace", ...

// A kernel, copy or memset on the device (cuda_gpu_trace).
struct NsysGpuOp {
  double start_ns = 0;
  double duration_ns = 0;
  std::optional<int64_t> correlation;  // CorrId: the API call that launched it
  std::string_view name;               // kernel name, "[CUDA memcpy Device-to-Host]", "[CUDA memset]"
  std::string_view device;
  std::string_view stream;
  std::optional<double> bytes;         // copies and memsets
  std::string_view source_kind;        // SrcMemKd: "Device", "Pageable", "Pinned" (newer nsys)
  std::string_view destination_kind;   // DstMemKd
  int line = 0;

  double end_ns() const { return start_ns + duration_ns; }
};

// A host API call (cuda_api_trace).
struct NsysApiCall {
  double start_ns = 0;
  double duration_ns = 0;
  std::string_view name;
  std::optional<int64_t> correlation;
  std::string_view thread;
  int line = 0;

  double end_ns() const { return start_ns + duration_ns; }
};

// An NVTX push/pop range (nvtx_pushpop_trace).
struct NsysRange {
  double start_ns = 0;
  double end_ns = 0;
  std::string name;
  int line = 0;
};

// A row of cuda_gpu_kern_sum (kernels) or cuda_api_sum (API calls).
struct NsysSummaryRow {
  std::string name;
  double total_ns = 0;
  int64_t count = 0;
  std::optional<double> median_ns;  // "Med": a typical call, where one slow first call drags the mean
  int line = 0;
};

struct NsysTables {
  NsysTables() = default;
  NsysTables(NsysTables&&) = default;
  NsysTables& operator=(NsysTables&&) = default;
  NsysTables(const NsysTables&) = delete;  // the ops' names point into `strings`
  NsysTables& operator=(const NsysTables&) = delete;

  std::vector<NsysGpuOp> gpu_ops;
  std::vector<NsysApiCall> api_calls;
  std::vector<NsysRange> ranges;
  std::vector<NsysSummaryRow> kernel_summary;
  std::vector<NsysSummaryRow> api_summary;
  std::vector<NsysReport> reports;   // which reports were read (may repeat)
  std::vector<std::string> sources;  // "file: report" per table

  // Every distinct name once; the ops and calls hold views into it (nodes never move).
  std::unordered_set<std::string> strings;
  std::string_view intern(std::string text) { return *strings.insert(std::move(text)).first; }

  bool has(NsysReport report) const;
};

// Appends every table the file holds; InputError when it holds none or a row is broken.
void read_nsys_csv(const std::filesystem::path& file, NsysTables& tables);
void parse_nsys_csv(std::string_view text, const std::string& file_name, NsysTables& tables);

}  // namespace decodelab
