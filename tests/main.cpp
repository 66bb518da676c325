// Catch2 v2 test runner entry point, with one listener: every test case must leave the
// DECODELAB_* environment as it found it (tests/support/environment_guard.h). A case that
// does not is named on stderr, the environment is put back, and the run fails.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

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

int main(int argc, char* argv[]) {
  const int status = Catch::Session().run(argc, argv);
  if (leaking_test_cases > 0) {
    std::fprintf(stderr, "%d test case(s) left DECODELAB_* variables changed\n", leaking_test_cases);
    return status != 0 ? status : 1;
  }
  return status;
}
