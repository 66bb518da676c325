// The decode loop: requests -> groups (batches) -> prefill -> decode steps -> tokens.
// In the fixed path the generated token never leaves the device until the end: argmax
// writes it into the token history, where the next step's embedding reads it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bugs/bug_set.h"
#include "engine/backend.h"
#include "engine/events/event_sink.h"
#include "engine/model/model_config.h"
#include "engine/base/saturating.h"
#include "engine/model/weights.h"

namespace decodelab {

struct Workload {
  int requests = 1;                 // sequences to generate
  int batch_size = 1;               // most sequences decoded together
  int prompt_tokens = 16;           // seeded random prompt length (when prompt_ids is empty)
  std::vector<int32_t> prompt_ids;  // explicit prompt, used for every request
  int new_tokens = 16;              // generated tokens per request (the first comes from prefill)
  uint64_t seed = 0;
  double host_overhead_us = 0.0;    // emulated framework dispatch cost per op enqueued

  int prompt_length() const { return prompt_ids.empty() ? prompt_tokens : static_cast<int>(prompt_ids.size()); }
  int context_length() const { return prompt_length() + new_tokens; }
};

// The prompt of request r: explicit ids, or seeded random ids in [0, vocab).
std::vector<int32_t> prompt_for_request(const Workload& workload, int request, int vocab_size);

// Device-side clocks of one generation, from markers on the stream.
struct GenerationTiming {
  double total_ms = 0;               // host wall time: first enqueue to the final read
  double ttft_ms = 0;                // first group: its start to its first token (device)
  double prefill_ms = 0;             // all groups' prefills
  double decode_ms = 0;              // all groups' decode phases: first token to last step marker (wall, gaps included)
  double decode_busy_ms = 0;         // device busy inside those phases (union of op intervals)
  std::vector<double> step_ms;       // every decode step, in order
  int64_t decode_tokens = 0;         // tokens produced by decode steps, all requests
  int64_t groups = 0;
};

struct GenerationResult {
  std::vector<std::vector<int32_t>> tokens;  // [requests][new_tokens]
  std::vector<float> last_logits;            // [requests * vocab]: logits the last token came from
  int64_t non_finite_logits = 0;             // NaN/Inf among last_logits (found on the host, no extra sync)
  GenerationTiming timing;
};

// Bytes and device memory one generation needs, computed before anything is allocated.
// Every device allocation the engine makes (weights, the bugs' copies and scratch, KV
// cache, activations, token history, logits, positions) is in one of the device parts;
// host_bytes are the host-side copies a generation keeps, which on the CPU backend come
// out of the same memory. Sizes saturate at INT64_MAX instead of wrapping around.
struct MemoryPlan {
  int64_t weight_bytes = 0;
  int64_t extra_weight_bytes = 0;  // e.g. fp32 copies a bug keeps
  int64_t kv_cache_bytes = 0;
  int64_t workspace_bytes = 0;
  int64_t host_bytes = 0;          // host memory, not part of total()
  int64_t total() const { return saturating_add(weight_bytes, extra_weight_bytes, kv_cache_bytes, workspace_bytes); }
};
MemoryPlan plan_memory(const ModelConfig& config, DType dtype, const Workload& workload, const BugSet& bugs);

class Model;

class Engine {
 public:
  Engine(Backend& backend, const ModelConfig& config, ModelWeights weights, const BugSet& bugs);
  // With the weights another engine on the same backend holds (see Model).
  Engine(Backend& backend, const ModelConfig& config, std::shared_ptr<const ModelWeights> weights, const BugSet& bugs);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // One complete generation of the workload. The sink (may be null) sees every op.
  // check_numerics: the weights, then every op's output, are scanned for NaN/Inf as the
  // generation goes (a sync per op); the first found throws NumericalError naming it.
  GenerationResult generate(const Workload& workload, EventSink* sink, bool check_numerics = false);

  const ModelConfig& config() const;
  DType dtype() const;
  const std::shared_ptr<const ModelWeights>& weights() const;

 private:
  Backend& backend_;
  std::unique_ptr<Model> model_;
  BugSet bugs_;
};

}  // namespace decodelab
