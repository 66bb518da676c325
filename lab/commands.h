// The subcommands of `decodelab`, one file each (lab/command_<name>.cpp). Each adds itself
// to the app and does its work in the subcommand's callback, which runs after parsing;
// errors are thrown (InputError / ResourceError -> exit 2, anything else -> exit 1) and
// turned into one line on stderr by run_cli(). To add a command, write
// lab/command_<name>.cpp with add_<name>_command() and call it from lab/cli.cpp.
#pragma once

#include <CLI/CLI.hpp>

namespace decodelab {

void add_run_command(CLI::App& app);
void add_list_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_lab_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_collect_command(CLI::App& app);
void add_run_point_command(CLI::App& app);  // hidden: what each Slurm array task runs
void add_roofline_command(CLI::App& app);
void add_diagnose_command(CLI::App& app);
void add_ncu_command(CLI::App& app);
void add_nsys_command(CLI::App& app);
void add_diff_logits_command(CLI::App& app);

}  // namespace decodelab
