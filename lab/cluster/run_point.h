// What one Slurm array task does: run point K of row set S of a run folder on this node
// and write its row atomically into the folder. The row is built by the same functions a
// local run uses (lab/run/sweep_row.h for a sweep; compare + lab_row for the lab), plus one
// `placement` field saying where it ran; nothing else differs. The task keeps a record
// beside it (running, then done or failed with the error), which `collect` reads when
// Slurm no longer remembers the job.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "lab/cluster/run_folder.h"

namespace decodelab {

// Throws what the run throws (after recording it), so the CLI's exit code and message
// land in the Slurm log as for any decodelab command.
void run_point(const std::filesystem::path& run_dir, const std::string& set, size_t point);

// Where this process runs, for the row: node, set, partition, and when inside a Slurm job
// its job id, array job and task ids, log file, and the GPUs it was given.
nlohmann::json task_placement(const RunFolder& folder, const RunSet& set, int threads);

// Kernel threads for a CPU-backend task: `requested` when set, else the CPUs Slurm gave
// the task (SLURM_CPUS_PER_TASK, else SLURM_CPUS_ON_NODE), else 0 (every core).
int task_threads(int requested);

}  // namespace decodelab
