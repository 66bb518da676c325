// Test support: writes safetensors files and Hugging Face checkpoint directories
// (config.json + model.safetensors, or two shards + index) from a ModelConfig and seeded
// values, and writes them broken on purpose for the error tests. A file is first built
// as a SafetensorsImage (header JSON + data bytes) so that a test can damage any part of
// it before it is written; the values a test later compares against are the stored
// ones, already rounded to the file's dtype.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/dtype.h"
#include "engine/model/model_config.h"

namespace decodelab::testing {

// One tensor as a test knows it: values exactly as stored (rounded to `dtype`).
struct HostTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<float> values;

  int64_t numel() const;
};

// A tensor of seeded uniform values in [center - half_width, center + half_width), rounded to dtype.
HostTensor seeded_tensor(std::string name, DType dtype, std::vector<int64_t> shape, uint64_t seed, float half_width,
                         float center = 0.0f);

// A safetensors file before it is written.
struct SafetensorsImage {
  nlohmann::json header;                           // tensor entries and "__metadata__"
  std::vector<uint8_t> data;                       // every tensor's bytes, in order
  std::optional<uint64_t> header_length_override;  // written instead of the true length
  std::optional<size_t> data_bytes_kept;           // truncate the data to this many bytes

  std::string header_text() const;  // JSON padded with spaces to a multiple of 8 bytes
  void write(const std::filesystem::path& path) const;
};

SafetensorsImage make_safetensors_image(const std::vector<HostTensor>& tensors,
                                        const std::map<std::string, std::string>& metadata = {{"format", "pt"}});
void write_safetensors(const std::filesystem::path& path, const std::vector<HostTensor>& tensors);

// Ways to break a checkpoint; `target` names the tensor concerned.
enum class Defect {
  None,
  Truncated,                 // the data ends half-way through the last tensor
  HeaderLengthBeyondFile,    // the length field claims more bytes than the file has
  OverlappingOffsets,        // target's range slides one element back into its predecessor
  ShapeMismatchesBytes,      // target's shape gains a trailing dim of 2; offsets unchanged
  UnsupportedDtype,          // target's dtype becomes I32/I16 (same width, unsupported)
  MissingTensor,             // target left out of the header (its bytes become a hole)
  ShapeDisagreesWithConfig,  // a valid file whose target has one row more than config.json implies
};

// Applies a file-level defect (every Defect but ShapeDisagreesWithConfig) to an image.
void apply_defect(SafetensorsImage& image, Defect defect, const std::string& target);

// The HF tensors of a Llama model, in checkpoint order, with seeded values: embeddings
// and projections scaled as in engine/model/weights.cpp, norm weights near (not at) 1 so a
// lost norm weight shows in the logits.
std::vector<HostTensor> llama_tensors(const ModelConfig& config, DType dtype, uint64_t seed,
                                      bool lm_head_when_tied = false);

// config.json for a ModelConfig, every field explicit (as transformers writes it).
nlohmann::json hf_config_json(const ModelConfig& config, DType dtype);
void write_json(const std::filesystem::path& path, const nlohmann::json& value);

struct CheckpointOptions {
  DType dtype = DType::F32;  // storage dtype of the safetensors file(s)
  uint64_t seed = 1;
  int shards = 1;                  // 1: model.safetensors; 2: two shards + index
  bool lm_head_when_tied = false;  // some tied checkpoints carry lm_head.weight anyway
  bool extra_tensors = false;      // rotary_emb.inv_freq buffers, as older checkpoints have
  Defect defect = Defect::None;
  std::string defect_target = "";  // tensor the defect concerns
};

// Writes config.json and the safetensors file(s) into `directory` (created); returns the
// tensors written, in the dtype stored.
std::vector<HostTensor> write_checkpoint(const std::filesystem::path& directory, const ModelConfig& config,
                                         const CheckpointOptions& options);

// An empty directory under the system temp dir, removed with everything in it on scope exit.
class ScratchDirectory {
 public:
  explicit ScratchDirectory(const std::string& label);
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  ~ScratchDirectory();
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace decodelab::testing
