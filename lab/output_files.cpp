// Staged output files: temporary name ".<name>.tmp-<pid>-<n>" next to the destination,
// flushed and closed before rename so a reader never sees a half-written file.
#include "lab/output_files.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <system_error>

#include "engine/base/errors.h"

namespace decodelab {

namespace fs = std::filesystem;

void check_output_path(const fs::path& path, const std::string& option) {
  std::error_code error;
  if (path.empty()) throw InputError(option, 0, "", "expected a file name");
  if (fs::is_directory(path, error)) throw InputError(path.string(), 0, option, "is a directory, expected a file name");
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!fs::is_directory(folder, error)) {
    throw InputError(path.string(), 0, option, "its folder " + folder.string() + " does not exist");
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    throw InputError(path.string(), 0, option, "its folder " + folder.string() + " is not writable");
  }
}

void check_output_directory(const fs::path& path, const std::string& option) {
  std::error_code error;
  if (path.empty()) throw InputError(option, 0, "", "expected a directory name");
  if (fs::exists(path, error) && !fs::is_directory(path, error))
    throw InputError(path.string(), 0, option, "exists and is not a directory");
  fs::path folder = fs::absolute(path, error);
  while (!folder.empty() && !fs::exists(folder, error) && folder != folder.parent_path()) folder = folder.parent_path();
  if (!fs::is_directory(folder, error)) {
    throw InputError(path.string(), 0, option, "cannot be created: " + folder.string() + " is not a directory");
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    throw InputError(path.string(), 0, option, "cannot be written: " + folder.string() + " is not writable");
  }
}

StagedOutputs::~StagedOutputs() {
  for (const Staged& file : staged_) {
    std::error_code ignored;
    fs::remove(file.temporary, ignored);
  }
}

void StagedOutputs::stage(const fs::path& path, std::string_view contents) {
  static std::atomic<int> counter{0};
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::string name = ".";  // appended piecewise: GCC 12 misreports "literal" + string (-Wrestrict)
  name += path.filename().string();
  name += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const fs::path temporary = folder / name;
  std::FILE* out = std::fopen(temporary.c_str(), "wb");
  if (!out) throw std::runtime_error("cannot create " + temporary.string());
  staged_.push_back({temporary, path});  // registered first, so a failed write is cleaned up
  const bool written = std::fwrite(contents.data(), 1, contents.size(), out) == contents.size();
  const bool flushed = std::fflush(out) == 0 && ::fsync(::fileno(out)) == 0;
  const bool closed = std::fclose(out) == 0;
  if (!written || !flushed || !closed) throw std::runtime_error("cannot write " + temporary.string());
}

void StagedOutputs::commit() {
  for (const Staged& file : staged_) {
    std::error_code error;
    fs::rename(file.temporary, file.destination, error);
    if (error)
      throw std::runtime_error("cannot move " + file.temporary.string() + " to " + file.destination.string() + ": " +
                               error.message());
  }
  staged_.clear();
}

}  // namespace decodelab
