// A scenario generated with a trace attached, and the analysis of that trace: what the
// end-to-end benchmarks read their per-phase FLOP/s and device busy time from.
#pragma once

#include <string>
#include <vector>

#include "engine/backend.h"
#include "lab/run/runner.h"
#include "profiling/model/analysis.h"

namespace decodelab::bench {

// The lab scenario `name` (under scenarios/) with `assignments` (key.path=value) applied.
Scenario bench_scenario(const std::string& name, const std::vector<std::string>& assignments);

struct TracedGeneration {
  GenerationTiming timing;
  RunAnalysis analysis;
};
// Analysed against `spec`'s roofs (the limiter needs some; the FLOP/s read here do not).
TracedGeneration traced_generate(LoadedScenario& loaded, Backend& backend, const DeviceSpec& spec);

// The FLOPs and device seconds of one op category in one phase (zeros when absent);
// a whole phase is RunAnalysis::phase().
RooflinePoint category_point(const RunAnalysis& analysis, Phase phase, OpCategory category);

}  // namespace decodelab::bench
