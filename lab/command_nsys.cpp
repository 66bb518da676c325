// `decodelab nsys FILE.csv... [--nvtx REGEX] [--top N] [--json F]`: `nsys stats` CSV
// reports (cuda_gpu_trace, cuda_api_trace, nvtx_pushpop_trace, or the cuda_gpu_kern_sum /
// cuda_api_sum totals) read as one timeline: device busy %, gaps, host syncs, launches, top
// kernels. --nvtx keeps only the work launched inside NVTX ranges whose whole name matches
// (decodelab's decode steps: --nvtx 'step [0-9]+').
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "lab/cli_options.h"
#include "lab/commands.h"
#include "lab/output_files.h"
#include "profiling/atomic_file.h"
#include "profiling/nsys_reader.h"
#include "profiling/nsys_timeline.h"

namespace decodelab {

namespace {

struct NsysArguments {
  std::vector<std::string> files;
  std::string nvtx;
  size_t top = 10;
  std::string json_file;
};

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

}  // namespace

void add_nsys_command(CLI::App& app) {
  auto arguments = std::make_shared<NsysArguments>();
  CLI::App* command = app.add_subcommand(
      "nsys", "Read nsys stats CSV reports (cuda_gpu_trace, cuda_api_trace, ...) as a timeline: busy %, gaps, syncs, top kernels");
  command->add_option("files", arguments->files, "the CSV reports (nsys stats --format csv)")->required();
  command->add_option("--nvtx", arguments->nvtx,
                      "only work launched inside NVTX ranges whose whole name matches this regex (needs "
                      "nvtx_pushpop_trace and cuda_api_trace), e.g. 'step [0-9]+'");
  command->add_option("--top", arguments->top, "kernels to list")->check(integer_at_least(1));
  command->add_option("--json", arguments->json_file, "write the analysis as JSON");
  command->callback([arguments] { execute_nsys(*arguments); });
}

}  // namespace decodelab
