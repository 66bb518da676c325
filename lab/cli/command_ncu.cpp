// `decodelab ncu FILE.csv [--device NAME] [--json F]`: an Nsight Compute CSV export (wide
// `--page raw` or long details form) read with the seed's discipline, per profiled launch.
// The device's peaks come from --device, else from the GPU the export identifies (its
// display name, or its compute capability with its DRAM peak); a GPU still unknown is
// said to be, and no share of a roof is printed for it.
#include <cstdio>
#include <string>

#include "lab/cli/commands.h"
#include "lab/output_files.h"
#include "lab/predict/row_prediction.h"
#include "profiling/atomic_file.h"
#include "profiling/device_spec.h"
#include "profiling/trace/ncu_reader.h"
#include "profiling/nsight/ncu_reading.h"

namespace decodelab {

void execute_ncu(const NcuArguments& arguments) {
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");
  NcuReadingOptions options;
  if (!arguments.device.empty()) options.device = named_device(arguments.device, "--device");
  const NcuReport report = read_ncu_report(read_ncu_csv(arguments.file), options);
  if (!arguments.json_file.empty()) save_file_atomically(arguments.json_file, to_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  std::fputs(format_ncu_report(report).c_str(), stdout);
}

}  // namespace decodelab
