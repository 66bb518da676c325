// Handing a sweep or the lab to Slurm: `--slurm` writes a run folder (lab/cluster/run_folder.h)
// and submits one `sbatch --array` job per row set (partition), in which task K runs point
// K on its node (`decodelab run-point`). Nothing is queued unless every set's job would be
// accepted: each is first checked with `sbatch --test-only`, so a partition that does not
// exist, a bad --gres or --time is refused with Slurm's own message, exit code 2, and no
// run folder is left behind.
#pragma once

#include <string>
#include <vector>

#include "lab/cluster/run_folder.h"
#include "lab/cluster/run_plan.h"

namespace decodelab {

// The options `sweep` and `lab` take for Slurm (declared to CLI11 by lab/cli/cli_options.h's
// add_slurm_options).
struct SlurmRequest {
  bool enabled = false;                     // --slurm
  std::vector<std::string> partitions;      // --partition a,b: one row set each; none = the default partition
  std::string gres;                         // --gres gpu:1
  std::string time_limit;                   // --time 30:00
  int throttle = 0;                         // --throttle N: the array's %N
  int cpus_per_task = 0;                    // --cpus-per-task N
  std::vector<std::string> sbatch_options;  // --sbatch-option=--account=x (repeatable)
  std::string run_dir;                      // --run-dir; default ./decodelab-run-<command>-<name>-<time>
  bool dry_run = false;                     // --dry-run: write the folder, print the commands, submit nothing
  bool quiet = false;                       // the command's --quiet: print nothing
};

// Writes the run folder and submits it (or, with --dry-run, prints what would be submitted).
// Prints the job ids, the folder, and the command that collects it.
void submit_run(const RunPlan& plan, const SlurmRequest& request);

// Submits these points of one set again (collect --resubmit): one array job per block of
// Slurm's MaxArraySize indices. Each submission is added to the manifest, which is saved
// after every sbatch so that a job queued is never a job forgotten.
void submit_points(const RunFolder& folder, RunManifest& manifest, const std::string& set,
                   const std::vector<size_t>& points);

// The sbatch command line of one submission (for messages and --dry-run).
std::vector<std::string> sbatch_command(const RunFolder& folder, const RunManifest& manifest, const RunSet& set,
                                        size_t offset, const std::vector<size_t>& tasks);

}  // namespace decodelab
