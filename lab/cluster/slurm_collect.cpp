// Judging each point of a run folder (see slurm_collect.h).
#include "lab/cluster/slurm_collect.h"

#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

namespace decodelab {

namespace fs = std::filesystem;

namespace {

// A JSON file written atomically by a task: absent, parsed, or a problem.
std::optional<nlohmann::json> read_json_file(const fs::path& file, std::string* problem) {
  std::error_code error;
  if (!fs::is_regular_file(file, error)) return std::nullopt;
  std::ifstream stream(file, std::ios::binary);
  std::ostringstream text;
  text << stream.rdbuf();
  nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    if (problem) *problem = "its row file " + file.string() + " is not a JSON object";
    return std::nullopt;
  }
  return json;
}

// The record is of this attempt when it names the attempt's job and task (a record from
// an earlier attempt says nothing about the latest one).
bool record_of(const nlohmann::json& record, const RunSubmission& submission, size_t point) {
  return record.value("array_job_id", "") == submission.job_id &&
         record.value("array_task_id", static_cast<size_t>(-1)) == point - submission.offset;
}

std::string record_error(const nlohmann::json& record) {
  std::string text = "exit " + std::to_string(record.value("exit_code", 1));
  if (record.contains("error") && record["error"].is_string()) text += ": " + record["error"].get<std::string>();
  return text;
}

}  // namespace

PointStatus judge_point(const RunFolder& folder, const std::string& set, size_t point, const PointEvidence& evidence) {
  PointStatus status;
  status.set = set;
  status.point = point;
  if (evidence.submission) {
    const size_t task = point - evidence.submission->offset;
    status.task = evidence.submission->job_id + "_" + std::to_string(task);
    status.log = folder.log_file(set, evidence.submission->job_id, task);
  }
  auto verdict = [&status](PointState state, std::string reason) {
    status.state = state;
    status.reason = std::move(reason);
    return status;
  };
  // 1. The row is what counts, whatever else is said about the task.
  if (evidence.row) {
    status.row = *evidence.row;
    return verdict(PointState::Done, "");
  }
  if (!evidence.row_problem.empty()) return verdict(PointState::Failed, evidence.row_problem);
  const std::optional<nlohmann::json>& record = evidence.record;
  const std::string recorded_state = record ? record->value("state", "") : "";
  // 2. Never submitted (a --dry-run folder, or points run by hand): only a record can tell.
  if (!evidence.submission) {
    if (recorded_state == "failed") return verdict(PointState::Failed, record_error(*record));
    if (recorded_state == "running") {
      return verdict(PointState::Waiting, "started outside Slurm on " + record->value("node", "?") + " at " +
                                              record->value("started_at", "?") + ", no row yet");
    }
    return verdict(PointState::Failed, "never submitted");
  }
  // 3. Slurm knows the attempt: its state decides.
  if (evidence.slurm) {
    const SlurmTaskState& slurm = *evidence.slurm;
    switch (slurm_phase(slurm.state)) {
      case SlurmPhase::Waiting:
        return verdict(PointState::Waiting, slurm.state + (slurm.reason.empty() ? "" : " (" + slurm.reason + ")"));
      case SlurmPhase::Running:
        return verdict(PointState::Waiting, slurm.state + (slurm.node.empty() ? "" : " on " + slurm.node));
      case SlurmPhase::Ended: {
        std::string reason = slurm.state == "COMPLETED" ? "COMPLETED without writing its row" : slurm.state;
        if (!slurm.exit_code.empty()) reason += ", exit " + slurm.exit_code;
        if (!slurm.node.empty()) reason += ", on " + slurm.node;
        if (recorded_state == "failed") reason += " (" + record_error(*record) + ")";
        return verdict(PointState::Failed, reason);
      }
    }
  }
  // 4. Slurm answered but has forgotten the job: the task's own record tells what happened.
  if (evidence.slurm_answered) {
    if (recorded_state == "failed") return verdict(PointState::Failed, record_error(*record));
    if (recorded_state == "running") {
      return verdict(PointState::Failed, "ended without a row after starting on " + record->value("node", "?") +
                                             " at " + record->value("started_at", "?") +
                                             " (killed: cancelled, out of time or memory, or its node failed)");
    }
    if (recorded_state == "done") return verdict(PointState::Failed, "recorded as done, but its row is missing");
    return verdict(PointState::Failed, "never started, and Slurm no longer knows job " + evidence.submission->job_id);
  }
  // 5. Slurm could not be asked: a recorded failure is still a failure; anything else is unknown.
  if (recorded_state == "failed") return verdict(PointState::Failed, record_error(*record));
  return verdict(PointState::Waiting, "unknown: Slurm could not be asked");
}

std::vector<PointStatus> point_statuses(const RunFolder& folder, const RunManifest& manifest, SlurmQuery& query) {
  // The latest attempt of every point, and Slurm's view of those jobs, asked first.
  std::vector<std::string> jobs;
  std::set<std::string> seen;
  for (const RunSet& set : manifest.sets) {
    for (size_t point = 0; point < manifest.points.size(); ++point) {
      const RunSubmission* submission = manifest.latest_submission(set.name, point);
      if (submission && seen.insert(submission->job_id).second) jobs.push_back(submission->job_id);
    }
  }
  query = query_array_tasks(jobs);
  std::vector<PointStatus> statuses;
  for (const RunSet& set : manifest.sets) {
    for (size_t point = 0; point < manifest.points.size(); ++point) {
      PointEvidence evidence;
      evidence.submission = manifest.latest_submission(set.name, point);
      evidence.slurm_answered = !query.source.empty();
      if (evidence.submission) {
        const auto found = query.tasks.find({evidence.submission->job_id, point - evidence.submission->offset});
        if (found != query.tasks.end()) evidence.slurm = found->second;
      }
      evidence.row = read_json_file(folder.row_file(set.name, point), &evidence.row_problem);
      std::optional<nlohmann::json> record = read_json_file(folder.task_record_file(set.name, point), nullptr);
      if (record && (!evidence.submission || record_of(*record, *evidence.submission, point)))
        evidence.record = std::move(record);
      statuses.push_back(judge_point(folder, set.name, point, evidence));
    }
  }
  return statuses;
}

}  // namespace decodelab
