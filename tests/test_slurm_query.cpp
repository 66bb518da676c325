// Reading Slurm's answers: sacct's parsable lines and `scontrol -o show job` records (the
// texts below are the shapes Slurm 22.05 prints, folded pending tasks included), and which
// states mean waiting, running or over.
#include <catch2/catch.hpp>

#include "lab/cluster/slurm_query.h"

using namespace decodelab;

TEST_CASE("sacct lines give each array task's state, exit code and node", "[slurm_query]") {
  const std::string text =
      "41_0|COMPLETED|0:0|node1\n"
      "41_1|CANCELLED by 0|0:15|node2\n"
      "41_2|FAILED|1:0|node1\n"
      "41_[3-5%2]|PENDING|0:0|None assigned\n"
      "42_7|RUNNING|0:0|gpu-a100-3\n"
      "43|COMPLETED|0:0|node1\n";  // not an array task: ignored
  const SlurmTaskStates states = parse_sacct_tasks(text);
  CHECK(states.size() == 7);
  CHECK(states.at({"41", 1}).state == "CANCELLED");
  CHECK(states.at({"41", 1}).exit_code == "0:15");
  CHECK(states.at({"41", 1}).node == "node2");
  CHECK(states.at({"41", 2}).state == "FAILED");
  CHECK(states.at({"41", 4}).state == "PENDING");
  CHECK(states.at({"41", 4}).node.empty());
  CHECK(states.at({"42", 7}).node == "gpu-a100-3");
  CHECK(states.count({"43", 0}) == 0);
}

TEST_CASE("scontrol records give each array task's state, folded pending tasks included", "[slurm_query]") {
  const std::string text =
      "JobId=1 ArrayJobId=1 ArrayTaskId=2-3%2 ArrayTaskThrottle=2 JobName=t.sh JobState=PENDING "
      "Reason=JobArrayTaskLimit ExitCode=0:0 ReqNodeList=(null) ExcNodeList=(null) NodeList=(null)\n"
      "JobId=4 ArrayJobId=1 ArrayTaskId=1 JobName=t.sh JobState=CANCELLED Reason=None ExitCode=0:15 "
      "ReqNodeList=(null) ExcNodeList=(null) NodeList=vm StdOut=/runs/logs/main/1_1.out\n"
      "JobId=2 ArrayJobId=1 ArrayTaskId=0 JobName=t.sh JobState=COMPLETED Reason=None ExitCode=0:0 "
      "ReqNodeList=(null) ExcNodeList=(null) NodeList=vm\n";
  const SlurmTaskStates states = parse_scontrol_tasks(text);
  REQUIRE(states.size() == 4);
  CHECK(states.at({"1", 0}).state == "COMPLETED");
  CHECK(states.at({"1", 1}).state == "CANCELLED");
  CHECK(states.at({"1", 1}).exit_code == "0:15");
  CHECK(states.at({"1", 1}).node == "vm");  // NodeList, not ReqNodeList or ExcNodeList
  CHECK(states.at({"1", 3}).state == "PENDING");
  CHECK(states.at({"1", 3}).reason == "JobArrayTaskLimit");
  CHECK(states.at({"1", 3}).node.empty());
  CHECK(parse_scontrol_tasks("slurm_load_jobs error: Invalid job id specified\n").empty());
}

TEST_CASE("Slurm states read as waiting, running or over", "[slurm_query]") {
  CHECK(slurm_phase("PENDING") == SlurmPhase::Waiting);
  CHECK(slurm_phase("REQUEUED") == SlurmPhase::Waiting);
  CHECK(slurm_phase("RUNNING") == SlurmPhase::Running);
  CHECK(slurm_phase("COMPLETING") == SlurmPhase::Running);
  for (const char* over : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED"})
    CHECK(slurm_phase(over) == SlurmPhase::Ended);
}
