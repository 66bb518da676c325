// `decodelab roofline`: option rules, and the printed roofs of a datasheet device.
#include <catch2/catch.hpp>

#include <CLI/CLI.hpp>

#include "lab/cli/cli_commands.h"
#include "profiling/device_spec.h"
#include "profiling/report/printers.h"

using namespace decodelab;

namespace {

void parse(std::vector<std::string> arguments) {
  CLI::App app{"test", "decodelab"};
  add_roofline_command(app);
  std::reverse(arguments.begin(), arguments.end());  // CLI11 takes them last-first
  app.parse(arguments);
}

}  // namespace

TEST_CASE("roofline command: a device spec and a measurement exclude each other, saving needs a measurement", "[command_roofline]") {
  CHECK_THROWS_AS(parse({"roofline", "--device", "h200", "--measure"}), CLI::ParseError);
  CHECK_THROWS_AS(parse({"roofline", "--save", "x.yaml"}), CLI::ParseError);
  CHECK_THROWS_AS(parse({"roofline", "--backend", "tpu"}), CLI::ParseError);
  CHECK_NOTHROW(parse({"roofline", "--device", "h100-sxm"}));
}

TEST_CASE("roofs printout: both roof sets, ridge points and sources", "[command_roofline]") {
  const std::string text = format_device_roofs(find_device_spec("h200"));
  CHECK(text.find("NVIDIA H200 SXM 141 GB (h200)") != std::string::npos);
  CHECK(text.find("4.80 TB/s") != std::string::npos);
  CHECK(text.find("4.30 TB/s") != std::string::npos);
  CHECK(text.find("790 TFLOP/s") != std::string::npos);
  CHECK(text.find("206 FLOP/B") != std::string::npos);  // 989 / 4.8, datasheet fp16 ridge
  CHECK(text.find("184 FLOP/B") != std::string::npos);  // 790 / 4.3, measured bf16 ridge
  CHECK(text.find("datasheet: NVIDIA H200") != std::string::npos);
}
