// Temp-file-and-rename writes. The temporary name carries the process id so that two
// processes writing the same report never share a temporary file.
#include "profiling/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace decodelab {

void save_file_atomically(const std::filesystem::path& file, std::string_view contents) {
  std::error_code error;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), error);
  if (error) throw std::runtime_error("cannot create directory " + file.parent_path().string() + ": " + error.message());
  const std::filesystem::path temporary = file.string() + ".tmp-" + std::to_string(::getpid());
  std::FILE* stream = std::fopen(temporary.c_str(), "wb");
  if (!stream) throw std::runtime_error("cannot write " + temporary.string() + ": " + std::strerror(errno));
  const bool written = std::fwrite(contents.data(), 1, contents.size(), stream) == contents.size();
  const bool flushed = std::fflush(stream) == 0 && ::fsync(::fileno(stream)) == 0;
  const bool closed = std::fclose(stream) == 0;
  if (!written || !flushed || !closed) {
    std::filesystem::remove(temporary, error);
    throw std::runtime_error("cannot write " + file.string() + ": " + std::strerror(errno));
  }
  std::filesystem::rename(temporary, file, error);
  if (error) {
    const std::string reason = error.message();
    std::filesystem::remove(temporary, error);
    throw std::runtime_error("cannot rename into " + file.string() + ": " + reason);
  }
}

}  // namespace decodelab
