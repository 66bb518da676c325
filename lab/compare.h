// Fixed vs buggy: a scenario and its fixed twin (every bug off, all else equal) loaded on
// one backend, their repeats alternated so that drift on a shared machine hits both, and
// the last repeat of each traced and analysed. The slowdown is the ratio of median total
// generation times; the per-category table says where the device time went.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/runner.h"
#include "lab/scenario.h"
#include "profiling/analysis.h"
#include "profiling/attribution.h"
#include "profiling/trace.h"

namespace decodelab {

struct CompareOptions {
  std::optional<BackendKind> backend;
  int threads = 0;
  std::optional<int64_t> max_memory_bytes;
  ProgressMode progress = ProgressMode::Off;
  std::string progress_label;  // prefix of the progress line ("[2/5] host_sync")
};

// Device time of one bucket of ops in each run (ms over the whole traced repeat).
struct CategoryDelta {
  std::string category;  // matmul, attention, copy, cast, sync/idle, other
  double fixed_ms = 0;
  double buggy_ms = 0;
  double delta_ms() const { return buggy_ms - fixed_ms; }
};

struct ComparedRun {
  Scenario scenario;
  RunResult result;
  std::unique_ptr<Trace> trace;  // the last timed repeat
  RunAnalysis analysis;
};

struct Comparison {
  ComparedRun fixed;
  ComparedRun buggy;
  double slowdown = 0;          // buggy median total time / fixed median total time
  double decode_slowdown = 0;   // fixed decode tok/s / buggy decode tok/s
  std::vector<CategoryDelta> categories;
  Attribution attribution;      // the traced repeats' difference, split into causes
  bool same_tokens = false;     // the bugs changed no generated token
};

Comparison compare_with_fixed_twin(const Scenario& buggy, const CompareOptions& options);

// Buckets for the per-category table, in print order.
std::vector<CategoryDelta> category_deltas(const RunAnalysis& fixed, const RunAnalysis& buggy);

std::string comparison_table(const Comparison& comparison);
nlohmann::json comparison_json(const Comparison& comparison);

}  // namespace decodelab
