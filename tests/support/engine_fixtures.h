// Shared helpers for engine tests: the lab-tiny shape and a one-call generation on the CPU
// backend (engine/events/op_stream.h records what the engine reported, ops per step).
#pragma once

#include "bugs/bug_set.h"
#include "engine/backend.h"
#include "engine/events/event_sink.h"
#include "engine/model/generator.h"
#include "engine/model/model_config.h"

namespace decodelab::testing {

// vocab 512, hidden 128, intermediate 352, 2 layers, 4 heads, 2 KV heads.
ModelConfig lab_tiny_config();

struct GenerationCase {
  ModelConfig config = lab_tiny_config();
  DType dtype = DType::F32;
  Workload workload;
  BugSet bugs;
  uint64_t weight_seed = 7;
};

GenerationResult generate_on_cpu(const GenerationCase& test_case, EventSink* sink = nullptr);

}  // namespace decodelab::testing
