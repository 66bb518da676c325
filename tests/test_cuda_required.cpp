// DECODELAB_REQUIRE_CUDA=1 turns a [cuda] test's skip into a failure that prints the CUDA
// runtime's reason, so that a GPU check (scripts/gpu-check.sh) cannot pass on a machine
// whose device is missing or refused (an old driver, no driver). Checked here on the
// decision itself and end to end: this test binary run again on one [cuda] test case.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "tests/cuda_test_support.h"
#include "tests/support/cli_runner.h"

namespace {

// This test binary, run on one test case with `environment` prefixed (a shell assignment);
// the compact reporter keeps each message on one line.
decodelab::testing::CommandResult run_this_binary(const std::string& environment, const std::string& test_case) {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  decodelab::testing::CommandResult run =
      decodelab::testing::run_command({self.string(), test_case, "--reporter", "compact"}, environment);
  run.out += run.err;
  return run;
}

}  // namespace

TEST_CASE("cuda required: a missing device fails with the runtime's reason, else skips", "[cuda_support]") {
  const auto required = decodelab::cuda_test::missing_device("cudaGetDeviceCount: no CUDA-capable device", true);
  CHECK(required.fail);
  CHECK(required.message.find("DECODELAB_REQUIRE_CUDA=1") != std::string::npos);
  CHECK(required.message.find("no CUDA-capable device") != std::string::npos);
  const auto optional = decodelab::cuda_test::missing_device("cudaGetDeviceCount: no CUDA-capable device", false);
  CHECK_FALSE(optional.fail);
  CHECK(optional.message.find("no CUDA-capable device") != std::string::npos);
}

TEST_CASE("cuda required: the [cuda] tests fail without a device when DECODELAB_REQUIRE_CUDA=1", "[cuda_support]") {
  const std::string test_case = "cuda memory and host transfers round-trip";
  const auto required = run_this_binary("DECODELAB_REQUIRE_CUDA=1", test_case);
  const auto relaxed = run_this_binary("DECODELAB_REQUIRE_CUDA=0", test_case);
  INFO("required run:\n" << required.out << "\nrelaxed run:\n" << relaxed.out);
  CHECK(relaxed.exit_code == 0);
  if (decodelab::cuda_device_available()) {
    CHECK(required.exit_code == 0);
    return;
  }
  CHECK(required.exit_code != 0);
  CHECK(required.out.find("DECODELAB_REQUIRE_CUDA=1 and no usable CUDA device") != std::string::npos);
  CHECK(required.out.find(decodelab::cuda_unavailable_reason()) != std::string::npos);
  CHECK(relaxed.out.find("skipped") != std::string::npos);
}
