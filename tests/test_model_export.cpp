// The weights export of the llama.cpp comparison (bench/llamacpp/): the Hugging Face
// checkpoint loads back bit for bit, the GGUF file holds the header, metadata and tensors
// the format describes (read back here by an independent little parser), q/k rows are
// permuted as llama.cpp's converter does, and the synthetic vocabulary round-trips.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <map>

#include "bench/llamacpp/model_export.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/base/errors.h"
#include "engine/checkpoint/hf_checkpoint.h"
#include "tests/support/engine_fixtures.h"
#include "tests/support/safetensors_writer.h"

using namespace decodelab;
using namespace decodelab::bench;

namespace {

std::vector<uint8_t> device_bytes(Backend& backend, const Tensor& tensor) {
  std::vector<uint8_t> bytes(tensor.bytes());
  backend.copy_to_host(bytes.data(), tensor.data, bytes.size(), true, 0);
  return bytes;
}

// A minimal GGUF reader for the test: what the writer must have produced.
struct GgufTensorInfo {
  std::vector<uint64_t> dims;  // innermost first
  uint32_t type = 0;
  uint64_t offset = 0;
};
struct GgufFile {
  uint32_t version = 0;
  std::map<std::string, uint32_t> u32;
  std::map<std::string, std::string> strings;
  std::map<std::string, uint64_t> array_lengths;
  std::map<std::string, GgufTensorInfo> tensors;
  std::vector<uint8_t> bytes;
  uint64_t data_start = 0;
};

GgufFile read_gguf(const std::filesystem::path& path) {
  GgufFile file;
  std::ifstream stream(path, std::ios::binary);
  file.bytes.assign(std::istreambuf_iterator<char>(stream), {});
  size_t at = 0;
  auto take = [&](auto& value) {
    REQUIRE(at + sizeof(value) <= file.bytes.size());
    std::memcpy(&value, file.bytes.data() + at, sizeof(value));
    at += sizeof(value);
  };
  auto string = [&] {
    uint64_t length = 0;
    take(length);
    std::string text(reinterpret_cast<const char*>(file.bytes.data() + at), length);
    at += length;
    return text;
  };
  uint32_t magic = 0;
  take(magic);
  REQUIRE(std::memcmp(file.bytes.data(), "GGUF", 4) == 0);
  take(file.version);
  uint64_t tensor_count = 0, kv_count = 0;
  take(tensor_count);
  take(kv_count);
  for (uint64_t i = 0; i < kv_count; ++i) {
    const std::string key = string();
    uint32_t type = 0;
    take(type);
    auto skip_value = [&](uint32_t value_type) {
      switch (value_type) {
        case 4: case 5: case 6: at += 4; break;
        case 7: at += 1; break;
        case 8: string(); break;
        default: FAIL("unexpected GGUF value type " << value_type);
      }
    };
    if (type == 4) {
      take(file.u32[key]);
    } else if (type == 8) {
      file.strings[key] = string();
    } else if (type == 9) {
      uint32_t element = 0;
      uint64_t count = 0;
      take(element);
      take(count);
      file.array_lengths[key] = count;
      for (uint64_t e = 0; e < count; ++e) skip_value(element);
    } else {
      skip_value(type);
    }
  }
  for (uint64_t i = 0; i < tensor_count; ++i) {
    const std::string name = string();
    GgufTensorInfo info;
    uint32_t dims = 0;
    take(dims);
    info.dims.resize(dims);
    for (uint64_t& dim : info.dims) take(dim);
    take(info.type);
    take(info.offset);
    file.tensors[name] = info;
  }
  file.data_start = (at + 31) / 32 * 32;
  return file;
}

}  // namespace

TEST_CASE("rope_row_order interleaves each head's halves as llama.cpp's converter does", "[export]") {
  // head_dim 4: GGUF rows (0,1,2,3) come from HF rows (0,2,1,3) in every head.
  CHECK(rope_row_order(8, 4) == std::vector<int64_t>{0, 2, 1, 3, 4, 6, 5, 7});
  const std::vector<int64_t> order = rope_row_order(128, 64);
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 128; ++i) CHECK(sorted[static_cast<size_t>(i)] == i);  // a permutation
  CHECK(order[1] == 32);  // the pair of row 0 is the first row of the second half
}

TEST_CASE("the synthetic vocabulary maps ids to one character each and back", "[export]") {
  const std::vector<int32_t> ids = {0, 1, 2, 127, 128, 31999};
  const std::string text = tokens_text(ids);
  CHECK(text.size() == 3 * ids.size());  // U+4E00.. are three UTF-8 bytes each
  int unknown = -1;
  CHECK(text_tokens(text + "\n", 32000, &unknown) == ids);
  CHECK(unknown == 0);
  std::string with_ascii = "a";
  with_ascii += token_text(5);
  CHECK(text_tokens(with_ascii, 32000, &unknown) == std::vector<int32_t>{5});
  CHECK(unknown == 1);
  CHECK(text_tokens(token_text(40), 32, &unknown).empty());  // outside a 32-token vocabulary
}

TEST_CASE("exported weights load back bitwise and the GGUF holds every tensor", "[export]") {
  const ModelConfig config = testing::lab_tiny_config();  // head_dim 32, 2 KV heads
  auto backend = make_cpu_backend(BackendOptions{});
  testing::ScratchDirectory directory("export");
  for (DType dtype : {DType::F16, DType::F32}) {
    ModelWeights weights = random_weights(*backend, config, dtype, 3);
    write_hf_checkpoint(directory / "hf", config, weights, *backend);
    write_gguf(directory / "model.gguf", config, weights, *backend);

    ModelWeights loaded = load_hf_weights(*backend, directory / "hf", config, dtype);
    std::vector<std::pair<std::string, Tensor>> original, reloaded;
    weights.for_each(config, [&](const std::string& name, const Tensor& tensor) { original.emplace_back(name, tensor); });
    loaded.for_each(config, [&](const std::string& name, const Tensor& tensor) { reloaded.emplace_back(name, tensor); });
    REQUIRE(original.size() == reloaded.size());
    for (size_t i = 0; i < original.size(); ++i) {
      INFO(original[i].first);
      CHECK(device_bytes(*backend, original[i].second) == device_bytes(*backend, reloaded[i].second));
    }

    const GgufFile gguf = read_gguf(directory / "model.gguf");
    CHECK(gguf.version == 3);
    CHECK(gguf.strings.at("general.architecture") == "llama");
    CHECK(gguf.u32.at("llama.block_count") == 2);
    CHECK(gguf.u32.at("llama.attention.head_count_kv") == 2);
    CHECK(gguf.u32.at("llama.feed_forward_length") == 352);
    CHECK(gguf.array_lengths.at("tokenizer.ggml.tokens") == 512);
    CHECK(gguf.tensors.size() == 3 + 9 * 2);  // embeddings, final norm, lm_head; nine per layer
    const GgufTensorInfo& q = gguf.tensors.at("blk.1.attn_q.weight");
    CHECK(q.dims == std::vector<uint64_t>{128, 128});
    CHECK(q.type == (dtype == DType::F16 ? 1u : 0u));
    CHECK(gguf.tensors.at("blk.0.attn_k.weight").dims == std::vector<uint64_t>{128, 64});
    CHECK(gguf.tensors.at("blk.0.ffn_gate.weight").dims == std::vector<uint64_t>{128, 352});
    CHECK(gguf.tensors.at("blk.0.attn_norm.weight").type == 0u);  // norms in F32, as llama.cpp's converter
    for (const auto& [name, info] : gguf.tensors) CHECK(info.offset % 32 == 0);

    // q rows permuted within each head (head_dim 32): GGUF row 2j + i is HF row 16i + j.
    const std::vector<uint8_t> hf_q = device_bytes(*backend, weights.layers[1].q_proj);
    const size_t row = 128 * dtype_size(dtype);
    const uint8_t* gguf_q = gguf.bytes.data() + gguf.data_start + q.offset;
    CHECK(std::memcmp(gguf_q + 1 * row, hf_q.data() + 16 * row, row) == 0);
    CHECK(std::memcmp(gguf_q + 0 * row, hf_q.data() + 0 * row, row) == 0);
    CHECK(std::memcmp(gguf_q + 35 * row, hf_q.data() + 49 * row, row) == 0);  // head 1: 32 + (2·1 + 1) from 32 + 16 + 1
    const GgufTensorInfo& v = gguf.tensors.at("blk.1.attn_v.weight");
    const std::vector<uint8_t> hf_v = device_bytes(*backend, weights.layers[1].v_proj);
    CHECK(std::memcmp(gguf.bytes.data() + gguf.data_start + v.offset, hf_v.data(), hf_v.size()) == 0);  // unpermuted
  }
}

TEST_CASE("GGUF export refuses what llama.cpp would run differently", "[export]") {
  ModelConfig config = testing::lab_tiny_config();
  config.rope_scaling.enabled = true;
  auto backend = make_cpu_backend(BackendOptions{});
  ModelWeights weights = random_weights(*backend, config, DType::F32, 1);
  testing::ScratchDirectory directory("export-refused");
  CHECK_THROWS_AS(write_gguf(directory / "model.gguf", config, weights, *backend), InputError);
}
