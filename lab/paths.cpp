// Data-root discovery and scenario-name resolution. A candidate counts only when it
// holds configs/, so a stale source path recorded in a moved binary falls through to
// the install location instead of failing later with a confusing "no such model".
#include "lab/paths.h"

#include <cstdlib>
#include <system_error>
#include <vector>

#include "engine/base/errors.h"
#include "lab/scenario/yaml_fields.h"

namespace decodelab {

namespace fs = std::filesystem;

fs::path executable_path() {
  std::error_code error;
  fs::path path = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : path;
}

DataRoot data_root() {
  if (const char* home = std::getenv("DECODELAB_HOME"); home && *home) {
    std::error_code error;
    if (!fs::is_directory(home, error)) {
      throw InputError(home, 0, "DECODELAB_HOME", "expected a directory holding configs/ and scenarios/");
    }
    return {fs::path(home), "DECODELAB_HOME"};
  }
  std::vector<DataRoot> candidates;
#ifdef DECODELAB_SOURCE_DIR
  candidates.push_back({fs::path(DECODELAB_SOURCE_DIR), "source tree"});
#endif
  if (fs::path exe = executable_path(); !exe.empty()) {
    candidates.push_back({exe.parent_path().parent_path() / "share" / "decodelab", "install"});
  }
  std::string tried;
  for (const DataRoot& candidate : candidates) {
    std::error_code error;
    if (fs::is_directory(candidate.path / "configs", error)) return candidate;
    tried += (tried.empty() ? "" : ", ") + candidate.path.string();
  }
  throw ResourceError("decodelab cannot find its configs/ folder (tried " + tried +
                      "); set DECODELAB_HOME to the folder that holds configs/ and scenarios/");
}

fs::path configs_dir() { return data_root().path / "configs"; }
fs::path models_dir() { return configs_dir() / "models"; }
fs::path devices_dir() { return configs_dir() / "devices"; }
fs::path scenarios_dir() { return data_root().path / "scenarios"; }

fs::path resolve_scenario_argument(const std::string& argument) {
  std::error_code error;
  if (fs::is_regular_file(argument, error)) return argument;
  const fs::path root = scenarios_dir();
  for (const fs::path& candidate : {root / argument, root / (argument + ".yaml")}) {
    if (fs::is_regular_file(candidate, error)) return candidate;
  }
  // A bare stem ("quickstart") found anywhere under scenarios/, when it is unambiguous;
  // every scenario's stem and path under scenarios/ are the names a typo is matched with.
  std::vector<fs::path> matches;
  std::vector<std::string> names;
  const bool bare_stem = fs::path(argument).filename() == argument;
  if (fs::is_directory(root, error)) {
    for (auto it = fs::recursive_directory_iterator(root, error); !error && it != fs::end(it); it.increment(error)) {
      if (!it->is_regular_file() || it->path().extension() != ".yaml") continue;
      if (bare_stem && it->path().stem() == argument) matches.push_back(it->path());
      names.push_back(it->path().stem().string());
      names.push_back(fs::path(it->path()).lexically_relative(root).replace_extension().string());
    }
  }
  if (matches.size() == 1) return matches.front();
  if (matches.size() > 1) {
    std::string listing;
    for (const fs::path& match : matches) listing += (listing.empty() ? "" : ", ") + match.string();
    throw InputError(argument, 0, "", "ambiguous scenario name; it matches " + listing);
  }
  throw InputError(argument, 0, "",
                   "no such scenario file (also looked under " + root.string() + ")" + did_you_mean(argument, names));
}

}  // namespace decodelab
