// POSIX implementation of MappedFile: open, fstat, mmap(PROT_READ, MAP_PRIVATE), close.
// The descriptor is closed right after mapping; the mapping keeps the pages reachable.
#include "engine/checkpoint/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "engine/base/errors.h"

namespace decodelab {

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO (or a device) must not wait for a writer; fstat refuses it next.
  const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (descriptor < 0) throw InputError(path.string(), 0, "", std::string("cannot open: ") + std::strerror(errno));
  struct stat status {};
  if (::fstat(descriptor, &status) != 0) {
    const int error = errno;
    ::close(descriptor);
    throw InputError(path.string(), 0, "", std::string("cannot stat: ") + std::strerror(error));
  }
  if (!S_ISREG(status.st_mode)) {
    ::close(descriptor);
    throw InputError(path.string(), 0, "", "not a regular file");
  }
  size_ = static_cast<size_t>(status.st_size);
  if (size_ > 0) {
    void* mapping = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, descriptor, 0);
    if (mapping == MAP_FAILED) {
      const int error = errno;
      ::close(descriptor);
      throw InputError(path.string(), 0, "", std::string("cannot memory-map: ") + std::strerror(error));
    }
    data_ = static_cast<const uint8_t*>(mapping);
  }
  ::close(descriptor);
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::unmap() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace decodelab
