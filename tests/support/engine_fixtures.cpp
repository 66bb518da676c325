// Engine test helpers (see engine_fixtures.h).
#include "tests/support/engine_fixtures.h"

#include "engine/model/weights.h"

namespace decodelab::testing {

ModelConfig lab_tiny_config() {
  ModelConfig config;
  config.name = "lab-tiny";
  config.vocab_size = 512;
  config.hidden_size = 128;
  config.intermediate_size = 352;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.max_position_embeddings = 1024;
  config.finalize_and_validate();
  return config;
}

GenerationResult generate_on_cpu(const GenerationCase& test_case, EventSink* sink) {
  auto backend = make_backend(BackendKind::Cpu, {});
  Engine engine(*backend, test_case.config,
                random_weights(*backend, test_case.config, test_case.dtype, test_case.weight_seed), test_case.bugs);
  return engine.generate(test_case.workload, sink);
}

}  // namespace decodelab::testing
