// One array task: the point's row, its placement, its record (see run_point.h).
//
// The non-obvious choice: tasks that land on one uncalibrated node together would each
// calibrate it at the same moment, every measurement slowed by the others; so the roofs are
// taken under a file lock beside the node's calibration file: the first task calibrates, the
// others wait and read the calibration (one file per host and thread count, so a shared home
// folder holds one per node).
#include "lab/cluster/run_point.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <system_error>

#include "engine/base/errors.h"
#include "lab/run/compare.h"
#include "lab/report/lab_table.h"
#include "lab/run/runner.h"
#include "lab/scenario/scenario.h"
#include "lab/run/sweep_row.h"
#include "profiling/atomic_file.h"
#include "profiling/measure/calibration.h"
#include "profiling/measure/default_roofs.h"

namespace decodelab {

namespace fs = std::filesystem;

namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string node_name() {
  if (std::string slurm_node = environment("SLURMD_NODENAME"); !slurm_node.empty()) return slurm_node;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || !host[0]) return "unknown-host";
  std::string name = host;
  return name.substr(0, name.find('.'));
}

// The roofs this node's runs are read against, calibrated by one task at a time; `machine`
// (checked before) is what a calibration made here records.
DeviceSpec node_roofs(Backend& backend, int threads, const MachineState& machine) {
  const fs::path calibration = calibration_path(threads);
  std::error_code error;
  fs::create_directories(calibration.parent_path(), error);
  std::string lock_name = ".";  // appended piecewise: GCC 12 misreports "literal" + string (-Wrestrict)
  lock_name += calibration.filename().string() + ".lock";
  const fs::path lock = calibration.parent_path() / lock_name;
  const int descriptor = ::open(lock.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (descriptor >= 0) ::flock(descriptor, LOCK_EX);  // without a lock file the node is still calibrated
  struct Unlock {
    int descriptor;
    ~Unlock() {
      if (descriptor >= 0) ::close(descriptor);  // closing releases the lock
    }
  } unlock{descriptor};
  return default_device_spec(backend, threads, nullptr, {}, &machine);
}

std::optional<BackendKind> backend_override(const RunSettings& settings) {
  if (settings.backend.empty()) return std::nullopt;
  return settings.backend == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
}

nlohmann::json sweep_point_row(const RunPoint& point, const Scenario& scenario, const YAML::Node& document,
                               const RunSettings& settings, int threads) {
  RunOptions options;
  options.backend = backend_override(settings);
  options.threads = threads;
  options.check_numerics = settings.check_numerics;
  std::unique_ptr<Backend> backend = open_backend(scenario, options);
  // The machine first (a warning lands in the task's log), then the roofs: as a local sweep.
  SweepContext context;
  context.machine = check_machine_for_timing(*backend, threads);
  context.spec = node_roofs(*backend, threads, *context.machine);
  const SweepPoint sweep_point{point.label, point.swept, document};
  return run_sweep_point(sweep_point, scenario, options, *backend, context).json;
}

nlohmann::json lab_point_row(const RunFolder& folder, const RunSet& set, const Scenario& scenario,
                             const RunSettings& settings, int threads) {
  CompareOptions options;
  options.backend = backend_override(settings);
  options.threads = threads;
  {
    // compare calibrates the node itself when it is not: have that done first, under the lock.
    RunOptions open_options;
    open_options.backend = options.backend;
    open_options.threads = threads;
    std::unique_ptr<Backend> backend = open_backend(scenario, open_options);
    options.machine = check_machine_for_timing(*backend, threads);
    DeviceSpec roofs = node_roofs(*backend, threads, *options.machine);
    if (is_gpu_backend(*backend)) options.roofs = std::move(roofs);  // an unknown GPU's are kept nowhere
  }
  const Comparison comparison = compare_with_fixed_twin(scenario, options);
  const LabRow row = lab_row(comparison);
  write_bug_report(folder.report_directory(set.name), row, comparison);
  return lab_row_json(row);
}

void write_record(const RunFolder& folder, const std::string& set, size_t point, const nlohmann::json& record) {
  try {
    save_file_atomically(folder.task_record_file(set, point), record.dump(2) + "\n");
  } catch (const std::exception&) {
    // The record only helps collect explain a failure; the row is what counts.
  }
}

}  // namespace

int task_threads(int requested) {
  if (requested > 0) return requested;
  for (const char* name : {"SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE"}) {
    const std::string value = environment(name);
    if (!value.empty() && value.find_first_not_of("0123456789") == std::string::npos && value.size() < 6) {
      const int count = std::stoi(value);
      if (count > 0) return count;
    }
  }
  return 0;
}

nlohmann::json task_placement(const RunFolder& folder, const RunSet& set, int threads) {
  nlohmann::json placement = {{"node", node_name()}, {"set", set.name}};
  const std::string partition = environment("SLURM_JOB_PARTITION");
  placement["partition"] = partition.empty() ? set.partition : partition;
  if (threads > 0) placement["threads"] = threads;
  const std::string job = environment("SLURM_JOB_ID");
  if (!job.empty()) placement["job_id"] = job;
  const std::string array_job = environment("SLURM_ARRAY_JOB_ID");
  const std::string array_task = environment("SLURM_ARRAY_TASK_ID");
  if (!array_job.empty() && !array_task.empty() && array_task.find_first_not_of("0123456789") == std::string::npos &&
      array_task.size() < 10) {
    placement["array_job_id"] = array_job;
    placement["array_task_id"] = std::stoul(array_task);
    placement["log"] = folder.log_file(set.name, array_job, std::stoul(array_task)).string();
  }
  for (const char* gpus : {"CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS"}) {
    if (std::string value = environment(gpus); !value.empty()) {
      placement["gpus"] = value;
      break;
    }
  }
  return placement;
}

void run_point(const fs::path& run_dir, const std::string& set_name, size_t point_index) {
  const RunFolder folder(fs::absolute(run_dir));
  const RunManifest manifest = folder.read_manifest();
  const RunSet* set = manifest.find_set(set_name);
  if (!set) throw InputError(folder.manifest_file().string(), 0, "--set", "the run has no row set named " + set_name);
  if (point_index >= manifest.points.size()) {
    throw InputError(
        folder.manifest_file().string(), 0, "--point",
        std::to_string(point_index) + " is past the last point (" + std::to_string(manifest.points.size() - 1) + ")");
  }
  const RunPoint& point = manifest.points[point_index];
  const int threads = task_threads(manifest.settings.threads);
  const nlohmann::json placement = task_placement(folder, *set, threads);
  nlohmann::json record = placement;
  record["point"] = point_index;
  record["label"] = point.label;
  record["state"] = "running";
  record["started_at"] = utc_timestamp();
  write_record(folder, set->name, point_index, record);
  try {
#ifdef DECODELAB_VERSION
    if (manifest.decodelab_version != DECODELAB_VERSION) {
      throw ResourceError("the run folder was written by decodelab " + manifest.decodelab_version + ", this is " +
                          DECODELAB_VERSION + ": run the points with the binary that submitted them");
    }
#endif
    // Relative scenario and model paths resolve from where the command was given.
    std::error_code error;
    fs::current_path(manifest.working_directory, error);
    if (error) {
      throw ResourceError("cannot enter the run's working directory " + manifest.working_directory + " on node " +
                          placement["node"].get<std::string>() + " (" + error.message() +
                          "): the nodes must share the submitting machine's filesystem");
    }
    std::vector<ScenarioOverride> overrides;
    for (const std::string& assignment : manifest.overrides) overrides.push_back(parse_override(assignment));
    const YAML::Node document = parse_scenario_text(point.scenario_yaml, point.file);
    const Scenario scenario = parse_scenario(document, point.file, overrides);
    // A scenario's own `threads:` (a swept one too) wins over the CPUs Slurm gave, as --threads would.
    const int point_threads = manifest.settings.threads == 0 && scenario.threads > 0 ? scenario.threads : threads;
    nlohmann::json row = manifest.command == "sweep"
                             ? sweep_point_row(point, scenario, document, manifest.settings, point_threads)
                             : lab_point_row(folder, *set, scenario, manifest.settings, point_threads);
    row["placement"] = placement;
    save_file_atomically(folder.row_file(set->name, point_index), row.dump(2) + "\n");
    record["state"] = "done";
  } catch (const std::exception& failure) {
    record["state"] = "failed";
    record["error"] = failure.what();
    const bool bad_input = dynamic_cast<const InputError*>(&failure) || dynamic_cast<const ResourceError*>(&failure);
    record["exit_code"] = bad_input ? 2 : 1;
    record["ended_at"] = utc_timestamp();
    write_record(folder, set->name, point_index, record);
    throw;
  }
  record["ended_at"] = utc_timestamp();
  write_record(folder, set->name, point_index, record);
}

}  // namespace decodelab
