// Where each point of a run folder stands: done (its row is in), waiting (pending or
// running), or failed (it ended without a row, or never ran), with the reason in Slurm's
// words and the log to read. Slurm is asked before the rows are read, so a task that
// finishes in between is seen with its row, never as "completed without a row"; nothing
// here writes into the run folder, so collecting twice, or while tasks run, is safe.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/cluster/run_folder.h"
#include "lab/cluster/slurm_query.h"

namespace decodelab {

enum class PointState { Done, Waiting, Failed };

struct PointStatus {
  std::string set;
  size_t point = 0;
  PointState state = PointState::Failed;
  std::string reason;         // waiting or failed: "PENDING (Priority)", "CANCELLED, exit 0:15", "never submitted"
  std::string task;           // "1234_5": the latest attempt's array task, "" when never submitted
  std::filesystem::path log;  // that attempt's Slurm log
  nlohmann::json row;         // done: the row as the task wrote it
};

// What is known about one point of one set, gathered from the folder and from Slurm.
struct PointEvidence {
  const RunSubmission* submission = nullptr;  // the latest attempt (nullptr: never submitted)
  bool slurm_answered = false;                // Slurm could be asked (so no state = it forgot the job)
  std::optional<SlurmTaskState> slurm;        // its state of that attempt, when it knows it
  std::optional<nlohmann::json> record;       // the task's own record of that attempt
  std::optional<nlohmann::json> row;          // the row file, parsed
  std::string row_problem;                    // the row file exists but cannot be read
};

// The verdict on one point from its evidence (the rules are in the .cpp, one per case).
PointStatus judge_point(const RunFolder& folder, const std::string& set, size_t point, const PointEvidence& evidence);

// Every point of every set, in set order then point order; `query` receives Slurm's answer
// (its source names sacct or scontrol, for the summary).
std::vector<PointStatus> point_statuses(const RunFolder& folder, const RunManifest& manifest, SlurmQuery& query);

// Thrown by `collect` once it has written what it could: exit code 1 when points failed
// (and were not resubmitted), 3 when rows are still to come.
class Unfinished : public std::runtime_error {
 public:
  Unfinished(int exit_code, const std::string& message) : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace decodelab
