// GGUF v3 encoding (see gguf_writer.h): little-endian integers, strings as a u64 length
// and their bytes, arrays as element type, u64 count and the elements.
#include "bench/llamacpp/gguf_writer.h"

#include <cstring>
#include <fstream>
#include <stdexcept>

namespace decodelab::bench {

namespace {

constexpr uint32_t kVersion = 3;
constexpr uint64_t kAlignment = 32;  // GGUF's default general.alignment

// Metadata value types.
enum : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9 };

// ggml element types of the tensors written here.
uint32_t ggml_type(DType dtype) {
  switch (dtype) {
    case DType::F32: return 0;
    case DType::F16: return 1;
    case DType::BF16: return 30;
    default: throw std::invalid_argument("GGUF: no ggml type for this dtype");
  }
}

template <typename T>
void put(std::vector<uint8_t>& out, T value) {
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // the writer runs on little-endian hosts (x86-64, aarch64)
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

void put_string(std::vector<uint8_t>& out, const std::string& text) {
  put<uint64_t>(out, text.size());
  out.insert(out.end(), text.begin(), text.end());
}

uint64_t aligned(uint64_t offset) { return (offset + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

void GgufWriter::key(const std::string& name, uint32_t type) {
  put_string(metadata_, name);
  put<uint32_t>(metadata_, type);
  ++metadata_count_;
}

void GgufWriter::add_string(const std::string& name, const std::string& value) {
  key(name, kString);
  put_string(metadata_, value);
}

void GgufWriter::add_u32(const std::string& name, uint32_t value) {
  key(name, kU32);
  put<uint32_t>(metadata_, value);
}

void GgufWriter::add_f32(const std::string& name, float value) {
  key(name, kF32);
  put<float>(metadata_, value);
}

void GgufWriter::add_bool(const std::string& name, bool value) {
  key(name, kBool);
  put<uint8_t>(metadata_, value ? 1 : 0);
}

void GgufWriter::add_strings(const std::string& name, const std::vector<std::string>& values) {
  key(name, kArray);
  put<uint32_t>(metadata_, kString);
  put<uint64_t>(metadata_, values.size());
  for (const std::string& value : values) put_string(metadata_, value);
}

void GgufWriter::add_f32s(const std::string& name, const std::vector<float>& values) {
  key(name, kArray);
  put<uint32_t>(metadata_, kF32);
  put<uint64_t>(metadata_, values.size());
  for (float value : values) put<float>(metadata_, value);
}

void GgufWriter::add_i32s(const std::string& name, const std::vector<int32_t>& values) {
  key(name, kArray);
  put<uint32_t>(metadata_, kI32);
  put<uint64_t>(metadata_, values.size());
  for (int32_t value : values) put<int32_t>(metadata_, value);
}

void GgufWriter::add_tensor(const std::string& name, const std::vector<int64_t>& shape, DType dtype, TensorBytes bytes) {
  uint64_t count = 1;
  for (int64_t dim : shape) count *= static_cast<uint64_t>(dim);
  ggml_type(dtype);  // refuses unsupported dtypes now rather than mid-write
  tensors_.push_back({name, shape, dtype, count * dtype_size(dtype), std::move(bytes)});
}

void GgufWriter::write(const std::filesystem::path& path) const {
  std::vector<uint8_t> head;
  put<uint32_t>(head, 0x46554747u);  // "GGUF" in file order
  put<uint32_t>(head, kVersion);
  put<uint64_t>(head, tensors_.size());
  put<uint64_t>(head, metadata_count_);
  head.insert(head.end(), metadata_.begin(), metadata_.end());
  uint64_t offset = 0;
  for (const TensorEntry& tensor : tensors_) {
    put_string(head, tensor.name);
    put<uint32_t>(head, static_cast<uint32_t>(tensor.shape.size()));
    for (auto dim = tensor.shape.rbegin(); dim != tensor.shape.rend(); ++dim) put<uint64_t>(head, *dim);
    put<uint32_t>(head, ggml_type(tensor.dtype));
    put<uint64_t>(head, offset);
    offset = aligned(offset + tensor.bytes);
  }
  head.resize(aligned(head.size()), 0);

  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  if (!stream) throw std::runtime_error("cannot write " + path.string());
  stream.write(reinterpret_cast<const char*>(head.data()), static_cast<std::streamsize>(head.size()));
  std::vector<uint8_t> data;
  for (const TensorEntry& tensor : tensors_) {
    tensor.fill(data);
    if (data.size() != tensor.bytes) throw std::logic_error("GGUF: tensor " + tensor.name + " filled the wrong size");
    data.resize(aligned(data.size()), 0);
    stream.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  }
  if (!stream.flush()) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace decodelab::bench
