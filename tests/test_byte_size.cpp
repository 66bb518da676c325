// Byte sizes for --max-memory and for messages: binary and decimal suffixes, refusals.
#include <catch2/catch.hpp>

#include "lab/scenario/byte_size.h"

using namespace decodelab;

TEST_CASE("byte sizes parse with binary and decimal suffixes", "[byte_size]") {
  CHECK(parse_byte_size("0") == 0);
  CHECK(parse_byte_size("1000000") == 1000000);
  CHECK(parse_byte_size("512B") == 512);
  CHECK(parse_byte_size("8GiB") == 8LL << 30);
  CHECK(parse_byte_size("8 GiB") == 8LL << 30);
  CHECK(parse_byte_size("1.5KiB") == 1536);
  CHECK(parse_byte_size("2MiB") == 2LL << 20);
  CHECK(parse_byte_size("1TiB") == 1LL << 40);
  CHECK(parse_byte_size("2.5GB") == 2'500'000'000LL);
  CHECK(parse_byte_size("3kB") == 3000);
  CHECK(parse_byte_size("4G") == 4LL << 30);
}

TEST_CASE("byte sizes refuse what they cannot read", "[byte_size]") {
  for (const char* text : {"", "GiB", "8Gx", "-1", "1e30TiB", "eight", "8 GiB extra", "nan"}) {
    INFO(text);
    CHECK_FALSE(parse_byte_size(text).has_value());
  }
}

TEST_CASE("bytes print in the largest binary unit below 1024", "[byte_size]") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1536) == "1.50 KiB");
  CHECK(format_bytes(8LL << 30) == "8.00 GiB");
  CHECK(format_bytes(parse_byte_size("2.25MiB").value()) == "2.25 MiB");
}
