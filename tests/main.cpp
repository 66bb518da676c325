// Catch2 v2 test runner entry point, with one listener: every test case must leave the
// DECODELAB_* environment as it found it (tests/support/environment_guard.h). A case that
// does not is named on stderr, the environment is put back, and the run fails.
// The run reads roofs from a private cache seeded with round figures (DECODELAB_CACHE_DIR,
// removed at exit): no test measures this machine's roofs unless it sets up its own cache to
// test that, so tests do not spend minutes measuring (two at once under the sanitizers, each
// seeing the other as contention) and never write the user's own roof cache.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/cpu/kernel_variant.h"
#include "tests/support/cached_roofs.h"
#include "tests/support/environment_guard.h"

namespace {

int leaking_test_cases = 0;

struct EnvironmentListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    TestEventListenerBase::testCaseStarting(info);
    before_ = decodelab::testing::decodelab_environment();
  }

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    const decodelab::testing::Environment after = decodelab::testing::decodelab_environment();
    const std::vector<std::string> changes = decodelab::testing::environment_changes(before_, after);
    if (!changes.empty()) {
      ++leaking_test_cases;
      std::fprintf(stderr, "test case \"%s\" left the environment changed (put back; the run fails):\n",
                   stats.testInfo.name.c_str());
      for (const std::string& change : changes) std::fprintf(stderr, "  %s\n", change.c_str());
      decodelab::testing::restore_environment(before_, after);
    }
    TestEventListenerBase::testCaseEnded(stats);
  }

 private:
  decodelab::testing::Environment before_;
};

}  // namespace

CATCH_REGISTER_LISTENER(EnvironmentListener)

// The private roof cache: this machine's identity at 1-8 kernel threads, round figures.
class SeededRoofCache {
 public:
  SeededRoofCache()
      : directory_(std::filesystem::temp_directory_path() / ("decodelab-tests-roofs-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(directory_);
    for (int threads = 1; threads <= 8; ++threads)
      decodelab::testing::cache_roofs(decodelab::testing::round_measured_spec("test-suite roofs"), directory_, threads);
    ::setenv("DECODELAB_CACHE_DIR", directory_.c_str(), 1);
  }
  ~SeededRoofCache() {
    ::unsetenv("DECODELAB_CACHE_DIR");
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }

 private:
  std::filesystem::path directory_;
};

// ctest runs the CPU op tests once more under each narrower kernel variant
// (DECODELAB_CPU_KERNELS); on a CPU that cannot run the one asked for, that entry is
// skipped (exit 77, ctest's SKIP_RETURN_CODE) with the reason, not failed.
constexpr int kSkipped = 77;

int main(int argc, char* argv[]) {
  if (const char* variant = std::getenv("DECODELAB_CPU_KERNELS"); variant && *variant &&
      std::string(variant) != "auto" && !decodelab::cpu::kernel_variant_supported(variant)) {
    bool compiled = false;
    for (const std::string& name : decodelab::cpu::compiled_kernel_variants()) compiled = compiled || name == variant;
    if (compiled) {
      std::fprintf(stderr, "skipped: this CPU cannot run the %s kernels (DECODELAB_CPU_KERNELS)\n", variant);
      return kSkipped;
    }
  }
  const SeededRoofCache roofs;
  const int status = Catch::Session().run(argc, argv);
  if (leaking_test_cases > 0) {
    std::fprintf(stderr, "%d test case(s) left DECODELAB_* variables changed\n", leaking_test_cases);
    return status != 0 ? status : 1;
  }
  return status;
}
