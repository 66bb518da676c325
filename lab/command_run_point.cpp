// `decodelab run-point RUN_DIR --set S --point K`: what each Slurm array task runs (the run
// folder's task.sh calls it). Hidden from --help: people submit with `sweep/lab --slurm`
// and gather with `collect`; it can still be run by hand to retry one point on this machine.
#include <memory>
#include <string>

#include "lab/commands.h"
#include "lab/run_point.h"

namespace decodelab {

namespace {

struct RunPointArguments {
  std::string run_dir;
  std::string set;
  size_t point = 0;
};

}  // namespace

void add_run_point_command(CLI::App& app) {
  auto arguments = std::make_shared<RunPointArguments>();
  CLI::App* command = app.add_subcommand("run-point", "Run one point of a run folder and write its row (a Slurm task)");
  command->group("");  // hidden
  command->add_option("run_dir", arguments->run_dir, "The run folder")->required();
  command->add_option("--set", arguments->set, "The row set (partition) the point belongs to")->required();
  command->add_option("--point", arguments->point, "The point's index (from 0)")->required();
  command->callback([arguments] { run_point(arguments->run_dir, arguments->set, arguments->point); });
}

}  // namespace decodelab
