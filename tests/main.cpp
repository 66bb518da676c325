// Catch2 v2 test runner entry point, with one listener: every test case must leave the
// DECODELAB_* environment as it found it (tests/support/environment_guard.h). A case that
// does not is named on stderr, the environment is put back, and the run fails.
// The run reads calibrations from a private cache folder seeded with round figures
// (DECODELAB_CACHE_DIR, removed at exit): no test calibrates this machine unless it sets up its
// own folder to test that, so tests do not spend minutes measuring (two at once under the
// sanitizers, each seeing the other as contention) and never write the user's own
// calibration. A test that calibrates in the shared folder all the same (its backend is one the
// seeded files do not describe) would hold every later test to real figures: the run fails,
// naming the files.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "engine/cpu/kernel_variant.h"
#include "tests/support/seeded_calibration.h"
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

// The private cache folder: this machine's calibrations at 1-8 kernel threads, round figures.
// At exit, a file that is not as seeded fails the run.
class SeededCalibrations {
 public:
  SeededCalibrations()
      : directory_(std::filesystem::temp_directory_path() /
                   ("decodelab-tests-calibrations-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(directory_);
    for (int threads = 1; threads <= 8; ++threads)
      decodelab::testing::seed_calibration(decodelab::testing::round_measured_spec("test-suite roofs"), directory_,
                                           threads);
    seeded_ = contents();
    ::setenv("DECODELAB_CACHE_DIR", directory_.c_str(), 1);
  }
  ~SeededCalibrations() {
    ::unsetenv("DECODELAB_CACHE_DIR");
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
  // The calibration files written or changed since seeding, one per line; empty when none. (A
  // Slurm task's lock file beside a calibration, `.calibration-....lock`, is not one.)
  std::string changed() const {
    std::string names;
    const std::map<std::string, std::string> now = contents();
    for (const auto& [name, text] : now) {
      if (name.rfind("calibration-", 0) != 0) continue;
      const auto seeded = seeded_.find(name);
      if (seeded == seeded_.end() || seeded->second != text) names += "  " + name + "\n";
    }
    return names;
  }

 private:
  std::map<std::string, std::string> contents() const {
    std::map<std::string, std::string> files;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(directory_, error)) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      files[entry.path().filename().string()] = text.str();
    }
    return files;
  }
  std::filesystem::path directory_;
  std::map<std::string, std::string> seeded_;
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
  const SeededCalibrations calibrations;
  const int status = Catch::Session().run(argc, argv);
  if (leaking_test_cases > 0) {
    std::fprintf(stderr, "%d test case(s) left DECODELAB_* variables changed\n", leaking_test_cases);
    return status != 0 ? status : 1;
  }
  if (const std::string changed = calibrations.changed(); !changed.empty()) {
    std::fprintf(stderr, "a test calibrated this machine in the suite's seeded cache folder (it should use its own):\n%s",
                 changed.c_str());
    return status != 0 ? status : 1;
  }
  return status;
}
