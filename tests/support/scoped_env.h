// Test support: an environment variable set (or unset) for a scope, and whatever was there
// before put back at its end, also when the test returns early or fails. A test that
// changes a variable another test reads (DECODELAB_CUDA_TIMER under compute-sanitizer,
// DECODELAB_CACHE_DIR, DECODELAB_HOME) must go through this; tests/main.cpp fails the run
// when a test case leaves any DECODELAB_* variable changed.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace decodelab::testing {

class ScopedEnv {
 public:
  // value nullptr: the variable is unset for the scope.
  ScopedEnv(std::string name, const char* value) : name_(std::move(name)) {
    if (const char* previous = std::getenv(name_.c_str())) previous_ = previous;
    if (value) {
      ::setenv(name_.c_str(), value, 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ~ScopedEnv() {
    if (previous_) {
      ::setenv(name_.c_str(), previous_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> previous_;
};

}  // namespace decodelab::testing
