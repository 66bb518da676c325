// The engine against the independent double-precision reference (tests/support/
// reference_llama): logits and greedy tokens, on lab-tiny-shaped models from the random
// init and from generated safetensors checkpoints (GQA, tied and untied, with and without
// llama3 rope scaling), in fp32, fp16 and bf16; on the CPU backend and, where a device is
// usable, on CUDA with and without graphs (DECODELAB_REQUIRE_CUDA=1 fails without one).
// Half-precision runs round every activation, so tokens are compared only while the
// reference's top-2 gap is wider than the logit tolerance (beyond that a different choice
// is legitimate, and everything after it diverges). The tolerance is engine/model/logit_tolerance.h's,
// the one the GPU check's logit comparisons use.
#include <catch2/catch.hpp>
#include <cmath>

#include "engine/model/generator.h"
#include "engine/checkpoint/hf_checkpoint.h"
#include "engine/model/logit_tolerance.h"
#include "tests/cuda_test_support.h"
#include "tests/support/engine_fixtures.h"
#include "tests/support/reference_llama.h"
#include "tests/support/safetensors_writer.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

constexpr int kNewTokens = 8;

// A backend held to the reference: its kind, and CUDA graphs on or off.
struct BackendUnderTest {
  BackendKind kind = BackendKind::Cpu;
  bool graphs = false;
  std::unique_ptr<Backend> make() const {
    BackendOptions options;
    options.cuda_graphs = graphs;
    return make_backend(kind, options);
  }
};

// The CPU always; CUDA with and without graphs where a device is usable. Without one,
// DECODELAB_REQUIRE_CUDA=1 (the GPU check) fails here instead of leaving CUDA out.
std::vector<BackendUnderTest> backends_present() {
  std::vector<BackendUnderTest> backends = {{BackendKind::Cpu, false}};
  if (cuda_device_available()) {
    backends.push_back({BackendKind::Cuda, false});
    backends.push_back({BackendKind::Cuda, true});
  } else if (cuda_test::cuda_required()) {
    FAIL("DECODELAB_REQUIRE_CUDA=1 and no usable CUDA device: " << cuda_unavailable_reason());
  }
  return backends;
}

double logit_scale(const std::vector<double>& reference) {
  double largest = 1.0;
  for (double value : reference) largest = std::max(largest, std::abs(value));
  return largest;
}

// max |engine - reference| / scale over one row.
double relative_error(const float* engine, const std::vector<double>& reference) {
  double worst = 0;
  for (size_t i = 0; i < reference.size(); ++i) worst = std::max(worst, std::abs(engine[i] - reference[i]));
  return worst / logit_scale(reference);
}

ModelConfig tiny_variant(bool tied, bool llama3) {
  ModelConfig config = lab_tiny_config();  // vocab 512, hidden 128, inter 352, 2 layers, 4 heads, 2 KV heads
  config.tie_word_embeddings = tied;
  if (llama3) {
    // A short original context, so that the scaled bands matter at these short positions.
    config.rope_scaling = {true, 8.0, 1.0, 4.0, 64};
  }
  REQUIRE(config.finalize_and_validate().empty());
  return config;
}

// Runs the engine twice (1 and kNewTokens new tokens) and checks it against the reference.
void check_engine_against_reference(Backend& backend, const ModelConfig& config, ModelWeights weights,
                                    const ReferenceLlama& reference) {
  const DType dtype = weights.dtype;
  const double tolerance = logit_tolerance(dtype);
  Engine engine(backend, config, std::move(weights), BugSet{});

  Workload workload;
  workload.requests = 2;
  workload.batch_size = 2;
  workload.prompt_tokens = 11;
  workload.seed = 29;
  workload.new_tokens = 1;
  const GenerationResult first_step = engine.generate(workload, nullptr);
  workload.new_tokens = kNewTokens;
  const GenerationResult generation = engine.generate(workload, nullptr);

  for (int request = 0; request < workload.requests; ++request) {
    INFO("backend " << backend.name() << (backend.supports_graphs() ? ", CUDA graphs" : ""));
    const std::vector<int32_t> prompt = prompt_for_request(workload, request, config.vocab_size);
    const ReferenceLlama::Generation expected = reference.generate_greedy(prompt, kNewTokens);
    INFO("dtype " << dtype_name(dtype) << ", request " << request);

    // The first token's logits (from prefill).
    const float* first_logits = first_step.last_logits.data() + static_cast<size_t>(request) * config.vocab_size;
    const double first_error = relative_error(first_logits, expected.step_logits[0]);
    INFO("first-step logits: worst relative error " << first_error << " (tolerance " << tolerance << ")");
    CHECK(first_error <= tolerance);

    // Greedy tokens, while the reference's choice is unambiguous at this tolerance.
    const std::vector<int32_t>& tokens = generation.tokens[request];
    REQUIRE(tokens.size() == kNewTokens);
    int compared = 0;
    for (int step = 0; step < kNewTokens; ++step) {
      const std::vector<double>& logits = expected.step_logits[step];
      if (top2_gap(logits) <= tolerance * logit_scale(logits)) break;
      INFO("step " << step);
      CHECK(tokens[step] == expected.tokens[step]);
      ++compared;
    }
    INFO("tokens compared: " << compared << " of " << kNewTokens);
    CHECK(compared >= (dtype == DType::F32 ? kNewTokens : 1));

    if (compared == kNewTokens) {  // same trajectory: the last logits are comparable too
      const float* last_logits = generation.last_logits.data() + static_cast<size_t>(request) * config.vocab_size;
      const double last_error = relative_error(last_logits, expected.step_logits[kNewTokens - 1]);
      INFO("last-step logits: worst relative error " << last_error);
      CHECK(last_error <= tolerance);
    }
  }
}

}  // namespace

TEST_CASE("engine vs reference: random init, lab-tiny", "[engine_reference]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  const bool tied = GENERATE(false, true);
  const BackendUnderTest under_test = GENERATE(from_range(backends_present()));
  auto backend = under_test.make();
  const ModelConfig config = tiny_variant(tied, /*llama3=*/false);
  ModelWeights weights = random_weights(*backend, config, dtype, /*seed=*/7);
  const ReferenceLlama reference(config, reference_weights_from_device(*backend, config, weights));

  check_engine_against_reference(*backend, config, std::move(weights), reference);
}

TEST_CASE("engine vs reference: generated safetensors checkpoints", "[engine_reference]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16);
  const bool tied = GENERATE(false, true);
  const bool llama3 = GENERATE(false, true);
  const BackendUnderTest under_test = GENERATE(from_range(backends_present()));
  auto backend = under_test.make();
  ScratchDirectory directory("engine-reference");
  const ModelConfig written = tiny_variant(tied, llama3);
  write_checkpoint(directory.path(), written, {.dtype = dtype, .seed = 13, .shards = tied ? 1 : 2});

  const ModelConfig config = read_hf_config(directory / "config.json");
  ModelWeights weights = load_hf_weights(*backend, directory.path(), config, dtype);
  const ReferenceLlama reference(config, reference_weights_from_checkpoint(directory.path(), config));

  INFO("tied " << tied << ", llama3 " << llama3);
  check_engine_against_reference(*backend, config, std::move(weights), reference);
}

TEST_CASE("engine vs reference: an fp32 checkpoint run in bf16", "[engine_reference]") {
  // The loader rounds the weights; the reference reads them back from the device.
  const BackendUnderTest under_test = GENERATE(from_range(backends_present()));
  auto backend = under_test.make();
  ScratchDirectory directory("engine-reference-convert");
  const ModelConfig config = tiny_variant(/*tied=*/false, /*llama3=*/true);
  write_checkpoint(directory.path(), config, {.dtype = DType::F32, .seed = 17});
  ModelWeights weights = load_hf_weights(*backend, directory.path(), config, DType::BF16);
  const ReferenceLlama reference(config, reference_weights_from_device(*backend, config, weights));

  check_engine_against_reference(*backend, config, std::move(weights), reference);
}

TEST_CASE("reference: the llama3 scaling changes the logits at these positions", "[engine_reference]") {
  // Guards the checkpoint cases above: with a scaling too weak to matter they would
  // pass even if the engine ignored it.
  ScratchDirectory directory("reference-llama3");
  const ModelConfig scaled = tiny_variant(false, true);
  ModelConfig plain = scaled;
  plain.rope_scaling = RopeScaling{};
  write_checkpoint(directory.path(), scaled, {.seed = 13});
  const ReferenceLlama with_scaling(scaled, reference_weights_from_checkpoint(directory.path(), scaled));
  const ReferenceLlama without_scaling(plain, reference_weights_from_checkpoint(directory.path(), plain));

  std::vector<int32_t> tokens(20);
  for (int i = 0; i < 20; ++i) tokens[i] = (i * 37 + 5) % scaled.vocab_size;
  const std::vector<double> a = with_scaling.last_logits(tokens);
  const std::vector<double> b = without_scaling.last_logits(tokens);
  std::vector<float> a_as_float(a.begin(), a.end());

  CHECK(relative_error(a_as_float.data(), b) > 100 * logit_tolerance(DType::F32));
}
