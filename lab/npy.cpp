// .npy writer and reader. Only the subset decodelab writes is read back: little-endian
// float32, C order; anything else is refused by name rather than misread.
#include "lab/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/base/errors.h"

namespace decodelab {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kPreludeSize = kMagicSize + 2 + 2;  // magic, version (1.0), u16 header length
constexpr size_t kAlignment = 64;

std::string shape_tuple(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

std::string npy_bytes(const float* values, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_tuple(shape) + ", }";
  // Pad with spaces, then '\n', so that prelude + header is a multiple of 64.
  const size_t unpadded = kPreludeSize + header.size() + 1;
  header.append((kAlignment - unpadded % kAlignment) % kAlignment, ' ');
  header += '\n';

  std::string bytes(kMagic, kMagicSize);
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>((header.size() >> 8) & 0xff);
  bytes += header;
  static_assert(sizeof(float) == 4);
  // x86-64 and AArch64 Linux are little-endian: the floats are already '<f4'.
  bytes.append(reinterpret_cast<const char*>(values), static_cast<size_t>(count) * sizeof(float));
  return bytes;
}

NpyMatrix parse_npy(const std::string& bytes, const std::string& file) {
  auto fail = [&file](const std::string& problem) -> void { throw InputError(file, 0, "", problem); };
  if (bytes.size() < kPreludeSize || bytes.compare(0, kMagicSize, kMagic, kMagicSize) != 0) fail("not a .npy file");
  if (bytes[6] != '\x01' || bytes[7] != '\x00') fail("only .npy format version 1.0 is supported");
  const size_t header_size = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  if (bytes.size() < kPreludeSize + header_size) fail("truncated .npy header");
  const std::string header = bytes.substr(kPreludeSize, header_size);
  if (header.find("'descr': '<f4'") == std::string::npos) fail("expected dtype '<f4'");
  if (header.find("'fortran_order': False") == std::string::npos) fail("expected C order");
  const size_t shape_at = header.find("'shape': (");
  if (shape_at == std::string::npos) fail("header has no shape");

  NpyMatrix matrix;
  std::istringstream dims(header.substr(shape_at + 10, header.find(')', shape_at) - shape_at - 10));
  std::string dim;
  int64_t count = 1;
  while (std::getline(dims, dim, ',')) {
    if (dim.find_first_not_of(' ') == std::string::npos) continue;
    try {
      matrix.shape.push_back(std::stoll(dim));
    } catch (const std::exception&) {
      fail("bad shape entry '" + dim + "'");
    }
    if (matrix.shape.back() < 0) fail("negative dimension in shape");
    count *= matrix.shape.back();
  }
  const size_t data_bytes = static_cast<size_t>(count) * sizeof(float);
  if (bytes.size() != kPreludeSize + header_size + data_bytes) fail("data size does not match the shape");
  matrix.values.resize(static_cast<size_t>(count));
  std::memcpy(matrix.values.data(), bytes.data() + kPreludeSize + header_size, data_bytes);
  return matrix;
}

NpyMatrix read_npy(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string(), 0, "", "cannot open the file");
  std::ostringstream contents;
  contents << in.rdbuf();
  return parse_npy(contents.str(), file.string());
}

}  // namespace decodelab
