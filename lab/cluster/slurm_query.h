// What Slurm says about the array tasks of a run: each task's state, exit code and node.
// sacct is asked first (it remembers every job, but needs the cluster's accounting
// database); where accounting is off, `scontrol show job` answers instead, which knows
// pending and running tasks and finished ones until the controller forgets them
// (MinJobAge, five minutes by default). Whichever answered is named in `source`, so that
// `collect` can say how it knows.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace decodelab {

struct SlurmTaskState {
  std::string state;      // the first word of Slurm's state: PENDING, RUNNING, COMPLETED, CANCELLED, ...
  std::string exit_code;  // "exit:signal", e.g. "1:0", "0:15"; "" when unknown
  std::string node;       // "" until the task has one
  std::string reason;     // why it is pending (scontrol), or ""
};

// (array job id, task id) -> state.
using SlurmTaskStates = std::map<std::pair<std::string, size_t>, SlurmTaskState>;

struct SlurmQuery {
  std::string source;   // "sacct", "scontrol", or "" when neither could be asked
  std::string problem;  // why not, when source is ""
  SlurmTaskStates tasks;
};

// Asks about every task of these array jobs (none asked when the list is empty).
SlurmQuery query_array_tasks(const std::vector<std::string>& job_ids);

// Parsers of the tools' output, public for the tests:
// `sacct -n -P -X -j J --format=JobID,State,ExitCode,NodeList`: "12_3|CANCELLED by 0|0:15|node1",
// pending tasks folded as "12_[4-15%2]|PENDING|0:0|None assigned".
SlurmTaskStates parse_sacct_tasks(const std::string& text);
// `scontrol -o show job J`: one record per line, "ArrayJobId=12 ArrayTaskId=3 JobState=… ExitCode=… NodeList=…",
// pending tasks folded as "ArrayTaskId=4-15%2".
SlurmTaskStates parse_scontrol_tasks(const std::string& text);

// How collect reads a state: still to run, running, or over (whatever the outcome).
enum class SlurmPhase { Waiting, Running, Ended };
SlurmPhase slurm_phase(const std::string& state);

}  // namespace decodelab
