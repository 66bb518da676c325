// Where decodelab finds its data (configs/, scenarios/) wherever the binary runs from:
// $DECODELAB_HOME when set; else the source tree recorded at build time
// (DECODELAB_SOURCE_DIR); else an install's <prefix>/share/decodelab next to bin/.
// Nothing is cached, so a test (or a user) can change DECODELAB_HOME at any time.
#pragma once

#include <filesystem>
#include <string>

namespace decodelab {

struct DataRoot {
  std::filesystem::path path;  // holds configs/ and scenarios/
  std::string origin;          // "DECODELAB_HOME", "source tree", "install"
};

// Throws InputError when DECODELAB_HOME names no directory, and ResourceError when no
// candidate holds configs/ (the message lists the places tried).
DataRoot data_root();

std::filesystem::path configs_dir();
std::filesystem::path models_dir();   // configs/models
std::filesystem::path devices_dir();  // configs/devices
std::filesystem::path scenarios_dir();

// The running executable (/proc/self/exe), or "" when the platform cannot tell.
std::filesystem::path executable_path();

// A scenario named on the command line: a path as given; else relative to scenarios/
// (with or without ".yaml"); else a unique file stem anywhere under scenarios/.
// Throws InputError naming the argument when none matches.
std::filesystem::path resolve_scenario_argument(const std::string& argument);

}  // namespace decodelab
