// Reading sacct's and scontrol's answers (see slurm_query.h).
#include "lab/cluster/slurm_query.h"

#include <sstream>

#include "engine/base/errors.h"
#include "lab/cluster/run_folder.h"
#include "lab/cluster/subprocess.h"

namespace decodelab {

namespace {

std::string first_word(const std::string& text) {
  return text.substr(0, text.find(' '));
}

// "12_3" or "12_[4-15%2]" -> the job id and its tasks; false for anything else (a plain
// job, a step, a heterogeneous component).
bool split_array_id(const std::string& id, std::string& job, std::vector<size_t>& tasks) {
  const size_t underscore = id.find('_');
  if (underscore == std::string::npos || underscore == 0) return false;
  job = id.substr(0, underscore);
  if (job.find_first_not_of("0123456789") != std::string::npos) return false;
  try {
    tasks = parse_index_ranges(id.substr(underscore + 1), "array task id");
  } catch (const InputError&) {
    return false;
  }
  return true;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator)) parts.push_back(part);
  return parts;
}

}  // namespace

SlurmTaskStates parse_sacct_tasks(const std::string& text) {
  SlurmTaskStates states;
  for (std::string line : split(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::vector<std::string> fields = split(line, '|');
    if (fields.size() < 2) continue;
    std::string job;
    std::vector<size_t> tasks;
    if (!split_array_id(fields[0], job, tasks)) continue;
    SlurmTaskState state;
    state.state = first_word(fields[1]);
    if (fields.size() > 2) state.exit_code = fields[2];
    if (fields.size() > 3 && fields[3] != "None assigned") state.node = fields[3];
    for (size_t task : tasks) states[{job, task}] = state;
  }
  return states;
}

SlurmTaskStates parse_scontrol_tasks(const std::string& text) {
  SlurmTaskStates states;
  for (const std::string& line : split(text, '\n')) {
    std::map<std::string, std::string> fields;
    for (const std::string& token : split(line, ' ')) {
      const size_t equals = token.find('=');
      if (equals == std::string::npos) continue;
      fields.emplace(token.substr(0, equals), token.substr(equals + 1));  // the first of a repeated key
    }
    if (!fields.count("ArrayJobId") || !fields.count("ArrayTaskId") || !fields.count("JobState")) continue;
    std::string job;
    std::vector<size_t> tasks;
    if (!split_array_id(fields["ArrayJobId"] + "_" + fields["ArrayTaskId"], job, tasks)) continue;
    SlurmTaskState state;
    state.state = fields["JobState"];
    state.exit_code = fields["ExitCode"];
    if (fields["NodeList"] != "(null)") state.node = fields["NodeList"];
    if (fields["Reason"] != "None") {
      state.reason = fields["Reason"];  // scontrol writes the reason's spaces as '_'
      for (char& c : state.reason) c = c == '_' ? ' ' : c;
    }
    for (size_t task : tasks) states[{job, task}] = state;
  }
  return states;
}

SlurmPhase slurm_phase(const std::string& state) {
  for (const char* waiting : {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING",
                              "SUSPENDED", "STOPPED", "RESV_DEL_HOLD", "SPECIAL_EXIT"})
    if (state == waiting) return SlurmPhase::Waiting;
  for (const char* running : {"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING", "POWER_UP_NODE", "UPDATE_DB"})
    if (state == running) return SlurmPhase::Running;
  return SlurmPhase::Ended;  // COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, ...
}

SlurmQuery query_array_tasks(const std::vector<std::string>& job_ids) {
  SlurmQuery query;
  if (job_ids.empty()) return query;
  std::string list;
  for (const std::string& id : job_ids) list += (list.empty() ? "" : ",") + id;
  const ProcessOutput sacct =
      run_program({"sacct", "-n", "-P", "-X", "-j", list, "--format=JobID,State,ExitCode,NodeList"});
  if (sacct.started && sacct.exit_code == 0) {
    query.source = "sacct";
    query.tasks = parse_sacct_tasks(sacct.out);
    return query;
  }
  const std::string sacct_problem = sacct.started ? last_lines(sacct.err + sacct.out, 1) : sacct.err;
  for (const std::string& id : job_ids) {
    const ProcessOutput scontrol = run_program({"scontrol", "-o", "show", "job", id});
    if (!scontrol.started) {
      query.problem = "sacct: " + sacct_problem + "; " + scontrol.err;
      query.tasks.clear();
      return query;
    }
    // A job the controller no longer knows is not an error here: its tasks simply have no state.
    if (scontrol.exit_code != 0 && scontrol.err.find("Invalid job id") == std::string::npos) {
      query.problem = "sacct: " + sacct_problem + "; scontrol: " + last_lines(scontrol.err + scontrol.out, 1);
      query.tasks.clear();
      return query;
    }
    for (auto& [task, state] : parse_scontrol_tasks(scontrol.out)) query.tasks[task] = state;
  }
  query.source = "scontrol";
  return query;
}

}  // namespace decodelab
