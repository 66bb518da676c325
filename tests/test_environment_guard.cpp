// The runner's environment check (tests/main.cpp, tests/support/environment_guard.h) and
// ScopedEnv: a test case that leaves a DECODELAB_* variable changed is found and undone,
// and ScopedEnv puts back a value that was set before it, not just "unset".
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "tests/support/environment_guard.h"
#include "tests/support/scoped_env.h"

using namespace decodelab::testing;

TEST_CASE("environment guard: changes are named, and restoring undoes them", "[environment_guard]") {
  const ScopedEnv timer("DECODELAB_CUDA_TIMER", "events");  // as under compute-sanitizer
  const ScopedEnv removed("DECODELAB_GUARD_TEST_REMOVED", "x");
  const ScopedEnv added("DECODELAB_GUARD_TEST_ADDED", nullptr);
  const Environment before = decodelab_environment();
  CHECK(before.at("DECODELAB_CUDA_TIMER") == "events");

  // What the old "[cuda]" timings test did: clear the timer choice instead of restoring it.
  ::unsetenv("DECODELAB_CUDA_TIMER");
  ::unsetenv("DECODELAB_GUARD_TEST_REMOVED");
  ::setenv("DECODELAB_GUARD_TEST_ADDED", "y", 1);
  const Environment after = decodelab_environment();
  const std::vector<std::string> changes = environment_changes(before, after);
  CHECK(changes == std::vector<std::string>{"DECODELAB_CUDA_TIMER: was 'events', now unset",
                                            "DECODELAB_GUARD_TEST_ADDED: was unset, now 'y'",
                                            "DECODELAB_GUARD_TEST_REMOVED: was 'x', now unset"});

  restore_environment(before, after);
  CHECK(decodelab_environment() == before);
  CHECK(environment_changes(before, decodelab_environment()).empty());
}

TEST_CASE("ScopedEnv restores a value that was set before it", "[environment_guard]") {
  const ScopedEnv outer("DECODELAB_CUDA_TIMER", "events");
  {
    const ScopedEnv inner("DECODELAB_CUDA_TIMER", nullptr);
    CHECK(std::getenv("DECODELAB_CUDA_TIMER") == nullptr);
  }
  REQUIRE(std::getenv("DECODELAB_CUDA_TIMER") != nullptr);
  CHECK(std::string(std::getenv("DECODELAB_CUDA_TIMER")) == "events");
}
