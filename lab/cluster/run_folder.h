// A run folder: a sweep or a lab handed to a scheduler, as files every node can read.
// It holds the manifest (every point's scenario, the command that made it, the decodelab
// version, the settings each task runs with, every submission), the script each array
// task runs, and what the tasks write back: one row file per point and row set, written
// atomically, a task record (started, or failed with its message), and the Slurm logs.
//
//   RUN/manifest.json
//   RUN/task.sh                      run-point SET OFFSET+$SLURM_ARRAY_TASK_ID
//   RUN/rows/<set>/<point>.json      the row, exactly as a local sweep or lab writes it
//   RUN/tasks/<set>/<point>.json     the task's own record (state, node, job, error)
//   RUN/logs/<set>/<job>_<task>.out  Slurm's output file for the task
//   RUN/reports/<set>/<bug>/         lab only: each comparison's report
//
// A row set is one partition's rows (a study over several GPU types has one set per
// partition); its name is the partition's, or "default" when none was named. Points are
// numbered from 0 in the order the local command runs them, so row K of a set is the row
// a local run writes K-th. The folder is scheduler-agnostic: a point run by hand
// (`decodelab run-point RUN --set S --point K`) is collected like one run by Slurm.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace decodelab {

constexpr int kRunFolderSchemaVersion = 1;

struct RunPoint {
  std::string label;                                       // sweep: "batch_size=8 new_tokens=4"; lab: the bug's name
  std::string file;                                        // the scenario file, as the command was given it
  std::vector<std::pair<std::string, std::string>> swept;  // sweep: swept key -> value, in order
  std::string scenario_yaml;                               // the point's scenario document, every --set applied
};

struct RunSet {
  std::string name;       // file-name safe: the partition, or "default"
  std::string partition;  // "" = the cluster's default partition
};

// What each task runs with (the command's own options).
struct RunSettings {
  std::string backend;  // "" = each scenario's, else "cpu" | "cuda"
  int threads = 0;      // 0 = the CPUs Slurm gave the task (SLURM_CPUS_PER_TASK / _ON_NODE)
  bool check_numerics = false;
};

// The sbatch options every submission of the run repeats.
struct SlurmSettings {
  std::string job_name;
  std::string gres;                        // --gres, e.g. "gpu:1"
  std::string time_limit;                  // --time
  int throttle = 0;                        // the array's %N: at most N tasks at once (0 = no limit)
  int cpus_per_task = 0;                   // --cpus-per-task (0 = Slurm's default)
  std::vector<std::string> extra_options;  // passed to sbatch as given
};

struct RunSubmission {
  std::string set;
  std::string job_id;  // the array's job id
  size_t offset = 0;   // task K runs point offset + K
  std::vector<size_t> points;
  std::string submitted_at;  // UTC, ISO 8601
  std::vector<std::string> sbatch_command;
};

struct RunManifest {
  std::string command;  // "sweep" | "lab"
  std::string decodelab_version;
  std::string created_at;
  std::string working_directory;            // each task runs here (relative scenario paths resolve as they did)
  std::vector<std::string> submitted_with;  // the decodelab command line that made the folder
  std::vector<std::string> overrides;       // every --set, as given
  RunSettings settings;
  SlurmSettings slurm;
  std::vector<RunSet> sets;
  std::vector<RunPoint> points;
  std::vector<RunSubmission> submissions;

  const RunSet* find_set(const std::string& name) const;
  // The last submission that ran `point` of `set` (nullptr: never submitted).
  const RunSubmission* latest_submission(const std::string& set, size_t point) const;
};

nlohmann::json manifest_json(const RunManifest& manifest);
// InputError naming `file` and the key when something is missing or mistyped.
RunManifest manifest_from_json(const nlohmann::json& json, const std::string& file);

class RunFolder {
 public:
  explicit RunFolder(std::filesystem::path root);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path manifest_file() const { return root_ / "manifest.json"; }
  std::filesystem::path task_script() const { return root_ / "task.sh"; }
  std::filesystem::path row_file(const std::string& set, size_t point) const;
  std::filesystem::path task_record_file(const std::string& set, size_t point) const;
  std::filesystem::path log_directory(const std::string& set) const { return root_ / "logs" / set; }
  std::filesystem::path log_file(const std::string& set, const std::string& job_id, size_t task) const;
  std::filesystem::path report_directory(const std::string& set) const { return root_ / "reports" / set; }

  // Creates the folders each set's tasks write into (Slurm does not create --output's folder).
  void create_set_directories(const std::string& set) const;

  // InputError when the folder holds no readable manifest of a decodelab run.
  RunManifest read_manifest() const;
  void write_manifest(const RunManifest& manifest) const;  // atomically

 private:
  std::filesystem::path root_;
};

// A set name usable as a folder: letters, digits, '.', '_' and '-', not starting with '.'.
bool is_safe_set_name(const std::string& name);

// "0-3,7,9-10" from point indices (sorted, merged into ranges), and back; the reader takes
// what Slurm prints for an array (also "[0-3%2]" and "0-15:2"). InputError on anything else.
std::string index_ranges(std::vector<size_t> indices);
std::vector<size_t> parse_index_ranges(const std::string& text, const std::string& what);

// Now, UTC, "2026-01-31T12:00:00Z".
std::string utc_timestamp();

}  // namespace decodelab
