// Row-by-row results files (see results_file.h). The file is only ever replaced by
// rename, so a reader (or a resumed command) sees the previous complete state or the next.
#include "lab/run/results_file.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

#include "engine/base/errors.h"
#include "engine/base/json_errors.h"
#include "profiling/atomic_file.h"

namespace decodelab {

namespace fs = std::filesystem;

ResultsFile::ResultsFile(fs::path path, std::string command) : path_(std::move(path)), command_(std::move(command)) {}

size_t ResultsFile::load_existing() {
  std::error_code error;
  if (path_.empty() || !fs::exists(path_, error)) return 0;
  const std::string file = path_.string();
  if (!fs::is_regular_file(path_, error)) throw InputError(file, 0, "--resume", "is not a regular file");
  std::ifstream stream(path_, std::ios::binary);
  std::ostringstream text;
  text << stream.rdbuf();
  if (!stream) throw InputError(file, 0, "--resume", "cannot read the results file");
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& parse_error) {
    throw InputError(file, 0, "--resume", json_parse_problem(parse_error, text.str().size()));
  }
  if (document.is_array()) {
    // A finished run's plain list: its rows say whose they are (lab rows name a bug,
    // sweep rows their swept values).
    const char* identifying_key = command_ == "lab" ? "bug" : "swept";
    for (const nlohmann::json& row : document) {
      if (!row.is_object() || !row.contains(identifying_key)) {
        throw InputError(file, 0, "--resume",
                         "expected the results of `decodelab " + command_ + " --json` (a list of rows with \"" +
                             identifying_key + "\", or {\"command\": \"" + command_ + "\", \"rows\": [...]})");
      }
    }
    document = {{"schema_version", kResultsFileSchemaVersion}, {"command", command_}, {"complete", true},
                {"rows", document}};
  }
  if (!document.is_object() || !document.contains("rows") || !document["rows"].is_array() ||
      document.value("command", "") != command_) {
    throw InputError(file, 0, "--resume",
                     "expected the results of `decodelab " + command_ + " --json` ({\"command\": \"" + command_ +
                         "\", \"rows\": [...]})");
  }
  if (!document["schema_version"].is_number_integer() ||
      document["schema_version"].get<int64_t>() != kResultsFileSchemaVersion) {
    throw InputError(file, 0, "schema_version",
                     "expected " + std::to_string(kResultsFileSchemaVersion) + " (written by another decodelab?)");
  }
  previous_.clear();
  for (const nlohmann::json& row : document["rows"]) {
    if (!row.is_object()) throw InputError(file, 0, "rows", "expected a list of objects");
    previous_.push_back(row);
  }
  taken_.assign(previous_.size(), false);
  return previous_.size();
}

namespace {

bool matches(const nlohmann::json& row, const nlohmann::json& key) {
  for (const auto& [field, value] : key.items()) {
    if (!row.contains(field) || row[field] != value) return false;
  }
  return true;
}

}  // namespace

std::optional<nlohmann::json> ResultsFile::previous(const nlohmann::json& key) const {
  for (const nlohmann::json& row : previous_)
    if (matches(row, key)) return row;
  return std::nullopt;
}

std::optional<nlohmann::json> ResultsFile::take(const nlohmann::json& key) {
  for (size_t i = 0; i < previous_.size(); ++i) {
    if (taken_[i] || !matches(previous_[i], key)) continue;
    taken_[i] = true;
    return previous_[i];
  }
  return std::nullopt;
}

size_t ResultsFile::reused() const { return static_cast<size_t>(std::count(taken_.begin(), taken_.end(), true)); }

size_t ResultsFile::kept() const { return previous_.size() - reused(); }

std::string ResultsFile::resume_note(size_t work) const {
  std::string note = std::to_string(reused()) + " of " + std::to_string(work) + " rows reused from " + path_.string();
  if (kept() > 0) {
    note += "; " + std::to_string(kept()) + (kept() == 1 ? " other row" : " other rows") +
            " in it kept (not part of this selection)";
  }
  return note;
}

void ResultsFile::add(nlohmann::json row) {
  rows_.push_back(std::move(row));
  write(false);
}

void ResultsFile::finish() { write(true); }

nlohmann::json ResultsFile::document(bool complete) const {
  nlohmann::json rows = rows_;
  for (size_t i = 0; i < previous_.size(); ++i)
    if (!taken_[i]) rows.push_back(previous_[i]);
  if (complete) return rows;
  return {{"schema_version", kResultsFileSchemaVersion},
          {"command", command_},
          {"complete", complete},
          {"rows", std::move(rows)}};
}

void ResultsFile::write(bool complete) const {
  if (path_.empty()) return;
  save_file_atomically(path_, document(complete).dump(2) + "\n");
}

}  // namespace decodelab
