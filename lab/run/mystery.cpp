// Mystery cases: drawing one from a seed, turning it into a scenario (validated like any
// scenario file), telling the learner what they may know, and revealing the answer.
#include "lab/run/mystery.h"

#include <yaml-cpp/yaml.h>

namespace decodelab {

namespace {

// splitmix64: a fixed sequence per seed on every platform.
class SeededDraws {
 public:
  explicit SeededDraws(uint64_t seed) : state_(seed ^ 0x6d7973746572795full) {}

  uint64_t next() {
    uint64_t value = (state_ += 0x9e3779b97f4a7c15ull);
    value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
    value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
    return value ^ (value >> 31);
  }
  // Uniform in [low, high] (the modulo bias is far below anything a learner could see).
  int between(int low, int high) { return low + static_cast<int>(next() % static_cast<uint64_t>(high - low + 1)); }
  bool chance(double probability) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < probability; }

 private:
  uint64_t state_;
};

// Each bug is hidden with this probability, independently: about one case in thirteen is clean.
constexpr double kBugChance = 0.4;

const char* variant_text(const BugSet& bugs, const std::string& name) {
  if (name == "non_contiguous") return bugs.non_contiguous_mode == NonContiguousMode::Copy ? "mode copy" : "mode strided";
  if (name == "host_sync") {
    switch (bugs.host_sync_per) {
      case HostSyncPer::Token: return "per token";
      case HostSyncPer::Layer: return "per layer";
      case HostSyncPer::Sequence: return "per sequence";
    }
  }
  if (name == "fp32_ops") return bugs.fp32_scope == Fp32Scope::Norms ? "scope norms" : bugs.fp32_scope == Fp32Scope::Matmuls ? "scope matmuls" : "scope all";
  return "";
}

}  // namespace

MysteryCase mystery_case(uint64_t seed) {
  SeededDraws draw(seed);
  MysteryCase mystery;
  mystery.seed = seed;
  const bool tiny = draw.chance(0.6);
  mystery.model = tiny ? "lab-tiny" : "lab-small";

  BugSet& bugs = mystery.bugs;
  bugs.no_kv_cache = draw.chance(kBugChance);
  bugs.non_contiguous = draw.chance(kBugChance);
  bugs.non_contiguous_mode = draw.chance(0.5) ? NonContiguousMode::Copy : NonContiguousMode::Strided;
  bugs.host_sync = draw.chance(kBugChance);
  bugs.host_sync_per = static_cast<HostSyncPer>(draw.between(0, 2));
  bugs.fp32_ops = draw.chance(kBugChance);
  bugs.fp32_scope = static_cast<Fp32Scope>(draw.between(0, 2));
  bugs.sequential_generation = draw.chance(kBugChance);
  // Variants of bugs left off are reset, so two cases with the same answer compare equal.
  if (!bugs.non_contiguous) bugs.non_contiguous_mode = NonContiguousMode::Copy;
  if (!bugs.host_sync) bugs.host_sync_per = HostSyncPer::Token;
  if (!bugs.fp32_ops) bugs.fp32_scope = Fp32Scope::Matmuls;

  // fp32_ops only exists in a half-precision model.
  const DType any_dtype[] = {DType::F32, DType::F16, DType::BF16};
  mystery.dtype = bugs.fp32_ops ? any_dtype[draw.between(1, 2)] : any_dtype[draw.between(0, 2)];

  // lab-small is ~170M parameters: shorter workloads keep a CPU run within seconds.
  mystery.requests = draw.between(1, tiny ? 8 : 3);
  mystery.prompt_tokens = draw.between(8, tiny ? 64 : 24);
  mystery.new_tokens = draw.between(tiny ? 16 : 8, tiny ? 64 : 16);
  if (bugs.sequential_generation && mystery.requests == 1) mystery.requests = 2;  // else nothing to batch
  mystery.batch_size = mystery.requests >= 2 ? draw.between(2, mystery.requests) : 1;
  return mystery;
}

Scenario mystery_scenario(const MysteryCase& mystery) {
  YAML::Node document;
  document["description"] = "a mystery: find the bugs from the trace";
  document["model"] = mystery.model;
  document["dtype"] = dtype_name(mystery.dtype);
  document["backend"] = "auto";
  YAML::Node workload = document["workload"];
  workload["requests"] = mystery.requests;
  workload["batch_size"] = mystery.batch_size;
  workload["prompt_tokens"] = mystery.prompt_tokens;
  workload["new_tokens"] = mystery.new_tokens;
  workload["seed"] = mystery.seed & 0xffffffffull;
  document["run"]["warmup"] = 1;
  document["run"]["repeats"] = 1;
  const BugSet& bugs = mystery.bugs;
  YAML::Node listed = document["bugs"];
  listed["no_kv_cache"] = bugs.no_kv_cache;
  if (bugs.non_contiguous) listed["non_contiguous"]["mode"] = to_string(bugs.non_contiguous_mode);
  if (bugs.host_sync) listed["host_sync"]["per"] = to_string(bugs.host_sync_per);
  if (bugs.fp32_ops) listed["fp32_ops"]["scope"] = to_string(bugs.fp32_scope);
  listed["sequential_generation"] = bugs.sequential_generation;
  return parse_scenario(document, "mystery-" + std::to_string(mystery.seed) + ".yaml");
}

std::string mystery_briefing(const MysteryCase& mystery) {
  return "mystery " + std::to_string(mystery.seed) + ": " + mystery.model + " " + dtype_name(mystery.dtype) + ", " +
         std::to_string(mystery.requests) + (mystery.requests == 1 ? " request" : " requests") + ", prompts of " +
         std::to_string(mystery.prompt_tokens) + " tokens, " + std::to_string(mystery.new_tokens) +
         " new tokens each; between none and all five bugs are hidden in it";
}

std::string mystery_answer(const MysteryCase& mystery) {
  const BugSet& bugs = mystery.bugs;
  std::string text = "mystery " + std::to_string(mystery.seed) + ": ";
  if (!bugs.any()) {
    text += "no hidden bugs: a clean run (a clean trace must diagnose as clean)\n";
  } else {
    text += "the hidden bugs were\n";
    const std::pair<bool, const char*> hidden[] = {{bugs.no_kv_cache, "no_kv_cache"},
                                                   {bugs.non_contiguous, "non_contiguous"},
                                                   {bugs.host_sync, "host_sync"},
                                                   {bugs.fp32_ops, "fp32_ops"},
                                                   {bugs.sequential_generation, "sequential_generation"}};
    for (const auto& [on, name] : hidden) {
      if (!on) continue;
      const std::string variant = variant_text(bugs, name);
      text += std::string("  * ") + name + (variant.empty() ? "" : " (" + variant + ")") + "\n";
    }
  }
  text += "case: " + mystery.model + " " + dtype_name(mystery.dtype) + ", " + std::to_string(mystery.requests) +
          (mystery.requests == 1 ? " request" : " requests") + ", batch_size " +
          std::to_string(mystery.batch_size) + ", prompts of " + std::to_string(mystery.prompt_tokens) + " tokens, " +
          std::to_string(mystery.new_tokens) + " new tokens\n";
  text += "the scenario, to rerun it with `decodelab run` or `decodelab compare`:\n" +
          scenario_to_yaml(mystery_scenario(mystery)) + "\n";
  return text;
}

MysteryRun run_mystery(const MysteryCase& mystery, Backend& backend, RunOptions options,
                       const std::optional<DeviceSpec>& roofs) {
  const Scenario scenario = mystery_scenario(mystery);
  MysteryRun run;
  TraceMetadata& meta = run.trace.metadata();
  meta.backend = backend.name();
  meta.device = backend.device_description();
  meta.dtype = dtype_name(scenario.dtype);
  meta.model = ModelShape::of(scenario.model_config);
  meta.device_spec = roofs;
  options.sink = &run.trace;
  run.result = run_scenario(scenario, options, &backend);
  return run;
}

}  // namespace decodelab
