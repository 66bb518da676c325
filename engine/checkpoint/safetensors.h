// A safetensors file, memory-mapped and validated strictly before any tensor is used:
// 8-byte little-endian header length N, N bytes of JSON, then the data. Every problem is
// an InputError naming the file and the tensor (or "header"). Tensor data stays inside
// the mapping, which promises no alignment, so elements are read with memcpy-sized loads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/dtype.h"
#include "engine/checkpoint/mapped_file.h"

namespace decodelab {

// "F32" | "F16" | "BF16" (the only element types decodelab reads).
std::optional<DType> parse_safetensors_dtype(std::string_view name);
const char* safetensors_dtype_name(DType dtype);

struct SafetensorsTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // inside the mapping; any alignment
  size_t bytes = 0;

  int64_t numel() const;
  std::string shape_string() const;  // "[4,8]"
  // Converts every element to `destination_dtype` (F32/F16/BF16) into `destination`
  // (numel() elements, aligned), rounding to nearest even; parallel over elements.
  void convert_to(DType destination_dtype, void* destination) const;
};

// What a safetensors image holds, validated; tensor data points into the image.
struct SafetensorsContents {
  std::map<std::string, SafetensorsTensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Validates a whole safetensors image in memory (`size` bytes from `data`); problems are
// InputErrors naming `file_name` and the tensor or "header".
SafetensorsContents parse_safetensors(const uint8_t* data, size_t size, const std::string& file_name);

class SafetensorsFile {
 public:
  // Maps and validates the file; throws InputError on any malformed part.
  explicit SafetensorsFile(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return file_.path(); }
  const std::map<std::string, SafetensorsTensor>& tensors() const { return contents_.tensors; }
  const SafetensorsTensor* find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return contents_.metadata; }

 private:
  MappedFile file_;
  SafetensorsContents contents_;
};

}  // namespace decodelab
