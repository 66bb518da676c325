// collect's verdict on a point from what is known of it: the row first; then Slurm's
// state of the latest attempt; then, once Slurm has forgotten the job, the task's record.
#include <catch2/catch.hpp>

#include "lab/cluster/slurm_collect.h"

using namespace decodelab;
using Catch::Matchers::Contains;

namespace {

const RunFolder kFolder("/runs/r1");
const RunSubmission kAttempt{"main", "57", 0, {0, 1, 2}, "2026-01-31T12:00:00Z", {}};

nlohmann::json record(const std::string& state) {
  nlohmann::json json = {{"state", state},
                         {"node", "node3"},
                         {"started_at", "2026-01-31T12:01:00Z"},
                         {"array_job_id", "57"},
                         {"array_task_id", 2}};
  if (state == "failed") {
    json["exit_code"] = 2;
    json["error"] = "scenario.yaml: model: no model named lab-huge";
  }
  return json;
}

}  // namespace

TEST_CASE("collect: a row makes a point done, whatever else is said", "[collect]") {
  PointEvidence evidence;
  evidence.submission = &kAttempt;
  evidence.slurm = SlurmTaskState{"CANCELLED", "0:15", "node3", ""};
  evidence.row = nlohmann::json{{"swept", {{"new_tokens", "4"}}}};
  const PointStatus status = judge_point(kFolder, "main", 2, evidence);
  CHECK(status.state == PointState::Done);
  CHECK(status.row == *evidence.row);
  CHECK(status.task == "57_2");
  CHECK(status.log == "/runs/r1/logs/main/57_2.out");
}

TEST_CASE("collect: Slurm's state of the latest attempt decides while it remembers it", "[collect]") {
  PointEvidence evidence;
  evidence.submission = &kAttempt;
  evidence.slurm_answered = true;
  evidence.slurm = SlurmTaskState{"PENDING", "0:0", "", "Priority"};
  PointStatus status = judge_point(kFolder, "main", 1, evidence);
  CHECK(status.state == PointState::Waiting);
  CHECK(status.reason == "PENDING (Priority)");

  evidence.slurm = SlurmTaskState{"RUNNING", "0:0", "node3", ""};
  CHECK(judge_point(kFolder, "main", 1, evidence).state == PointState::Waiting);

  evidence.slurm = SlurmTaskState{"CANCELLED", "0:15", "node3", ""};
  status = judge_point(kFolder, "main", 1, evidence);
  CHECK(status.state == PointState::Failed);
  CHECK(status.reason == "CANCELLED, exit 0:15, on node3");

  evidence.slurm = SlurmTaskState{"FAILED", "2:0", "node3", ""};
  evidence.record = record("failed");
  status = judge_point(kFolder, "main", 2, evidence);
  CHECK(status.state == PointState::Failed);
  CHECK_THAT(status.reason, Contains("FAILED, exit 2:0") && Contains("no model named lab-huge"));

  evidence.record.reset();
  evidence.slurm = SlurmTaskState{"COMPLETED", "0:0", "node3", ""};
  CHECK_THAT(judge_point(kFolder, "main", 2, evidence).reason, Contains("COMPLETED without writing its row"));
}

TEST_CASE("collect: once Slurm forgot the job, the task's record tells", "[collect]") {
  PointEvidence evidence;
  evidence.submission = &kAttempt;
  evidence.slurm_answered = true;
  evidence.record = record("running");
  PointStatus status = judge_point(kFolder, "main", 2, evidence);
  CHECK(status.state == PointState::Failed);
  CHECK_THAT(status.reason, Contains("ended without a row") && Contains("node3"));

  evidence.record = record("failed");
  status = judge_point(kFolder, "main", 2, evidence);
  CHECK(status.state == PointState::Failed);
  CHECK_THAT(status.reason, Contains("exit 2: scenario.yaml: model"));

  evidence.record.reset();
  CHECK_THAT(judge_point(kFolder, "main", 2, evidence).reason, Contains("never started") && Contains("job 57"));

  // Slurm could not be asked at all: not a failure, unless the task recorded one.
  evidence.slurm_answered = false;
  CHECK(judge_point(kFolder, "main", 2, evidence).state == PointState::Waiting);
  evidence.record = record("failed");
  CHECK(judge_point(kFolder, "main", 2, evidence).state == PointState::Failed);
}

TEST_CASE("collect: a point never submitted is missing, one run by hand is its record", "[collect]") {
  PointEvidence evidence;
  PointStatus status = judge_point(kFolder, "main", 0, evidence);
  CHECK(status.state == PointState::Failed);
  CHECK(status.reason == "never submitted");
  CHECK(status.task.empty());
  CHECK(status.log.empty());
  evidence.record = record("running");
  CHECK(judge_point(kFolder, "main", 0, evidence).state == PointState::Waiting);
  evidence.row_problem = "its row file x is not a JSON object";
  CHECK(judge_point(kFolder, "main", 0, evidence).reason == evidence.row_problem);
}
