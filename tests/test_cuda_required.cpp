// DECODELAB_REQUIRE_CUDA=1 turns a [cuda] test's skip into a failure that prints the CUDA
// runtime's reason, so that a GPU check (scripts/gpu-check.sh) cannot pass on a machine
// whose device is missing or refused (an old driver, no driver). Checked here on the
// decision itself and end to end: this test binary run again on one [cuda] test case.
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/cuda_test_support.h"
#include "tests/support/temp_dir.h"

namespace {

struct ChildRun {
  int status = -1;
  std::string output;
};

// This test binary, run on one test case with `environment` prefixed (a shell assignment);
// the compact reporter keeps each message on one line.
ChildRun run_this_binary(const std::string& environment, const std::string& test_case) {
  const decodelab::testing::TempDir dir;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  const std::filesystem::path log = dir.path() / "child.log";
  const std::string command =
      environment + " '" + self.string() + "' '" + test_case + "' --reporter compact >'" + log.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  ChildRun run;
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::ostringstream text;
  text << in.rdbuf();
  run.output = text.str();
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
  const ChildRun required = run_this_binary("DECODELAB_REQUIRE_CUDA=1", test_case);
  const ChildRun relaxed = run_this_binary("DECODELAB_REQUIRE_CUDA=0", test_case);
  INFO("required run:\n" << required.output << "\nrelaxed run:\n" << relaxed.output);
  CHECK(relaxed.status == 0);
  if (decodelab::cuda_device_available()) {
    CHECK(required.status == 0);
    return;
  }
  CHECK(required.status != 0);
  CHECK(required.output.find("DECODELAB_REQUIRE_CUDA=1 and no usable CUDA device") != std::string::npos);
  CHECK(required.output.find(decodelab::cuda_unavailable_reason()) != std::string::npos);
  CHECK(relaxed.output.find("skipped") != std::string::npos);
}
