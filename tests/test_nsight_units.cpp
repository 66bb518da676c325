// Numbers and units as Nsight tools print them: thousands separators, "n/a", ncu's unit
// names scaled to base units, nsys's units inside column headers.
#include <catch2/catch.hpp>

#include "profiling/trace/nsight_units.h"

using namespace decodelab;

TEST_CASE("nsight numbers: separators, signs, exponents, n/a and what is refused", "[nsight_units]") {
  struct Case {
    const char* text;
    NumberStatus status;
    double value;
  };
  const Case cases[] = {
      {"1,234,567", NumberStatus::Value, 1234567.0},
      {"1,600.25", NumberStatus::Value, 1600.25},
      {"  82.00 ", NumberStatus::Value, 82.0},
      {"-3", NumberStatus::Value, -3.0},
      {"4.0e-05", NumberStatus::Value, 4.0e-05},
      {"999", NumberStatus::Value, 999.0},
      {"n/a", NumberStatus::Missing, 0},
      {"N/A", NumberStatus::Missing, 0},
      {"", NumberStatus::Missing, 0},
      {"9,00", NumberStatus::Malformed, 0},      // a decimal comma, not a thousands separator
      {"1,2345", NumberStatus::Malformed, 0},
      {",123", NumberStatus::Malformed, 0},
      {"1234,567", NumberStatus::Malformed, 0},
      {"12x", NumberStatus::Malformed, 0},
      {"nan", NumberStatus::Malformed, 0},
  };
  for (const Case& c : cases) {
    INFO("text: \"" << c.text << "\"");
    const ParsedNumber parsed = parse_export_number(c.text);
    CHECK(parsed.status == c.status);
    if (c.status == NumberStatus::Value) CHECK(parsed.value == Approx(c.value));
  }
}

TEST_CASE("ncu units: each scaled to seconds, bytes, bytes/s, counts, percent or hertz", "[nsight_units]") {
  struct Case {
    const char* unit;
    Quantity quantity;
    double to_base;
  };
  const Case cases[] = {
      {"nsecond", Quantity::Time, 1e-9},       {"usecond", Quantity::Time, 1e-6},
      {"msecond", Quantity::Time, 1e-3},       {"second", Quantity::Time, 1.0},
      {"ns", Quantity::Time, 1e-9},            {"byte", Quantity::Bytes, 1.0},
      {"Kbyte", Quantity::Bytes, 1e3},         {"Mbyte", Quantity::Bytes, 1e6},
      {"Gbyte", Quantity::Bytes, 1e9},         {"MiB", Quantity::Bytes, 1048576.0},
      {"Gbyte/second", Quantity::ByteRate, 1e9}, {"byte/usecond", Quantity::ByteRate, 1e6},
      {"%", Quantity::Percent, 1.0},           {"inst", Quantity::Count, 1.0},
      {"Minst", Quantity::Count, 1e6},         {"sector", Quantity::Count, 1.0},
      {"", Quantity::Count, 1.0},
      // Clock rates: the details page's "Ghz", the raw page's "cycle/nsecond".
      {"Ghz", Quantity::Frequency, 1e9},       {"Mhz", Quantity::Frequency, 1e6},
      {"cycle/nsecond", Quantity::Frequency, 1e9}, {"cycle/second", Quantity::Frequency, 1.0},
  };
  for (const Case& c : cases) {
    INFO("unit: \"" << c.unit << "\"");
    const std::optional<UnitScale> scale = ncu_unit(c.unit);
    REQUIRE(scale);
    CHECK(scale->quantity == c.quantity);
    CHECK(scale->to_base == Approx(c.to_base));
  }
  CHECK_FALSE(ncu_unit("register/thread"));
  CHECK_FALSE(ncu_unit("furlong"));
  CHECK_FALSE(ncu_unit("cycle/furlong"));
}

TEST_CASE("nsys header units: split from the name and scaled", "[nsight_units]") {
  const HeaderUnit duration = split_header_unit("Duration (us)");
  CHECK(duration.name == "Duration");
  CHECK(duration.unit == "us");
  CHECK(split_header_unit("Name").unit.empty());
  CHECK(split_header_unit("Throughput (MB/s)").unit == "MB/s");

  CHECK(*nsys_time_unit_to_ns("ns") == 1.0);
  CHECK(*nsys_time_unit_to_ns("us") == 1e3);
  CHECK(*nsys_time_unit_to_ns("msec") == 1e6);
  CHECK(*nsys_time_unit_to_ns("") == 1.0);
  CHECK_FALSE(nsys_time_unit_to_ns("fortnight"));
  CHECK(*nsys_byte_unit_to_bytes("MB") == 1e6);
  CHECK(*nsys_byte_unit_to_bytes("MiB") == 1048576.0);
  CHECK(*nsys_byte_unit_to_bytes("byte") == 1.0);
  CHECK_FALSE(nsys_byte_unit_to_bytes("MB/s"));
}
