// `decodelab ncu FILE.csv [--device NAME] [--json F]`: an Nsight Compute CSV export (wide
// `--page raw` or long details form) read with the seed's discipline, per profiled launch.
// The device's peaks come from --device, else from the device name in the export when a
// configs/devices spec matches it, else h100-sxm (said in the output).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "lab/commands.h"
#include "lab/output_files.h"
#include "profiling/atomic_file.h"
#include "profiling/device_spec.h"
#include "profiling/ncu_reader.h"
#include "profiling/ncu_reading.h"

namespace decodelab {

namespace {

struct NcuArguments {
  std::string file;
  std::string device;
  std::string json_file;
};

void execute_ncu(const NcuArguments& arguments) {
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");
  NcuReadingOptions options;
  if (!arguments.device.empty()) options.device = find_device_spec(arguments.device);
  const NcuReport report = read_ncu_report(read_ncu_csv(arguments.file), options);
  if (!arguments.json_file.empty()) save_file_atomically(arguments.json_file, to_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  std::fputs(format_ncu_report(report).c_str(), stdout);
}

}  // namespace

void add_ncu_command(CLI::App& app) {
  auto arguments = std::make_shared<NcuArguments>();
  CLI::App* command = app.add_subcommand(
      "ncu", "Read an Nsight Compute CSV export (ncu --csv [--page raw]) and name each kernel's limiter");
  command->add_option("file", arguments->file, "the CSV export")->required();
  command->add_option("--device", arguments->device,
                      "device peaks: a name under configs/devices or a YAML file (default: the export's device, else h100-sxm)");
  command->add_option("--json", arguments->json_file, "write the readings as JSON");
  command->callback([arguments] { execute_ncu(*arguments); });
}

}  // namespace decodelab
