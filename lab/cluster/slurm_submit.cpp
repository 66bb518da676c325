// Run folder creation and sbatch submission (see slurm_submit.h).
#include "lab/cluster/slurm_submit.h"

#include <sys/stat.h>

#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <system_error>

#include "engine/base/errors.h"
#include "lab/cli/cli.h"
#include "lab/paths.h"
#include "lab/cluster/subprocess.h"
#include "profiling/atomic_file.h"

namespace decodelab {

namespace fs = std::filesystem;

namespace {

std::string version_string() {
#ifdef DECODELAB_VERSION
  return DECODELAB_VERSION;
#else
  return "unknown";
#endif
}

std::string file_name_safe(const std::string& text) {
  std::string safe;
  for (char c : text) safe += is_safe_set_name(std::string(1, c)) ? c : '_';
  return safe.empty() ? "run" : safe;
}

fs::path default_run_dir(const RunPlan& plan) {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  ::gmtime_r(&now, &parts);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &parts);
  const std::string base = "decodelab-run-" + plan.command + "-" + file_name_safe(plan.name) + "-" + stamp;
  fs::path candidate = base;
  std::error_code error;
  for (int suffix = 2; fs::exists(candidate, error); ++suffix) candidate = base + "-" + std::to_string(suffix);
  return candidate;
}

// The MaxArraySize the controller enforces (task ids run from 0 to it minus one), asked once.
size_t max_array_size() {
  static const size_t size = [] {
    const ProcessOutput config = run_program({"scontrol", "show", "config"});
    const size_t key = config.exit_code == 0 ? config.out.find("MaxArraySize") : std::string::npos;
    const size_t equals = key == std::string::npos ? key : config.out.find('=', key);
    if (equals != std::string::npos) {
      try {
        const size_t value = std::stoul(config.out.substr(equals + 1, config.out.find('\n', equals) - equals - 1));
        if (value > 1) return value;
      } catch (const std::exception&) {
      }
    }
    return size_t{1001};  // Slurm's default
  }();
  return size;
}

// sbatch's answer as one line (the error lines Slurm wrote).
std::string slurm_message(const ProcessOutput& output) {
  if (!output.started) return output.err;
  std::string message = last_lines(output.err + "\n" + output.out, 3);
  return message.empty() ? "exit code " + std::to_string(output.exit_code) + " and no message" : message;
}

void write_task_script(const RunFolder& folder) {
  const fs::path binary = executable_path();
  if (binary.empty()) throw ResourceError("cannot tell where this decodelab binary is (/proc/self/exe)");
  const std::string script =
      "#!/bin/sh\n"
      "# decodelab run folder: array task K of row set $1 runs point $2 + K (see manifest.json).\n"
      "exec " +
      shell_quote(binary.string()) + " run-point " + shell_quote(folder.root().string()) +
      " --set \"$1\" --point \"$(($2 + SLURM_ARRAY_TASK_ID))\"\n";
  save_file_atomically(folder.task_script(), script);
  ::chmod(folder.task_script().c_str(), 0755);
}

// Task ids per block of Slurm's MaxArraySize: task K of the block at `offset` runs point offset + K.
std::map<size_t, std::vector<size_t>> tasks_by_offset(const std::vector<size_t>& points) {
  const size_t block = max_array_size();
  std::map<size_t, std::vector<size_t>> tasks;
  for (size_t point : points) tasks[point / block * block].push_back(point % block);
  return tasks;
}

std::string partition_key(const RunSet& set) {
  return set.partition.empty() ? "" : "--partition " + set.partition;
}

ProcessOutput run_sbatch(const std::vector<std::string>& command, const RunSet& set) {
  ProcessOutput output = run_program(command);
  if (!output.started)
    throw ResourceError("cannot run sbatch (" + output.err + "): is Slurm installed on this machine?");
  if (output.exit_code != 0)
    throw InputError("sbatch", 0, partition_key(set), "Slurm refused the job: " + slurm_message(output));
  return output;
}

// `sbatch --test-only` for every block: Slurm checks the partition, --gres, --time and
// the options without queueing anything.
void check_submission(const RunFolder& folder, const RunManifest& manifest, const RunSet& set,
                      const std::vector<size_t>& points) {
  for (const auto& [offset, tasks] : tasks_by_offset(points)) {
    std::vector<std::string> test = sbatch_command(folder, manifest, set, offset, tasks);
    test[1] = "--test-only";
    run_sbatch(test, set);
  }
}

void print_line(bool quiet, const std::string& line) {
  if (quiet) return;
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace

std::vector<std::string> sbatch_command(const RunFolder& folder, const RunManifest& manifest, const RunSet& set,
                                        size_t offset, const std::vector<size_t>& tasks) {
  const SlurmSettings& slurm = manifest.slurm;
  std::string array = index_ranges(tasks);
  if (slurm.throttle > 0) array += "%" + std::to_string(slurm.throttle);
  std::vector<std::string> command = {"sbatch",
                                      "--parsable",
                                      "--job-name=" + slurm.job_name,
                                      "--array=" + array,
                                      "--output=" + (folder.log_directory(set.name) / "%A_%a.out").string(),
                                      "--chdir=" + manifest.working_directory};
  if (!set.partition.empty()) command.push_back("--partition=" + set.partition);
  if (!slurm.gres.empty()) command.push_back("--gres=" + slurm.gres);
  if (!slurm.time_limit.empty()) command.push_back("--time=" + slurm.time_limit);
  if (slurm.cpus_per_task > 0) command.push_back("--cpus-per-task=" + std::to_string(slurm.cpus_per_task));
  for (const std::string& option : slurm.extra_options) command.push_back(option);
  command.push_back(folder.task_script().string());
  command.push_back(set.name);
  command.push_back(std::to_string(offset));
  return command;
}

void submit_points(const RunFolder& folder, RunManifest& manifest, const std::string& set_name,
                   const std::vector<size_t>& points) {
  const RunSet* set = manifest.find_set(set_name);
  if (!set) throw InputError(folder.manifest_file().string(), 0, "sets", "no row set named " + set_name);
  folder.create_set_directories(set->name);
  for (const auto& [offset, tasks] : tasks_by_offset(points)) {
    const std::vector<std::string> command = sbatch_command(folder, manifest, *set, offset, tasks);
    const ProcessOutput submitted = run_sbatch(command, *set);
    const std::string job_id = submitted.out.substr(0, submitted.out.find_first_of(";\n"));
    if (job_id.empty() || job_id.find_first_not_of("0123456789") != std::string::npos)
      throw std::runtime_error("sbatch answered no job id: " + slurm_message(submitted));
    RunSubmission submission;
    submission.set = set->name;
    submission.job_id = job_id;
    submission.offset = offset;
    for (size_t task : tasks) submission.points.push_back(offset + task);
    submission.submitted_at = utc_timestamp();
    submission.sbatch_command = command;
    manifest.submissions.push_back(std::move(submission));
    folder.write_manifest(manifest);
  }
}

void submit_run(const RunPlan& plan, const SlurmRequest& request) {
  if (plan.points.empty()) throw InputError("--slurm", 0, "", "nothing to submit");
  RunManifest manifest;
  std::set<std::string> seen;
  for (const std::string& partition : request.partitions) {
    if (!is_safe_set_name(partition))
      throw InputError("--partition", 0, "", "'" + partition + "' is not a partition name (letters, digits, . _ -)");
    if (!seen.insert(partition).second) throw InputError("--partition", 0, "", partition + " is named twice");
    manifest.sets.push_back({partition, partition});
  }
  if (manifest.sets.empty()) manifest.sets.push_back({"default", ""});

  fs::path root = request.run_dir.empty() ? default_run_dir(plan) : fs::path(request.run_dir);
  std::error_code error;
  if (fs::exists(root, error) && !(fs::is_directory(root, error) && fs::is_empty(root, error))) {
    throw InputError(root.string(), 0, "--run-dir",
                     "already exists and is not empty (collect it with `decodelab collect`, or name another folder)");
  }
  const bool created = !fs::exists(root, error);
  fs::create_directories(root, error);
  if (error) throw InputError(root.string(), 0, "--run-dir", "cannot be created: " + error.message());
  root = fs::canonical(root);
  const RunFolder folder(root);
  // Until something is queued, a failure leaves nothing behind.
  struct Cleanup {
    fs::path root;
    bool created;
    bool keep = false;
    ~Cleanup() {
      if (keep) return;
      std::error_code ignored;
      if (created) {
        fs::remove_all(root, ignored);
      } else {
        for (const auto& entry : fs::directory_iterator(root, ignored)) fs::remove_all(entry.path(), ignored);
      }
    }
  } cleanup{root, created};

  manifest.command = plan.command;
  manifest.decodelab_version = version_string();
  manifest.created_at = utc_timestamp();
  manifest.working_directory = fs::current_path().string();
  manifest.submitted_with = invocation_arguments();
  manifest.overrides = plan.overrides;
  manifest.settings = plan.settings;
  manifest.slurm.job_name = "decodelab-" + plan.command + "-" + file_name_safe(plan.name);
  manifest.slurm.gres = request.gres;
  manifest.slurm.time_limit = request.time_limit;
  manifest.slurm.throttle = request.throttle;
  manifest.slurm.cpus_per_task = request.cpus_per_task;
  manifest.slurm.extra_options = request.sbatch_options;
  manifest.points = plan.points;
  for (const RunSet& set : manifest.sets) folder.create_set_directories(set.name);
  write_task_script(folder);
  folder.write_manifest(manifest);

  std::vector<size_t> all_points;
  for (size_t i = 0; i < plan.points.size(); ++i) all_points.push_back(i);
  const bool quiet = request.quiet;
  if (request.dry_run) {
    cleanup.keep = true;
    print_line(quiet, "run folder: " + root.string() + " (" + std::to_string(plan.points.size()) +
                          " points; dry run: nothing submitted)");
    for (const RunSet& set : manifest.sets)
      for (const auto& [offset, tasks] : tasks_by_offset(all_points))
        print_line(quiet, command_text(sbatch_command(folder, manifest, set, offset, tasks)));
    print_line(quiet, "submit with: decodelab collect " + shell_quote(root.string()) + " --resubmit");
    return;
  }
  // Every set's job checked before any is queued: a bad partition refuses the whole study.
  for (const RunSet& set : manifest.sets) check_submission(folder, manifest, set, all_points);
  for (const RunSet& set : manifest.sets) {
    try {
      submit_points(folder, manifest, set.name, all_points);
    } catch (...) {
      cleanup.keep = !manifest.submissions.empty();
      if (cleanup.keep) {
        std::fprintf(stderr,
                     "decodelab: %zu array job(s) were queued before this failure; the run folder %s keeps them "
                     "(`decodelab collect %s --resubmit` submits the rest)\n",
                     manifest.submissions.size(), root.c_str(), shell_quote(root.string()).c_str());
      }
      throw;
    }
  }
  cleanup.keep = true;
  for (const RunSubmission& submission : manifest.submissions) {
    const RunSet* set = manifest.find_set(submission.set);
    print_line(quiet, "submitted job " + submission.job_id + " to " +
                          (set->partition.empty() ? "the default partition" : "partition " + set->partition) + ": " +
                          std::to_string(submission.points.size()) + " tasks (points " +
                          index_ranges(submission.points) + ")");
  }
  print_line(quiet, "run folder: " + root.string());
  print_line(quiet, "collect with: decodelab collect " + shell_quote(root.string()));
}

}  // namespace decodelab
