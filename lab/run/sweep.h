// Sweeps: a scenario in which keys are given as lists expands into one scenario per
// combination (the Cartesian product, first key outermost), like llama-bench's parameter
// lists. Sweepable: the run settings `backend`, `threads` and `dtype` (outermost, in that
// order, so that a sweep opens each backend once) and every workload key (in file order).
// `prompt_ids` is a list by nature: only a list of lists sweeps it.
// With the top-level key `sweep: zip` the lists (all of one length) advance together
// instead: `requests: [1, 8], batch_size: [1, 8]` gives two points, not four.
#pragma once

#include <array>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace decodelab {

struct SweepPoint {
  std::string label;                                        // "batch_size=8 prompt_tokens=64"
  std::vector<std::pair<std::string, std::string>> values;  // swept key -> value, in order
  YAML::Node scenario;                                      // a deep copy with scalars in place of lists
};

// The top-level keys that sweep when given as lists, outermost first.
inline constexpr std::array<const char*, 3> kSweptSettings = {"backend", "threads", "dtype"};

// The swept keys of a scenario document: run settings first, then workload keys in file
// order (empty when nothing is swept).
std::vector<std::string> swept_keys(const YAML::Node& scenario);

// A sweep larger than this is refused (a typo in a list can ask for billions of runs).
constexpr size_t kMaxSweepPoints = 10000;

// Every combination; a scenario without lists gives one point with an empty label.
// Throws InputError (naming `file`) when zipped lists differ in length, or when the
// product holds more than kMaxSweepPoints combinations (found before any is built).
std::vector<SweepPoint> expand_sweep(const YAML::Node& scenario, const std::string& file = "");

}  // namespace decodelab
