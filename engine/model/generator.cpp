// The decode loop, read as a recipe: for each group of requests — upload the prompts,
// prefill, then decode step after step — and read the tokens back once, at the end.
// Device-side clocks come from markers on the stream, so what is timed is what the device
// lived through, gaps included.
#include "engine/model/generator.h"

#include <algorithm>
#include <cmath>

#include "bugs/deviations.h"
#include "engine/base/clock.h"
#include "engine/base/errors.h"
#include "engine/model/model.h"
#include "engine/ops.h"
#include "engine/base/saturating.h"

namespace decodelab {

namespace {

uint64_t mix(uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

double elapsed_ms(int64_t begin_ns, int64_t end_ns) { return static_cast<double>(end_ns - begin_ns) / 1e6; }

// Most rows one forward pass needs: the prompt, or the whole prefix without a KV cache.
int64_t max_rows_per_pass(const Workload& workload, const BugSet& bugs, int group) {
  const int64_t rows_per_sequence = bugs.no_kv_cache ? int64_t{workload.prompt_length()} + workload.new_tokens - 1
                                                     : workload.prompt_length();
  return saturating_mul(group, std::max<int64_t>(rows_per_sequence, 1));
}

}  // namespace

std::vector<int32_t> prompt_for_request(const Workload& workload, int request, int vocab_size) {
  if (!workload.prompt_ids.empty()) return workload.prompt_ids;
  std::vector<int32_t> prompt(workload.prompt_tokens);
  for (int i = 0; i < workload.prompt_tokens; ++i) {
    const uint64_t bits = mix(mix(workload.seed ^ 0x70726f6d7074ull) + static_cast<uint64_t>(request) * 1000003ull + i);
    prompt[i] = static_cast<int32_t>(bits % static_cast<uint64_t>(vocab_size));
  }
  return prompt;
}

MemoryPlan plan_memory(const ModelConfig& config, DType dtype, const Workload& workload, const BugSet& bugs) {
  MemoryPlan plan;
  const int64_t group = bugs::group_size(bugs, std::min(workload.batch_size, workload.requests));
  const int64_t max_rows = max_rows_per_pass(workload, bugs, static_cast<int>(group));
  const int64_t context = int64_t{workload.prompt_length()} + workload.new_tokens;
  const int64_t element = static_cast<int64_t>(dtype_size(dtype));
  plan.weight_bytes = config.weight_bytes(dtype);
  plan.extra_weight_bytes = is_half(dtype) ? Model::extra_weight_bytes(config, bugs) : 0;
  plan.kv_cache_bytes =
      KvCache::bytes_needed(config.num_hidden_layers, group, context, config.num_key_value_heads, config.head_dim, dtype);
  // Model::reserve() (activations, bug scratch) + RoPE frequencies + generate()'s own buffers.
  plan.workspace_bytes = saturating_add(Model::workspace_sizes(config, dtype, bugs, group, context, max_rows).total(),
                                        Model::constant_bytes(config),
                                        saturating_mul(workload.requests, context, 4),                  // token history
                                        saturating_mul(workload.requests, config.vocab_size, element),  // logits
                                        saturating_mul(max_rows, 4), saturating_mul(group, 4));         // positions
  // Host copies generate() keeps: tokens read back and the result's tokens; raw and float logits.
  plan.host_bytes = saturating_add(saturating_mul(workload.requests, context, 4 * 2),
                                   saturating_mul(workload.requests, config.vocab_size, element + 4));
  return plan;
}

Engine::Engine(Backend& backend, const ModelConfig& config, ModelWeights weights, const BugSet& bugs)
    : Engine(backend, config, std::make_shared<const ModelWeights>(std::move(weights)), bugs) {}

Engine::Engine(Backend& backend, const ModelConfig& config, std::shared_ptr<const ModelWeights> weights,
               const BugSet& bugs)
    : backend_(backend), model_(std::make_unique<Model>(backend, config, std::move(weights), bugs)), bugs_(bugs) {}

Engine::~Engine() = default;

const ModelConfig& Engine::config() const { return model_->config(); }
DType Engine::dtype() const { return model_->dtype(); }
const std::shared_ptr<const ModelWeights>& Engine::weights() const { return model_->weights(); }

GenerationResult Engine::generate(const Workload& workload, EventSink* sink, bool check_numerics) {
  const ModelConfig& config = model_->config();
  const DType dtype = model_->dtype();
  const int requests = workload.requests;
  const int prompt_length = workload.prompt_length();
  const int context = workload.context_length();
  const int group_size = bugs::group_size(bugs_, std::min(workload.batch_size, requests));
  const int64_t rows_needed = max_rows_per_pass(workload, bugs_, group_size);
  // Positions and row indices are int32 on the device (the memory plan refuses far smaller requests first).
  if (rows_needed > INT32_MAX)
    throw ResourceError("a forward pass of " + std::to_string(rows_needed) + " rows exceeds the engine's 2^31 - 1");
  const int max_rows = static_cast<int>(rows_needed);

  // Device state of the whole run: every request's token history and last logits.
  model_->reserve(group_size, context, max_rows);
  DeviceBuffer history_buffer(backend_, static_cast<size_t>(requests) * context * 4);
  DeviceBuffer logits_buffer(backend_, static_cast<size_t>(requests) * config.vocab_size * dtype_size(dtype));
  DeviceBuffer pass_positions(backend_, static_cast<size_t>(max_rows) * 4);
  DeviceBuffer step_positions(backend_, static_cast<size_t>(group_size) * 4);
  const Tensor history = Tensor::contiguous(history_buffer.get(), DType::I32, {requests, context});
  const Tensor all_logits = Tensor::contiguous(logits_buffer.get(), dtype, {requests, config.vocab_size});

  std::vector<int32_t> host_history(static_cast<size_t>(requests) * context, 0);
  for (int request = 0; request < requests; ++request) {
    const std::vector<int32_t> prompt = prompt_for_request(workload, request, config.vocab_size);
    std::copy(prompt.begin(), prompt.end(), host_history.begin() + static_cast<size_t>(request) * context);
  }

  Ops ops(backend_, sink, workload.host_overhead_us);
  ops.set_check_numerics(check_numerics);
  if (check_numerics) model_->check_weights_finite(ops);
  // A decode step is capturable when its ops do not change from step to step: not when
  // the prefix is recomputed or the cache copied at a growing length, nor with host reads
  // inside the step (checking numerics reads after every op).
  const bool use_graphs = ops.graphs_available() && !check_numerics && !bugs_.no_kv_cache && !bugs_.host_sync &&
                          !(bugs_.non_contiguous && bugs_.non_contiguous_mode == NonContiguousMode::Copy);
  GenerationResult result;
  GenerationTiming& timing = result.timing;
  struct GroupMarkers {
    OpId start = 0, first_token = 0;
    std::vector<OpId> steps;
  };
  std::vector<GroupMarkers> markers;

  if (sink) sink->before_run();  // before the run's clock starts
  const int64_t run_begin = now_ns();
  ops.range_begin(RangeKind::Run);
  for (int first = 0, group = 0; first < requests; first += group_size, ++group) {
    const int sequences = std::min(group_size, requests - first);
    GroupMarkers& marks = markers.emplace_back();
    ops.range_begin(RangeKind::Group, group);
    marks.start = ops.marker("group_start");

    ForwardPass pass;
    pass.sequences = sequences;
    pass.tokens = history.rows(first, sequences);
    pass.logits = all_logits.rows(first, sequences);
    ops.upload(pass.tokens.data, host_history.data() + static_cast<size_t>(first) * context,
               static_cast<size_t>(sequences) * context * 4);

    // Prefill: the whole prompt in one pass; its last row gives the first new token.
    ops.range_begin(RangeKind::Prefill, group);
    pass.rows_per_sequence = prompt_length;
    pass.first_position = 0;
    pass.positions = Tensor::contiguous(pass_positions.get(), DType::I32, {int64_t{sequences} * prompt_length});
    ops.fill_positions(pass.positions, 0, prompt_length);
    model_->forward(ops, pass);
    marks.first_token = ops.marker("first_token");
    ops.range_end(RangeKind::Prefill, group);

    // Decode: one token per sequence per step, positions kept on the device.
    pass.rows_per_sequence = 1;
    pass.positions = Tensor::contiguous(step_positions.get(), DType::I32, {sequences});
    ops.fill_positions(pass.positions, prompt_length, 1);
    bool step_captured = false;
    for (int step = 1; step < workload.new_tokens; ++step) {
      ops.range_begin(RangeKind::Step, step);
      pass.first_position = prompt_length + step - 1;
      if (use_graphs) {
        // Every fixed decode step runs the same ops on the same buffers (positions and
        // tokens live on the device): capture one, replay it each step.
        if (!step_captured) {
          ops.begin_capture();
          model_->forward(ops, pass);
          ops.advance_positions(pass.positions);
          ops.end_capture();
          step_captured = true;
        }
        ops.replay_captured("decode_step");
      } else if (bugs_.no_kv_cache) {
        const Tensor prefix_positions = Tensor::contiguous(pass_positions.get(), DType::I32, {max_rows});
        bugs::decode_step_without_cache(*model_, ops, pass, prefix_positions);
      } else {
        model_->forward(ops, pass);
      }
      if (!use_graphs) ops.advance_positions(pass.positions);
      if (bugs_.host_sync) bugs::sync_after_step(ops, bugs_, pass.tokens, pass.first_position + 1, sequences);
      marks.steps.push_back(ops.marker("step_end"));
      ops.range_end(RangeKind::Step, step);
    }
    ops.range_end(RangeKind::Group, group);
  }

  // The only read of the fixed path: every token and the last logits, once.
  std::vector<uint16_t> logits_host(static_cast<size_t>(all_logits.bytes() / 2));
  ops.read_to_host(host_history.data(), history.data, history.bytes(), /*pinned=*/true, "tokens");
  ops.read_to_host(logits_host.data(), all_logits.data, all_logits.bytes(), /*pinned=*/true, "logits");
  ops.synchronize();
  ops.range_end(RangeKind::Run);
  timing.total_ms = elapsed_ms(run_begin, now_ns());

  result.tokens.resize(requests);
  for (int request = 0; request < requests; ++request) {
    const auto row = host_history.begin() + static_cast<size_t>(request) * context;
    result.tokens[request].assign(row + prompt_length, row + context);
  }
  result.last_logits.resize(static_cast<size_t>(all_logits.numel()));
  for (size_t i = 0; i < result.last_logits.size(); ++i) {
    result.last_logits[i] = load_as_float(logits_host.data(), dtype, i);
    if (!std::isfinite(result.last_logits[i])) ++result.non_finite_logits;
  }

  auto time_of = [&ops](OpId marker) { return ops.marker_time_ns(marker).value_or(0); };
  for (size_t group = 0; group < markers.size(); ++group) {
    const GroupMarkers& marks = markers[group];
    const double prefill = elapsed_ms(time_of(marks.start), time_of(marks.first_token));
    if (group == 0) timing.ttft_ms = prefill;
    timing.prefill_ms += prefill;
    int64_t previous = time_of(marks.first_token);
    for (OpId step : marks.steps) {
      timing.step_ms.push_back(elapsed_ms(previous, time_of(step)));
      previous = time_of(step);
    }
    timing.decode_ms += elapsed_ms(time_of(marks.first_token), previous);
    if (!marks.steps.empty()) timing.decode_busy_ms += ops.busy_ns_between(marks.first_token, marks.steps.back()) / 1e6;
    const int sequences = std::min(group_size, requests - static_cast<int>(group) * group_size);
    timing.decode_tokens += int64_t{sequences} * static_cast<int64_t>(marks.steps.size());
  }
  timing.groups = static_cast<int64_t>(markers.size());
  return result;
}

}  // namespace decodelab
