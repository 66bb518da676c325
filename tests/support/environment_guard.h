// Test support: the DECODELAB_* environment before and after a test case. The runner
// (tests/main.cpp) compares the two around every test case and fails the run when a test
// left one changed, because later tests in the same process (a `decodelab_tests "[cuda]"`
// run, under compute-sanitizer too) would silently run under it.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace decodelab::testing {

using Environment = std::map<std::string, std::string>;

// Every variable whose name starts with DECODELAB_, with its value.
Environment decodelab_environment();
// One line per variable that differs: "NAME: was 'a', now unset".
std::vector<std::string> environment_changes(const Environment& before, const Environment& after);
// Puts `before` back (sets what changed, unsets what was added).
void restore_environment(const Environment& before, const Environment& after);

}  // namespace decodelab::testing
