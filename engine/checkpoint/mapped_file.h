// A read-only memory map of a whole file (POSIX mmap), owned RAII-style.
// Checkpoints are mapped rather than read so that a multi-GB shard costs no copy until a
// tensor is converted; an empty file maps to an empty span (mmap refuses length 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace decodelab {

class MappedFile {
 public:
  // Throws InputError(path, ...) when the file cannot be opened or mapped.
  explicit MappedFile(const std::filesystem::path& path);
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void unmap();

  std::filesystem::path path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace decodelab
