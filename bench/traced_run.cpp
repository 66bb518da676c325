// Traced generations for the end-to-end benchmarks (see traced_run.h).
#include "bench/traced_run.h"

#include "lab/paths.h"
#include "profiling/trace.h"

namespace decodelab::bench {

Scenario bench_scenario(const std::string& name, const std::vector<std::string>& assignments) {
  return load_scenario(resolve_scenario_argument(name), assignments);
}

TracedGeneration traced_generate(LoadedScenario& loaded, Backend& backend, const DeviceSpec& spec) {
  const Scenario& scenario = loaded.scenario();
  Trace trace;
  trace.metadata() = TraceMetadata::of(backend.identity(), scenario.model_config, scenario.dtype, spec);
  TracedGeneration traced;
  traced.timing = loaded.generate(&trace).timing;
  traced.analysis = analyze(trace, &spec);
  return traced;
}

RooflinePoint category_point(const RunAnalysis& analysis, Phase phase, OpCategory category) {
  for (const OpGroup& group : analysis.categories)
    if (group.phase == phase && group.category == category) return group.point;
  return {};
}

}  // namespace decodelab::bench
