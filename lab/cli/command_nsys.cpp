// `decodelab nsys FILE.csv... [--nvtx REGEX] [--top N] [--json F]`: `nsys stats` CSV
// reports (cuda_gpu_trace, cuda_api_trace, nvtx_pushpop_trace, or the cuda_gpu_kern_sum /
// cuda_api_sum totals) read as one timeline: device busy %, gaps, host syncs, launches, top
// kernels. --nvtx keeps only the work launched inside NVTX ranges whose whole name matches
// (decodelab's decode steps: --nvtx 'step [0-9]+').
#include <cstdio>
#include <string>
#include <vector>

#include "lab/cli/commands.h"
#include "lab/output_files.h"
#include "profiling/atomic_file.h"
#include "profiling/trace/nsys_reader.h"
#include "profiling/nsight/nsys_timeline.h"

namespace decodelab {

void execute_nsys(const NsysArguments& arguments) {
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");
  NsysTables tables;
  for (const std::string& file : arguments.files) read_nsys_csv(file, tables);
  NsysOptions options;
  options.nvtx_pattern = arguments.nvtx;
  options.top_kernels = arguments.top;
  const NsysAnalysis analysis = analyze_nsys(tables, options);
  if (!arguments.json_file.empty()) save_file_atomically(arguments.json_file, to_json(analysis).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  std::fputs(format_nsys_analysis(analysis).c_str(), stdout);
}

}  // namespace decodelab
