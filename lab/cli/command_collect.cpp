// `decodelab collect RUN_DIR`: gathers the rows a Slurm run's tasks wrote into the run folder
// and prints and writes them as the local command would (the same table, the same --json
// results file, the lab's --report), one row set per partition and, for several, a table
// putting them side by side. Points without a row are named with their Slurm state and log;
// --resubmit submits exactly those again. Collecting only reads the folder (--resubmit adds
// submissions to the manifest, under a lock), so it is safe to repeat, and safe while tasks run.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "engine/base/errors.h"
#include "lab/report/collect_report.h"
#include "lab/cli/commands.h"
#include "lab/output_files.h"
#include "lab/run/results_file.h"
#include "lab/cluster/run_folder.h"
#include "lab/cluster/slurm_collect.h"
#include "lab/cluster/slurm_submit.h"
#include "lab/cluster/subprocess.h"

namespace decodelab {

namespace fs = std::filesystem;

namespace {

// Held while --resubmit reads and extends the manifest, so two at once never submit twice.
class FolderLock {
 public:
  explicit FolderLock(const fs::path& file) : descriptor_(::open(file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
    if (descriptor_ < 0) throw std::runtime_error("cannot open the lock file " + file.string());
    ::flock(descriptor_, LOCK_EX);
  }
  ~FolderLock() { ::close(descriptor_); }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int descriptor_;
};

std::string point_name(const RunManifest& manifest, const PointStatus& status) {
  std::string name = status.set + " point " + std::to_string(status.point);
  if (!manifest.points[status.point].label.empty()) name += " (" + manifest.points[status.point].label + ")";
  return name;
}

}  // namespace

void execute_collect(const CollectArguments& arguments) {
  const RunFolder folder(fs::absolute(arguments.run_dir));
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");
  if (!arguments.report_dir.empty()) check_output_directory(arguments.report_dir, "--report");
  std::unique_ptr<FolderLock> lock;
  if (arguments.resubmit) {
    folder.read_manifest();  // a clear error for a folder that is not a run folder, before the lock file
    lock = std::make_unique<FolderLock>(folder.root() / ".collect.lock");
  }
  RunManifest manifest = folder.read_manifest();
  if (!arguments.report_dir.empty() && manifest.command != "lab")
    throw InputError("--report", 0, "", "only a lab run has a report; a sweep's rows go to --json");

  SlurmQuery query;
  const std::vector<PointStatus> statuses = point_statuses(folder, manifest, query);
  const CollectedPoints points = collected_points(manifest);
  std::vector<CollectedSet> sets;
  for (const RunSet& set : manifest.sets)
    sets.push_back({set, std::vector<const nlohmann::json*>(manifest.points.size())});
  for (const PointStatus& status : statuses) {
    if (status.state != PointState::Done) continue;
    for (CollectedSet& set : sets)
      if (set.set.name == status.set) set.rows[status.point] = &status.row;
  }

  // The tables, as the local command prints them.
  const std::string side_by_side = sets.size() > 1 ? side_by_side_table(manifest, points, sets) : "";
  if (!arguments.quiet) {
    std::string text;
    for (const CollectedSet& set : sets) {
      if (sets.size() > 1) text += "## " + set_heading(set) + "\n\n";
      text += set_table(manifest, points, set);
      if (sets.size() > 1) text += "\n";
    }
    if (sets.size() > 1) text += "## side by side\n\n" + side_by_side;
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  }

  // The results file: every row in, set by set, each in point order.
  size_t done = 0;
  ResultsFile results("", manifest.command);
  for (const CollectedSet& set : sets) {
    for (const nlohmann::json* row : set.rows) {
      if (!row) continue;
      results.add(*row);
      ++done;
    }
  }
  const size_t total = statuses.size();
  if (!arguments.json_file.empty()) {
    StagedOutputs outputs;
    outputs.stage(arguments.json_file, results.document(done == total).dump(2) + "\n");
    outputs.commit();
  }
  if (!arguments.report_dir.empty()) write_collected_lab_report(arguments.report_dir, folder, sets, side_by_side);

  // What is missing, and why: every failed point (up to a screenful), the waiting ones
  // one by one when few, else counted by state.
  std::map<std::string, std::vector<size_t>> failed_by_set;
  std::map<std::string, size_t> waiting_by_state;
  size_t failed = 0, waiting = 0;
  for (const PointStatus& status : statuses) {
    if (status.state == PointState::Failed) {
      ++failed;
      failed_by_set[status.set].push_back(status.point);
    } else if (status.state == PointState::Waiting) {
      ++waiting;
      ++waiting_by_state[status.reason.substr(0, status.reason.find_first_of(" ("))];
    }
  }
  constexpr size_t kListedAtMost = 40, kWaitingListedAtMost = 12;
  size_t listed = 0;
  for (const PointStatus& status : statuses) {
    if (arguments.quiet || status.state == PointState::Done) continue;
    if (status.state == PointState::Waiting && waiting > kWaitingListedAtMost) continue;
    if (++listed > kListedAtMost) continue;
    std::string line = "decodelab: " + point_name(manifest, status) + ": " +
                       (status.state == PointState::Failed ? "failed: " : "") + status.reason;
    if (!status.log.empty()) line += "; log " + status.log.string();
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  if (!arguments.quiet && listed > kListedAtMost)
    std::fprintf(stderr, "decodelab: ... and %zu more\n", listed - kListedAtMost);
  if (!arguments.quiet && waiting > kWaitingListedAtMost) {
    std::string summary;
    for (const auto& [state, count] : waiting_by_state)
      summary += (summary.empty() ? "" : ", ") + std::to_string(count) + " " + state;
    std::fprintf(stderr, "decodelab: waiting: %s\n", summary.c_str());
  }
  const std::string how = query.source.empty() ? (query.problem.empty() ? "nothing submitted yet"
                                                                        : "Slurm could not be asked: " + query.problem)
                                               : "task states from " + query.source;
  if (!arguments.quiet) {
    std::fprintf(stderr, "decodelab: %zu of %zu rows collected (%s)\n", done, total, how.c_str());
    // One set's heading is not in its table (which stays the local command's): said here.
    if (sets.size() == 1 && done > 0) std::fprintf(stderr, "decodelab: %s\n", set_heading(sets.front()).c_str());
  }

  // --resubmit: exactly the failed points, set by set.
  size_t resubmitted = 0;
  if (arguments.resubmit && failed > 0) {
    if (!arguments.time_limit.empty()) manifest.slurm.time_limit = arguments.time_limit;
    for (const auto& [set, failed_points] : failed_by_set) {
      const size_t before = manifest.submissions.size();
      submit_points(folder, manifest, set, failed_points);
      resubmitted += failed_points.size();
      for (size_t i = before; i < manifest.submissions.size(); ++i) {
        if (!arguments.quiet) {
          std::printf("resubmitted %zu points of %s as job %s (points %s)\n", manifest.submissions[i].points.size(),
                      set.c_str(), manifest.submissions[i].job_id.c_str(),
                      index_ranges(manifest.submissions[i].points).c_str());
        }
      }
    }
    std::fflush(stdout);
  }

  const std::string again = "decodelab collect " + shell_quote(folder.root().string());
  const std::string partial =
      arguments.json_file.empty() ? "" : "; " + arguments.json_file + " holds the rows so far (\"complete\": false)";
  if (failed > resubmitted) {
    throw Unfinished(1, std::to_string(failed) + " of " + std::to_string(total) + " points failed (listed above)" +
                            partial + "; `" + again + " --resubmit` runs them again");
  }
  if (waiting + resubmitted > 0) {
    throw Unfinished(3, std::to_string(waiting + resubmitted) + " of " + std::to_string(total) +
                            " points are still to run" + partial + "; collect again later: " + again);
  }
}

}  // namespace decodelab
