// The subcommands of `decodelab` as CLI11 sees them (lab/cli/cli_commands.cpp): each adds itself,
// its options and its callback to the app; lab/cli/cli.cpp calls them in --help order.
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace decodelab {

void add_run_command(CLI::App& app);
void add_list_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_lab_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_collect_command(CLI::App& app);
void add_run_point_command(CLI::App& app);  // hidden: what each Slurm array task runs
void add_roofline_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_diagnose_command(CLI::App& app);
void add_ncu_command(CLI::App& app);
void add_nsys_command(CLI::App& app);
void add_predict_command(CLI::App& app);
void add_diff_logits_command(CLI::App& app);

}  // namespace decodelab
