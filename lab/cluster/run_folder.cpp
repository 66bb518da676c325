// The run folder's layout and its manifest (see run_folder.h). The manifest is read
// strictly: a folder edited by hand or written by another decodelab is refused with the
// key that is wrong, never half-used.
#include "lab/cluster/run_folder.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <system_error>

#include "engine/base/errors.h"
#include "engine/base/json_errors.h"
#include "profiling/atomic_file.h"

namespace decodelab {

namespace fs = std::filesystem;

namespace {

std::string point_file_name(size_t point) {
  char name[32];
  std::snprintf(name, sizeof name, "%05zu.json", point);
  return name;
}

// Typed, located access to the manifest's fields.
class ManifestReader {
 public:
  explicit ManifestReader(std::string file) : file_(std::move(file)) {}

  const nlohmann::json& field(const nlohmann::json& object, const std::string& path, const char* key,
                              nlohmann::json::value_t type) const {
    const std::string where = path.empty() ? key : path + "." + key;
    if (!object.is_object() || !object.contains(key)) fail(where, "missing");
    const nlohmann::json& value = object[key];
    const bool matches = value.type() == type || (type == nlohmann::json::value_t::number_unsigned &&
                                                  value.is_number_integer() && value.get<int64_t>() >= 0);
    if (!matches) fail(where, std::string("expected ") + type_name(type) + ", got " + value.type_name());
    return value;
  }
  std::string text(const nlohmann::json& object, const std::string& path, const char* key) const {
    return field(object, path, key, nlohmann::json::value_t::string).get<std::string>();
  }
  int64_t count(const nlohmann::json& object, const std::string& path, const char* key) const {
    return field(object, path, key, nlohmann::json::value_t::number_unsigned).get<int64_t>();
  }
  bool flag(const nlohmann::json& object, const std::string& path, const char* key) const {
    return field(object, path, key, nlohmann::json::value_t::boolean).get<bool>();
  }
  std::vector<std::string> texts(const nlohmann::json& object, const std::string& path, const char* key) const {
    std::vector<std::string> values;
    for (const nlohmann::json& value : field(object, path, key, nlohmann::json::value_t::array)) {
      if (!value.is_string()) fail(path + "." + key, "expected a list of strings");
      values.push_back(value.get<std::string>());
    }
    return values;
  }
  const nlohmann::json& list(const nlohmann::json& object, const std::string& path, const char* key) const {
    return field(object, path, key, nlohmann::json::value_t::array);
  }
  const nlohmann::json& object(const nlohmann::json& object, const std::string& path, const char* key) const {
    return field(object, path, key, nlohmann::json::value_t::object);
  }
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw InputError(file_, 0, key, problem);
  }

 private:
  static const char* type_name(nlohmann::json::value_t type) {
    switch (type) {
      case nlohmann::json::value_t::string:
        return "a string";
      case nlohmann::json::value_t::boolean:
        return "true or false";
      case nlohmann::json::value_t::array:
        return "a list";
      case nlohmann::json::value_t::object:
        return "an object";
      default:
        return "a non-negative integer";
    }
  }
  std::string file_;
};

}  // namespace

const RunSet* RunManifest::find_set(const std::string& name) const {
  for (const RunSet& set : sets)
    if (set.name == name) return &set;
  return nullptr;
}

const RunSubmission* RunManifest::latest_submission(const std::string& set, size_t point) const {
  for (auto submission = submissions.rbegin(); submission != submissions.rend(); ++submission) {
    if (submission->set == set &&
        std::find(submission->points.begin(), submission->points.end(), point) != submission->points.end())
      return &*submission;
  }
  return nullptr;
}

nlohmann::json manifest_json(const RunManifest& manifest) {
  nlohmann::json sets = nlohmann::json::array();
  for (const RunSet& set : manifest.sets) sets.push_back({{"name", set.name}, {"partition", set.partition}});
  nlohmann::json points = nlohmann::json::array();
  for (const RunPoint& point : manifest.points) {
    nlohmann::json swept = nlohmann::json::array();
    for (const auto& [key, value] : point.swept) swept.push_back({key, value});
    points.push_back(
        {{"label", point.label}, {"file", point.file}, {"swept", swept}, {"scenario", point.scenario_yaml}});
  }
  nlohmann::json submissions = nlohmann::json::array();
  for (const RunSubmission& submission : manifest.submissions) {
    submissions.push_back({{"set", submission.set},
                           {"job_id", submission.job_id},
                           {"offset", submission.offset},
                           {"points", index_ranges(submission.points)},
                           {"submitted_at", submission.submitted_at},
                           {"sbatch", submission.sbatch_command}});
  }
  const SlurmSettings& slurm = manifest.slurm;
  return {{"schema_version", kRunFolderSchemaVersion},
          {"kind", "decodelab run folder"},
          {"command", manifest.command},
          {"decodelab_version", manifest.decodelab_version},
          {"created_at", manifest.created_at},
          {"working_directory", manifest.working_directory},
          {"submitted_with", manifest.submitted_with},
          {"overrides", manifest.overrides},
          {"settings",
           {{"backend", manifest.settings.backend},
            {"threads", manifest.settings.threads},
            {"check_numerics", manifest.settings.check_numerics}}},
          {"slurm",
           {{"job_name", slurm.job_name},
            {"gres", slurm.gres},
            {"time", slurm.time_limit},
            {"throttle", slurm.throttle},
            {"cpus_per_task", slurm.cpus_per_task},
            {"sbatch_options", slurm.extra_options}}},
          {"sets", sets},
          {"points", points},
          {"submissions", submissions}};
}

RunManifest manifest_from_json(const nlohmann::json& json, const std::string& file) {
  const ManifestReader read(file);
  if (!json.is_object() || json.value("kind", "") != "decodelab run folder")
    read.fail("kind", "expected \"decodelab run folder\" (is this a run folder of `decodelab sweep/lab --slurm`?)");
  if (read.count(json, "", "schema_version") != kRunFolderSchemaVersion)
    read.fail("schema_version",
              "expected " + std::to_string(kRunFolderSchemaVersion) + " (written by another decodelab?)");
  RunManifest manifest;
  manifest.command = read.text(json, "", "command");
  if (manifest.command != "sweep" && manifest.command != "lab") read.fail("command", "expected \"sweep\" or \"lab\"");
  manifest.decodelab_version = read.text(json, "", "decodelab_version");
  manifest.created_at = read.text(json, "", "created_at");
  manifest.working_directory = read.text(json, "", "working_directory");
  manifest.submitted_with = read.texts(json, "", "submitted_with");
  manifest.overrides = read.texts(json, "", "overrides");
  const nlohmann::json& settings = read.object(json, "", "settings");
  manifest.settings.backend = read.text(settings, "settings", "backend");
  manifest.settings.threads = static_cast<int>(read.count(settings, "settings", "threads"));
  manifest.settings.check_numerics = read.flag(settings, "settings", "check_numerics");
  const nlohmann::json& slurm = read.object(json, "", "slurm");
  manifest.slurm.job_name = read.text(slurm, "slurm", "job_name");
  manifest.slurm.gres = read.text(slurm, "slurm", "gres");
  manifest.slurm.time_limit = read.text(slurm, "slurm", "time");
  manifest.slurm.throttle = static_cast<int>(read.count(slurm, "slurm", "throttle"));
  manifest.slurm.cpus_per_task = static_cast<int>(read.count(slurm, "slurm", "cpus_per_task"));
  manifest.slurm.extra_options = read.texts(slurm, "slurm", "sbatch_options");
  for (const nlohmann::json& set : read.list(json, "", "sets")) {
    RunSet entry{read.text(set, "sets[]", "name"), read.text(set, "sets[]", "partition")};
    if (!is_safe_set_name(entry.name)) read.fail("sets[].name", "'" + entry.name + "' is not a usable folder name");
    manifest.sets.push_back(std::move(entry));
  }
  if (manifest.sets.empty()) read.fail("sets", "expected at least one row set");
  for (const nlohmann::json& point : read.list(json, "", "points")) {
    RunPoint entry;
    entry.label = read.text(point, "points[]", "label");
    entry.file = read.text(point, "points[]", "file");
    entry.scenario_yaml = read.text(point, "points[]", "scenario");
    for (const nlohmann::json& pair : read.list(point, "points[]", "swept")) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string())
        read.fail("points[].swept", "expected [key, value] pairs of strings");
      entry.swept.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
    }
    manifest.points.push_back(std::move(entry));
  }
  if (manifest.points.empty()) read.fail("points", "expected at least one point");
  for (const nlohmann::json& submission : read.list(json, "", "submissions")) {
    RunSubmission entry;
    entry.set = read.text(submission, "submissions[]", "set");
    if (!manifest.find_set(entry.set)) read.fail("submissions[].set", "'" + entry.set + "' is not one of the sets");
    entry.job_id = read.text(submission, "submissions[]", "job_id");
    entry.offset = static_cast<size_t>(read.count(submission, "submissions[]", "offset"));
    entry.points =
        parse_index_ranges(read.text(submission, "submissions[]", "points"), file + ": submissions[].points");
    for (size_t point : entry.points)
      if (point >= manifest.points.size())
        read.fail("submissions[].points", "point " + std::to_string(point) + " does not exist");
    entry.submitted_at = read.text(submission, "submissions[]", "submitted_at");
    entry.sbatch_command = read.texts(submission, "submissions[]", "sbatch");
    manifest.submissions.push_back(std::move(entry));
  }
  return manifest;
}

RunFolder::RunFolder(fs::path root) : root_(std::move(root)) {}

fs::path RunFolder::row_file(const std::string& set, size_t point) const {
  return root_ / "rows" / set / point_file_name(point);
}

fs::path RunFolder::task_record_file(const std::string& set, size_t point) const {
  return root_ / "tasks" / set / point_file_name(point);
}

fs::path RunFolder::log_file(const std::string& set, const std::string& job_id, size_t task) const {
  return log_directory(set) / (job_id + "_" + std::to_string(task) + ".out");
}

void RunFolder::create_set_directories(const std::string& set) const {
  for (const fs::path& folder : {root_ / "rows" / set, root_ / "tasks" / set, log_directory(set)})
    fs::create_directories(folder);
}

RunManifest RunFolder::read_manifest() const {
  const std::string file = manifest_file().string();
  std::error_code error;
  if (!fs::is_directory(root_, error))
    throw InputError(root_.string(), 0, "", "is not a directory (expected a run folder)");
  if (!fs::is_regular_file(manifest_file(), error))
    throw InputError(root_.string(), 0, "",
                     "holds no manifest.json (expected a run folder of `decodelab sweep/lab --slurm`)");
  std::ifstream stream(manifest_file(), std::ios::binary);
  std::ostringstream text;
  text << stream.rdbuf();
  if (!stream) throw InputError(file, 0, "", "cannot be read");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& parse_error) {
    throw InputError(file, 0, "", json_parse_problem(parse_error, text.str().size()));
  }
  return manifest_from_json(json, file);
}

void RunFolder::write_manifest(const RunManifest& manifest) const {
  save_file_atomically(manifest_file(), manifest_json(manifest).dump(2) + "\n");
}

bool is_safe_set_name(const std::string& name) {
  if (name.empty() || name.size() > 100 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

std::string index_ranges(std::vector<size_t> indices) {
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  std::string text;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(indices[i]);
    if (j > i) {
      text += '-';  // appended piecewise: GCC 12 misreports "literal" + string (-Wrestrict)
      text += std::to_string(indices[j]);
    }
    i = j + 1;
  }
  return text;
}

std::vector<size_t> parse_index_ranges(const std::string& text, const std::string& what) {
  std::string body = text;
  if (body.size() >= 2 && body.front() == '[' && body.back() == ']') body = body.substr(1, body.size() - 2);
  if (const size_t throttle = body.find('%'); throttle != std::string::npos) body.resize(throttle);
  auto number = [&](const std::string& digits) -> size_t {
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
      throw InputError(what, 0, "", "expected index ranges such as 0-3,7, got '" + text + "'");
    return static_cast<size_t>(std::stoul(digits));
  };
  std::vector<size_t> indices;
  std::stringstream parts(body);
  std::string part;
  while (std::getline(parts, part, ',')) {
    size_t step = 1;
    if (const size_t colon = part.find(':'); colon != std::string::npos) {
      step = number(part.substr(colon + 1));
      part.resize(colon);
      if (step == 0) throw InputError(what, 0, "", "a step of 0 in '" + text + "'");
    }
    const size_t dash = part.find('-');
    const size_t first = number(part.substr(0, dash));
    const size_t last = dash == std::string::npos ? first : number(part.substr(dash + 1));
    if (last < first || last - first > 1000000)
      throw InputError(what, 0, "", "expected index ranges such as 0-3,7, got '" + text + "'");
    for (size_t index = first; index <= last; index += step) indices.push_back(index);
  }
  if (indices.empty() && !body.empty()) throw InputError(what, 0, "", "no index in '" + text + "'");
  return indices;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  ::gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

}  // namespace decodelab
