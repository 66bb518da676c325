// safetensors reader: round trips of written files (F32/F16/BF16, odd sizes, unaligned
// data, shards), and a table of broken files, each with the exact error it must raise.
#include <catch2/catch.hpp>
#include <fstream>
#include <functional>

#include "engine/base/errors.h"
#include "engine/checkpoint/safetensors.h"
#include "tests/support/safetensors_writer.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

// Every element of `tensor`, converted to `dtype`, equals the written value rounded to it.
void require_values(const SafetensorsTensor& tensor, const HostTensor& written, DType dtype) {
  std::vector<uint8_t> converted(static_cast<size_t>(tensor.numel()) * dtype_size(dtype));
  tensor.convert_to(dtype, converted.data());
  size_t mismatches = 0;
  for (size_t i = 0; i < written.values.size(); ++i) {
    if (load_as_float(converted.data(), dtype, i) != round_to(dtype, written.values[i])) ++mismatches;
  }
  INFO(written.name << " read as " << dtype_name(dtype));
  REQUIRE(mismatches == 0);
}

InputError catch_input_error(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& error) {
    return error;
  }
  FAIL("expected an InputError");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("safetensors: written tensors read back exactly in every dtype", "[safetensors]") {
  // prepare: edge shapes (scalar, empty, one element, odd sizes) in all three dtypes;
  // an odd-length F16 tensor first puts the later F32 data at an unaligned offset.
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  std::vector<HostTensor> written = {
      seeded_tensor("odd.f16", DType::F16, {3}, 11, 2.0f),
      seeded_tensor("matrix", dtype, {7, 13}, 12, 3.0f),
      seeded_tensor("scalar", dtype, {}, 13, 1.0f),
      seeded_tensor("empty", dtype, {0, 5}, 14, 1.0f),
      seeded_tensor("one", dtype, {1}, 15, 1.0f),
      seeded_tensor("after.odd", DType::F32, {5, 1, 3}, 16, 100.0f),
  };
  ScratchDirectory directory("roundtrip");
  const auto path = directory / "model.safetensors";
  write_safetensors(path, written);

  // run
  const SafetensorsFile file(path);

  // verify
  REQUIRE(file.tensors().size() == written.size());
  REQUIRE(file.metadata().at("format") == "pt");
  for (const HostTensor& expected : written) {
    const SafetensorsTensor* tensor = file.find(expected.name);
    REQUIRE(tensor != nullptr);
    CHECK(tensor->dtype == expected.dtype);
    CHECK(tensor->shape == expected.shape);
    CHECK(tensor->bytes == expected.values.size() * dtype_size(expected.dtype));
    for (DType destination : {DType::F32, DType::F16, DType::BF16}) require_values(*tensor, expected, destination);
  }
  CHECK(file.find("absent") == nullptr);
}

TEST_CASE("safetensors: large tensors convert in parallel with the same result", "[safetensors]") {
  const HostTensor big = seeded_tensor("big", DType::BF16, {300, 301}, 21, 5.0f);  // above the parallel threshold
  ScratchDirectory directory("big");
  write_safetensors(directory / "big.safetensors", {big});
  const SafetensorsFile file(directory / "big.safetensors");
  require_values(*file.find("big"), big, DType::F32);
  require_values(*file.find("big"), big, DType::F16);
}

TEST_CASE("safetensors: each shard of a sharded checkpoint parses and holds its half", "[safetensors]") {
  ModelConfig config;
  config.vocab_size = 64;
  config.hidden_size = 16;
  config.intermediate_size = 24;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.max_position_embeddings = 64;
  REQUIRE(config.finalize_and_validate().empty());
  ScratchDirectory directory("shards");
  CheckpointOptions options;
  options.dtype = DType::BF16;
  options.seed = 3;
  options.shards = 2;
  const std::vector<HostTensor> written = write_checkpoint(directory.path(), config, options);

  const SafetensorsFile first(directory / "model-00001-of-00002.safetensors");
  const SafetensorsFile second(directory / "model-00002-of-00002.safetensors");

  CHECK(first.tensors().size() + second.tensors().size() == written.size());
  CHECK(!first.tensors().empty());
  CHECK(!second.tensors().empty());
  for (const HostTensor& expected : written) {
    const SafetensorsTensor* tensor =
        first.find(expected.name) ? first.find(expected.name) : second.find(expected.name);
    REQUIRE(tensor != nullptr);
    CHECK((first.find(expected.name) == nullptr) != (second.find(expected.name) == nullptr));
    require_values(*tensor, expected, DType::BF16);
  }
}

TEST_CASE("safetensors: a header padded with spaces and extra entry keys is accepted", "[safetensors]") {
  SafetensorsImage image = make_safetensors_image({seeded_tensor("x", DType::F32, {2, 2}, 5, 1.0f)}, {});
  image.header["x"]["note"] = "ignored";
  ScratchDirectory directory("padded");
  image.write(directory / "x.safetensors");
  const SafetensorsFile file(directory / "x.safetensors");
  CHECK(file.metadata().empty());
  CHECK(file.find("x")->shape == std::vector<int64_t>{2, 2});
}

TEST_CASE("safetensors: broken files raise an error naming the file, the tensor and the problem",
          "[safetensors][errors]") {
  struct BrokenCase {
    const char* what;
    std::function<void(SafetensorsImage&)> damage;
    const char* key;
    const char* problem;
  };
  // Tensors: "a" F32 [2,3] (bytes 0..24), "b" F16 [4] (24..32), "c" BF16 [3,1] (32..38).
  const std::vector<BrokenCase> cases = {
      {"truncated data", [](SafetensorsImage& image) { apply_defect(image, Defect::Truncated, "c"); }, "c",
       "data_offsets [32, 38] exceed the 35 data bytes (file truncated?)"},
      {"header length beyond the file",
       [](SafetensorsImage& image) { apply_defect(image, Defect::HeaderLengthBeyondFile, "a"); }, "header", nullptr},
      {"overlapping offsets", [](SafetensorsImage& image) { apply_defect(image, Defect::OverlappingOffsets, "b"); },
       "b", "data_offsets [22, 30] overlap tensor \"a\" [0, 24]"},
      {"shape disagrees with the bytes",
       [](SafetensorsImage& image) { apply_defect(image, Defect::ShapeMismatchesBytes, "a"); }, "a",
       "data_offsets [0, 24] hold 24 bytes, but shape [2,3,2] of F32 needs 48"},
      {"unsupported dtype (same width)",
       [](SafetensorsImage& image) { apply_defect(image, Defect::UnsupportedDtype, "a"); }, "a",
       "dtype \"I32\" is not supported (expected F32, F16 or BF16)"},
      {"unsupported dtype F64", [](SafetensorsImage& image) { image.header["b"]["dtype"] = "F64"; }, "b",
       "dtype \"F64\" is not supported (expected F32, F16 or BF16)"},
      {"dtype not a string", [](SafetensorsImage& image) { image.header["b"]["dtype"] = 16; }, "b",
       "dtype must be a string such as \"F32\""},
      {"negative dim",
       [](SafetensorsImage& image) {
         image.header["a"]["shape"] = {-2, 3};
       },
       "a", "shape must be an array of non-negative integers"},
      {"fractional dim",
       [](SafetensorsImage& image) {
         image.header["a"]["shape"] = {2.5, 3};
       },
       "a", "shape must be an array of non-negative integers"},
      {"missing shape", [](SafetensorsImage& image) { image.header["a"].erase("shape"); }, "a",
       "shape must be an array of non-negative integers"},
      {"one offset", [](SafetensorsImage& image) { image.header["a"]["data_offsets"] = {0}; }, "a",
       "data_offsets must be [begin, end] with non-negative integers"},
      {"negative offset",
       [](SafetensorsImage& image) {
         image.header["a"]["data_offsets"] = {-4, 20};
       },
       "a", "data_offsets must be [begin, end] with non-negative integers"},
      {"reversed offsets",
       [](SafetensorsImage& image) {
         image.header["c"]["data_offsets"] = {38, 32};
       },
       "c", "data_offsets [38, 32] are reversed (begin > end)"},
      {"entry not an object",
       [](SafetensorsImage& image) {
         image.header["b"] = {1, 2};
       },
       "b", "entry must be an object with dtype, shape and data_offsets"},
      {"metadata value not a string", [](SafetensorsImage& image) { image.header["__metadata__"]["step"] = 3; },
       "__metadata__", "value of \"step\" must be a string"},
      {"header not an object",
       [](SafetensorsImage& image) {
         image.header = nlohmann::json::array({1, 2});
       },
       "header", "must be a JSON object of tensor entries"},
      {"header length zero", [](SafetensorsImage& image) { image.header_length_override = 0; }, "header", nullptr},
  };

  for (const BrokenCase& broken : cases) {
    SECTION(broken.what) {
      // prepare
      SafetensorsImage image = make_safetensors_image({seeded_tensor("a", DType::F32, {2, 3}, 1, 1.0f),
                                                       seeded_tensor("b", DType::F16, {4}, 2, 1.0f),
                                                       seeded_tensor("c", DType::BF16, {3, 1}, 3, 1.0f)});
      broken.damage(image);
      ScratchDirectory directory("broken");
      const auto path = directory / "broken.safetensors";
      image.write(path);

      // run
      const InputError error = catch_input_error([&] { SafetensorsFile file(path); });

      // verify
      CHECK(error.file() == path.string());
      CHECK(error.line() == 0);
      CHECK(error.key() == broken.key);
      if (broken.problem) CHECK(error.problem() == broken.problem);
      CHECK(std::string(error.what()).find(path.string()) == 0);
    }
  }
}

TEST_CASE("safetensors: header length and JSON problems are reported exactly", "[safetensors][errors]") {
  ScratchDirectory directory("header");
  const auto path = directory / "x.safetensors";
  auto write_raw = [&](uint64_t length, const std::string& text) {
    std::ofstream stream(path, std::ios::binary | std::ios::trunc);
    for (int i = 0; i < 8; ++i) stream.put(static_cast<char>(length >> (8 * i)));
    stream << text;
  };

  SECTION("shorter than the length field") {
    std::ofstream(path, std::ios::binary) << "abc";
    const InputError error = catch_input_error([&] { SafetensorsFile file(path); });
    CHECK(error.key() == "header");
    CHECK(error.problem() == "file is 3 bytes, too short for the 8-byte little-endian header length");
  }
  SECTION("empty file") {
    std::ofstream(path, std::ios::binary).flush();
    const InputError error = catch_input_error([&] { SafetensorsFile file(path); });
    CHECK(error.problem() == "file is 0 bytes, too short for the 8-byte little-endian header length");
  }
  SECTION("length beyond the file") {
    write_raw(1000, "{}      ");
    const InputError error = catch_input_error([&] { SafetensorsFile file(path); });
    CHECK(error.key() == "header");
    CHECK(error.problem() == "header length 1000 exceeds the 8 bytes that follow the length field");
  }
  SECTION("JSON cut short") {
    write_raw(10, R"({"a": {"dt)");
    const InputError error = catch_input_error([&] { SafetensorsFile file(path); });
    CHECK(error.key() == "header");
    CHECK(error.problem().rfind("is not valid JSON: ", 0) == 0);
    CHECK_THAT(error.problem(), Catch::Matchers::EndsWith("(the text ends early: truncated?)"));
  }
  SECTION("duplicate tensor name") {
    const std::string text = R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, )"
                             R"("w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})";
    write_raw(text.size(), text + std::string(8, '\0'));
    const InputError error = catch_input_error([&] { SafetensorsFile file(path); });
    CHECK(error.key() == "w");
    CHECK(error.problem() == "appears twice in the header");
  }
  SECTION("a directory, not a file") {
    const InputError error = catch_input_error([&] { SafetensorsFile file(directory.path()); });
    CHECK(error.file() == directory.path().string());
    CHECK(error.problem() == "not a regular file");
  }
  SECTION("no such file") {
    const InputError error = catch_input_error([&] { SafetensorsFile file(directory / "absent.safetensors"); });
    CHECK(error.problem().rfind("cannot open", 0) == 0);
  }
}
