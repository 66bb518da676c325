// The lab's practice mode: `decodelab lab --mystery [--seed N]` runs a seeded random
// workload with a hidden random set of bugs and writes its trace (and report) without
// naming them; `decodelab lab --reveal --seed N` tells the answer. A learner reads the
// trace, names the bugs, and checks.
// Non-obvious choice: the case is a pure function of the seed, drawn with our own
// splitmix64 rather than <random>'s distributions (whose results differ between standard
// libraries), so a seed revealed on one machine names the case run on another. Every
// case is diagnosable by construction: sequential generation only with several requests,
// and a clean case batches whenever it has several requests (batch 1 with several
// requests would read as sequential generation — docs/diagnosis.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bugs/bug_set.h"
#include "engine/base/dtype.h"
#include "lab/run/runner.h"
#include "lab/scenario/scenario.h"
#include "profiling/trace.h"

namespace decodelab {

struct MysteryCase {
  uint64_t seed = 0;
  std::string model;  // "lab-tiny" | "lab-small"
  DType dtype = DType::F16;
  int requests = 1;
  int batch_size = 1;
  int prompt_tokens = 8;
  int new_tokens = 8;
  BugSet bugs;        // the hidden answer
};

MysteryCase mystery_case(uint64_t seed);

// The case as a validated scenario (warm-up 1, one timed repeat), named "mystery-<seed>".
Scenario mystery_scenario(const MysteryCase& mystery);

// What the learner is told before reading: model, dtype and the workload's lengths —
// never the bugs, nor the batch size (a setting the sequential bug overrides).
std::string mystery_briefing(const MysteryCase& mystery);
// The answer: each hidden bug with its variant ("none" when clean), and the scenario YAML
// to rerun it with `decodelab run` or `decodelab compare`.
std::string mystery_answer(const MysteryCase& mystery);

struct MysteryRun {
  Trace trace;       // the timed repeat, with metadata (backend, device, dtype, model, roofs)
  RunResult result;
};
// Runs the case on `backend` (opened with open_backend), recording the timed repeat; the
// trace carries `roofs` when given (what `run --trace` writes), so a report can be drawn.
MysteryRun run_mystery(const MysteryCase& mystery, Backend& backend, RunOptions options,
                       const std::optional<DeviceSpec>& roofs = std::nullopt);

}  // namespace decodelab
