// A results file that grows row by row, for commands that run many scenarios (sweep,
// lab). While work remains it is {"schema_version", "command", "complete": false,
// "rows": [...]}, rewritten atomically after every completed row, so an interrupted,
// killed or crashed command leaves every row it finished and says plainly that the list
// is partial; once everything ran it is the plain list of rows (what `--json` promises).
// --resume reads either form back; a row is reused when it matches the key of the work
// about to run (every key field equal), so a resumed command runs only what is missing,
// and reruns what a changed scenario or --set no longer matches. Loaded rows that this
// command's work does not reuse (another --only, another sweep) are kept, after the
// command's own rows: resuming with a different selection merges, it never drops a row.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace decodelab {

constexpr int kResultsFileSchemaVersion = 1;

class ResultsFile {
 public:
  // `path` may be empty: the rows are then only kept in memory.
  ResultsFile(std::filesystem::path path, std::string command);

  // Loads the rows of an existing results file of the same command (--resume) as
  // candidates for reuse. A missing file is no error (nothing to reuse); anything
  // unreadable is an InputError naming it. Returns how many rows were loaded.
  size_t load_existing();

  // A loaded row whose fields equal every field of `key`, or nullopt.
  std::optional<nlohmann::json> previous(const nlohmann::json& key) const;
  // The same, marked as reused: it is no longer kept apart from the command's own rows.
  std::optional<nlohmann::json> take(const nlohmann::json& key);

  size_t reused() const;  // loaded rows taken
  size_t kept() const;    // loaded rows not (yet) taken: written after the command's rows
  // "3 of 5 rows reused from r.json" (+ "; 2 other rows in it kept"), for --resume.
  std::string resume_note(size_t work) const;

  // Appends a completed row (fresh or reused, in the order of the command's work) and
  // rewrites the file with "complete": false.
  void add(nlohmann::json row);
  // Rewrites the file with "complete": true.
  void finish();

  const std::vector<nlohmann::json>& rows() const { return rows_; }
  const std::filesystem::path& path() const { return path_; }

  // The document as written: the header fields, the command's rows, then the kept ones.
  nlohmann::json document(bool complete) const;

 private:
  void write(bool complete) const;

  std::filesystem::path path_;
  std::string command_;
  std::vector<nlohmann::json> previous_;  // loaded by --resume
  std::vector<bool> taken_;               // per loaded row: reused by this command
  std::vector<nlohmann::json> rows_;      // completed in this command, in work order
};

}  // namespace decodelab
