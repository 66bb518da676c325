// .npy v1.0: the header layout numpy expects (magic, version, little-endian length, a
// Python dict padded so the data starts at a multiple of 64) and a lossless round trip.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>

#include "engine/base/errors.h"
#include "lab/npy.h"
#include "profiling/atomic_file.h"
#include "support/temp_dir.h"

using namespace decodelab;
using decodelab::testing::TempDir;

namespace {

std::vector<float> seeded_values(size_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> values(count);
  for (float& value : values) value = normal(generator);
  return values;
}

size_t header_length(const std::string& bytes) {
  return static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
}

}  // namespace

TEST_CASE("npy header: magic, version 1.0, dict, padded to 64 bytes", "[npy]") {
  for (const auto& shape : {std::vector<int64_t>{3, 512}, std::vector<int64_t>{1, 1}, std::vector<int64_t>{7},
                            std::vector<int64_t>{0, 128256}, std::vector<int64_t>{12345678, 0}}) {
    const int64_t count = shape.size() == 1 ? shape[0] : shape[0] * shape[1];
    const std::vector<float> values = seeded_values(static_cast<size_t>(count), 1);
    const std::string bytes = npy_bytes(values.data(), shape);
    REQUIRE(bytes.size() >= 10);
    CHECK(bytes.substr(0, 6) == "\x93NUMPY");
    CHECK(bytes[6] == '\x01');
    CHECK(bytes[7] == '\x00');
    const size_t length = header_length(bytes);
    CHECK((10 + length) % 64 == 0);
    const std::string header = bytes.substr(10, length);
    CHECK(header.back() == '\n');
    std::string dims;
    for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) dims += ",";
    CHECK(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }", 0) == 0);
    CHECK(header.find_first_not_of(' ', header.find('}') + 1) == header.size() - 1);  // spaces, then '\n'
    CHECK(bytes.size() == 10 + length + static_cast<size_t>(count) * 4);
  }
}

TEST_CASE("npy round trip keeps shape and every bit of every value", "[npy]") {
  const TempDir dir;
  for (const auto& shape : {std::vector<int64_t>{4, 512}, std::vector<int64_t>{1, 3}, std::vector<int64_t>{5}}) {
    const int64_t count = shape.size() == 1 ? shape[0] : shape[0] * shape[1];
    std::vector<float> values = seeded_values(static_cast<size_t>(count), 42);
    values[0] = -0.0f;
    const auto file = dir.path() / "logits.npy";
    save_file_atomically(file, npy_bytes(values.data(), shape));
    const NpyMatrix read = read_npy(file);
    CHECK(read.shape == shape);
    REQUIRE(read.values.size() == values.size());
    CHECK(std::memcmp(read.values.data(), values.data(), values.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("npy reader refuses what it does not understand", "[npy]") {
  const std::vector<float> values = {1.0f, 2.0f};
  const std::string good = npy_bytes(values.data(), {1, 2});
  CHECK_THROWS_AS(parse_npy("not numpy at all"), InputError);
  CHECK_THROWS_AS(parse_npy(good.substr(0, good.size() - 1)), InputError);  // truncated data
  std::string wrong_dtype = good;
  wrong_dtype.replace(wrong_dtype.find("<f4"), 3, "<f8");
  CHECK_THROWS_WITH(parse_npy(wrong_dtype, "x.npy"),
                    Catch::Matchers::Contains("x.npy") && Catch::Matchers::Contains("<f4"));
  std::string version_two = good;
  version_two[6] = '\x02';
  CHECK_THROWS_AS(parse_npy(version_two), InputError);
}
