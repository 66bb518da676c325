// Parsing and validation of safetensors headers, and element conversion out of the mapping.
// Offsets are checked for overlap after sorting by their begin, so the header's key order
// (JSON objects are unordered) never matters; zero-byte tensors hold nothing to overlap.
#include "engine/checkpoint/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "engine/base/host_parallel.h"
#include "engine/base/errors.h"
#include "engine/base/json_errors.h"

namespace decodelab {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

std::optional<DType> parse_safetensors_dtype(std::string_view name) {
  if (name == "F32") return DType::F32;
  if (name == "F16") return DType::F16;
  if (name == "BF16") return DType::BF16;
  return std::nullopt;
}

const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::I32:
      return "I32";
  }
  return "?";
}

namespace {

std::string offsets_string(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ',';
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

bool is_non_negative_integer(const nlohmann::json& value) {
  return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
}

// The file's element `index` as a float (exact for all three dtypes); `source` may be unaligned.
template <DType From>
float load_unaligned(const uint8_t* source, int64_t index) {
  if constexpr (From == DType::F32) {
    float value;
    std::memcpy(&value, source + index * 4, 4);
    return value;
  } else {
    uint16_t bits;
    std::memcpy(&bits, source + index * 2, 2);
    return From == DType::F16 ? fp16_to_float(bits) : bf16_to_float(bits);
  }
}

template <DType To>
void store(void* destination, int64_t index, float value) {
  if constexpr (To == DType::F32) {
    static_cast<float*>(destination)[index] = value;
  } else if constexpr (To == DType::F16) {
    static_cast<uint16_t*>(destination)[index] = float_to_fp16(value);
  } else {
    static_cast<uint16_t*>(destination)[index] = float_to_bf16(value);
  }
}

// One loop per (from, to) pair, so that no dtype switch runs per element.
template <DType From, DType To>
void convert_elements(const uint8_t* source, void* destination, int64_t count) {
  host_parallel_for(count, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) store<To>(destination, i, load_unaligned<From>(source, i));
  });
}

template <DType From>
void convert_from(const uint8_t* source, DType to, void* destination, int64_t count) {
  switch (to) {
    case DType::F32:
      return convert_elements<From, DType::F32>(source, destination, count);
    case DType::F16:
      return convert_elements<From, DType::F16>(source, destination, count);
    case DType::BF16:
      return convert_elements<From, DType::BF16>(source, destination, count);
    case DType::I32:
      break;
  }
  throw std::invalid_argument("safetensors tensors convert to F32, F16 or BF16 only");
}

struct ParsedOffsets {
  std::string name;
  uint64_t begin = 0;
  uint64_t end = 0;
};

}  // namespace

int64_t SafetensorsTensor::numel() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

std::string SafetensorsTensor::shape_string() const { return shape_text(shape); }

void SafetensorsTensor::convert_to(DType destination_dtype, void* destination) const {
  const int64_t count = numel();
  if (count == 0) return;  // nothing to copy (and `destination` may be null)
  if (destination_dtype == dtype) {
    std::memcpy(destination, data, bytes);
    return;
  }
  const auto* source = static_cast<const uint8_t*>(data);
  switch (dtype) {
    case DType::F32:
      return convert_from<DType::F32>(source, destination_dtype, destination, count);
    case DType::F16:
      return convert_from<DType::F16>(source, destination_dtype, destination, count);
    case DType::BF16:
      return convert_from<DType::BF16>(source, destination_dtype, destination, count);
    case DType::I32:
      break;
  }
  throw std::invalid_argument("safetensors tensors hold F32, F16 or BF16 only");
}

SafetensorsContents parse_safetensors(const uint8_t* data, size_t size, const std::string& file_name) {
  auto fail = [&](const std::string& key, const std::string& problem) -> InputError {
    return InputError(file_name, 0, key, problem);
  };
  SafetensorsContents contents;

  if (size < 8)
    throw fail("header", "file is " + std::to_string(size) + " bytes, too short for the 8-byte little-endian header length");
  uint64_t header_length;
  std::memcpy(&header_length, data, 8);
  const uint64_t after_length = size - 8;
  if (header_length > after_length)
    throw fail("header", "header length " + std::to_string(header_length) + " exceeds the " +
                             std::to_string(after_length) + " bytes that follow the length field");

  const auto* header_begin = reinterpret_cast<const char*>(data + 8);
  nlohmann::json header;
  std::string duplicate_name;
  std::set<std::string> names;
  // JSON objects silently keep the last of two equal keys; a checkpoint must not.
  auto catch_duplicates = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (depth == 1 && event == nlohmann::json::parse_event_t::key && duplicate_name.empty() &&
        !names.insert(parsed.get<std::string>()).second)
      duplicate_name = parsed.get<std::string>();
    return true;
  };
  try {
    header = nlohmann::json::parse(header_begin, header_begin + header_length, catch_duplicates);
  } catch (const nlohmann::json::exception& error) {
    throw fail("header", "is " + json_parse_problem(error, header_length));
  }
  if (!duplicate_name.empty()) throw fail(duplicate_name, "appears twice in the header");
  if (!header.is_object()) throw fail("header", "must be a JSON object of tensor entries");

  const uint8_t* data_begin = data + 8 + header_length;
  const uint64_t data_size = after_length - header_length;
  std::vector<ParsedOffsets> extents;

  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw fail(name, "must be an object of string values");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) throw fail(name, "value of \"" + key + "\" must be a string");
        contents.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object()) throw fail(name, "entry must be an object with dtype, shape and data_offsets");

    SafetensorsTensor tensor;
    const auto dtype_entry = entry.find("dtype");
    if (dtype_entry == entry.end() || !dtype_entry->is_string())
      throw fail(name, "dtype must be a string such as \"F32\"");
    const std::string dtype_name = dtype_entry->get<std::string>();
    const auto dtype = parse_safetensors_dtype(dtype_name);
    if (!dtype) throw fail(name, "dtype \"" + dtype_name + "\" is not supported (expected F32, F16 or BF16)");
    tensor.dtype = *dtype;

    const auto shape_entry = entry.find("shape");
    if (shape_entry == entry.end() || !shape_entry->is_array())
      throw fail(name, "shape must be an array of non-negative integers");
    uint64_t element_count = 1;
    for (const auto& dim : *shape_entry) {
      if (!is_non_negative_integer(dim)) throw fail(name, "shape must be an array of non-negative integers");
      const uint64_t size = dim.get<uint64_t>();
      if (size > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(element_count, size, &element_count))
        throw fail(name, "shape " + shape_entry->dump() + " is too large");
      tensor.shape.push_back(static_cast<int64_t>(size));
    }

    const auto offsets_entry = entry.find("data_offsets");
    if (offsets_entry == entry.end() || !offsets_entry->is_array() || offsets_entry->size() != 2 ||
        !is_non_negative_integer((*offsets_entry)[0]) || !is_non_negative_integer((*offsets_entry)[1]))
      throw fail(name, "data_offsets must be [begin, end] with non-negative integers");
    const uint64_t begin = (*offsets_entry)[0].get<uint64_t>();
    const uint64_t end = (*offsets_entry)[1].get<uint64_t>();
    if (begin > end) throw fail(name, "data_offsets " + offsets_string(begin, end) + " are reversed (begin > end)");
    if (end > data_size)
      throw fail(name, "data_offsets " + offsets_string(begin, end) + " exceed the " + std::to_string(data_size) +
                           " data bytes (file truncated?)");
    uint64_t expected_bytes;
    if (__builtin_mul_overflow(element_count, uint64_t{dtype_size(tensor.dtype)}, &expected_bytes))
      throw fail(name, "shape " + shape_text(tensor.shape) + " is too large");
    if (end - begin != expected_bytes)
      throw fail(name, "data_offsets " + offsets_string(begin, end) + " hold " + std::to_string(end - begin) +
                           " bytes, but shape " + shape_text(tensor.shape) + " of " + dtype_name + " needs " +
                           std::to_string(expected_bytes));

    tensor.data = data_begin + begin;
    tensor.bytes = static_cast<size_t>(expected_bytes);
    if (expected_bytes > 0) extents.push_back({name, begin, end});
    contents.tensors.emplace(name, std::move(tensor));
  }

  std::sort(extents.begin(), extents.end(),
            [](const ParsedOffsets& a, const ParsedOffsets& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < extents.size(); ++i) {
    const ParsedOffsets& previous = extents[i - 1];
    const ParsedOffsets& current = extents[i];
    if (current.begin < previous.end)
      throw fail(current.name, "data_offsets " + offsets_string(current.begin, current.end) + " overlap tensor \"" +
                                   previous.name + "\" " + offsets_string(previous.begin, previous.end));
  }
  return contents;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : file_(path), contents_(parse_safetensors(file_.data(), file_.size(), path.string())) {}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  const auto found = contents_.tensors.find(name);
  return found == contents_.tensors.end() ? nullptr : &found->second;
}

}  // namespace decodelab
