// The DECODELAB_* environment, read from environ.
#include "tests/support/environment_guard.h"

#include <cstdlib>
#include <cstring>

extern char** environ;

namespace decodelab::testing {

Environment decodelab_environment() {
  Environment variables;
  for (char** entry = environ; entry && *entry; ++entry) {
    if (std::strncmp(*entry, "DECODELAB_", 10) != 0) continue;
    const char* equals = std::strchr(*entry, '=');
    if (equals) variables[std::string(*entry, static_cast<size_t>(equals - *entry))] = equals + 1;
  }
  return variables;
}

std::vector<std::string> environment_changes(const Environment& before, const Environment& after) {
  auto describe = [](const Environment& environment, const std::string& name) {
    auto found = environment.find(name);
    return found == environment.end() ? std::string("unset") : "'" + found->second + "'";
  };
  Environment names = before;
  names.insert(after.begin(), after.end());
  std::vector<std::string> changes;
  for (const auto& [name, ignored] : names) {
    const std::string was = describe(before, name), now = describe(after, name);
    if (was != now) changes.push_back(name + ": was " + was + ", now " + now);
  }
  return changes;
}

void restore_environment(const Environment& before, const Environment& after) {
  for (const auto& [name, value] : after)
    if (!before.count(name)) ::unsetenv(name.c_str());
  for (const auto& [name, value] : before) ::setenv(name.c_str(), value.c_str(), 1);
}

}  // namespace decodelab::testing
