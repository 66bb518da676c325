// Writing output files so that a reader never sees half a file: write a temporary file
// beside the target, flush it, then rename it over the target (atomic on POSIX).
#pragma once

#include <filesystem>
#include <string_view>

namespace decodelab {

// Creates missing parent directories. Throws std::runtime_error naming the file on failure.
void save_file_atomically(const std::filesystem::path& file, std::string_view contents);

}  // namespace decodelab
