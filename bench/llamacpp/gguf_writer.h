// A GGUF (version 3) file writer, written from the format's public description: a header
// (magic, version, tensor and key-value counts), typed metadata key-values, one info
// record per tensor (name, dims innermost first, element type, data offset), then the
// tensor data, each tensor aligned to `general.alignment` (32 bytes). It writes only what
// a Llama model in F32/F16/BF16 needs. The one non-obvious choice: tensor bytes are
// produced on demand while the file is written, so a model is never held twice in memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "engine/base/dtype.h"

namespace decodelab::bench {

class GgufWriter {
 public:
  // Fills `destination` (resized by the writer to the tensor's bytes) with its data.
  using TensorBytes = std::function<void(std::vector<uint8_t>& destination)>;

  void add_string(const std::string& key, const std::string& value);
  void add_u32(const std::string& key, uint32_t value);
  void add_f32(const std::string& key, float value);
  void add_bool(const std::string& key, bool value);
  void add_strings(const std::string& key, const std::vector<std::string>& values);
  void add_f32s(const std::string& key, const std::vector<float>& values);
  void add_i32s(const std::string& key, const std::vector<int32_t>& values);

  // `shape` row-major as the engine writes it ([out, in] for a Linear weight); GGUF stores
  // the dims innermost first. dtype: F32, F16 or BF16.
  void add_tensor(const std::string& name, const std::vector<int64_t>& shape, DType dtype, TensorBytes bytes);

  // Writes the file (replacing any); throws std::runtime_error when it cannot.
  void write(const std::filesystem::path& path) const;

 private:
  struct TensorEntry {
    std::string name;
    std::vector<int64_t> shape;
    DType dtype;
    uint64_t bytes;
    TensorBytes fill;
  };
  std::vector<uint8_t> metadata_;  // the key-value records, encoded
  uint64_t metadata_count_ = 0;
  std::vector<TensorEntry> tensors_;
  void key(const std::string& name, uint32_t type);
};

}  // namespace decodelab::bench
