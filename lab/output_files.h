// Output files written all-or-nothing: each is first written to a temporary file in the
// destination's own folder (so the final rename stays on one filesystem and is atomic),
// and only commit() renames them into place. Destroying an uncommitted set removes the
// temporaries, so a failed run leaves no output behind, not even a partial one.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace decodelab {

// Fails early (InputError naming the option) when `path` cannot be written: its folder
// is missing or it names a directory. Call before the long work starts.
void check_output_path(const std::filesystem::path& path, const std::string& option);
// The same for a directory of outputs (--report): it may exist (as a directory) or be
// created, so the first existing folder above it must be writable.
void check_output_directory(const std::filesystem::path& path, const std::string& option);

class StagedOutputs {
 public:
  StagedOutputs() = default;
  StagedOutputs(const StagedOutputs&) = delete;
  StagedOutputs& operator=(const StagedOutputs&) = delete;
  ~StagedOutputs();

  // Writes `contents` to a temporary next to `path` (throws std::runtime_error on I/O failure).
  void stage(const std::filesystem::path& path, std::string_view contents);
  // Renames every staged file into place.
  void commit();

 private:
  struct Staged {
    std::filesystem::path temporary;
    std::filesystem::path destination;
  };
  std::vector<Staged> staged_;
};

// One file at a time: save_file_atomically (profiling/atomic_file.h).

}  // namespace decodelab
