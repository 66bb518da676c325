// NumPy .npy (format version 1.0) for float32 matrices: what --dump-logits writes, and
// a reader for the same subset ('<f4', C order, rank 1 or 2) to compare logits later.
// The header is padded so that the data starts on a 64-byte boundary, as numpy does.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace decodelab {

struct NpyMatrix {
  std::vector<int64_t> shape;  // (rows, cols) or (count,)
  std::vector<float> values;   // row-major
};

// The complete file contents: magic, version, header dict, data.
std::string npy_bytes(const float* values, const std::vector<int64_t>& shape);
// Parses a .npy image; throws InputError (naming `file`) for anything outside the subset.
NpyMatrix parse_npy(const std::string& bytes, const std::string& file = "<npy>");
NpyMatrix read_npy(const std::filesystem::path& file);

}  // namespace decodelab
