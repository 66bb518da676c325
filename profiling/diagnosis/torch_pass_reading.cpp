// Reading a torch.profiler trace: find the passes on the thread that runs the model, read
// each (profiling/diagnosis/torch_pass.h), then cut the passes into request groups and runs and build
// the outline and the reading the checks judge.
#include "profiling/diagnosis/torch_pass_reading.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "profiling/diagnosis/torch_pass.h"

namespace decodelab {

namespace {

TorchThread thread_span(const TorchTrace& trace, int thread) {
  TorchThread span{static_cast<int>(trace.host_events.size()), static_cast<int>(trace.host_events.size())};
  for (size_t i = 0; i < trace.host_events.size(); ++i) {
    if (trace.host_events[i].thread != thread) continue;
    if (span.first == static_cast<int>(trace.host_events.size())) span.first = static_cast<int>(i);
    span.end = static_cast<int>(i) + 1;
  }
  return span;
}

bool graph_launch(const TorchEvent& event) {
  return event.kind == TorchEventKind::Runtime && event.name.find("GraphLaunch") != std::string::npos;
}

// The thread that runs the model: the most top-level embeddings, then the most graph
// launches (a serving engine replaying captured forwards), then the most ops.
int model_thread(const TorchTrace& trace) {
  std::map<int, std::tuple<int, int, int>> counts;  // thread → (embeddings, graph launches, ops)
  for (size_t i = 0; i < trace.host_events.size(); ++i) {
    const TorchEvent& event = trace.host_events[i];
    auto& [embeddings, graphs, ops] = counts[event.thread];
    if (graph_launch(event)) ++graphs;
    if (event.kind != TorchEventKind::CpuOp) continue;
    ++ops;
    if (event.name == "aten::embedding" && trace.top_level_op(static_cast<int>(i))) ++embeddings;
  }
  int best = -1;
  std::tuple<int, int, int> most{-1, -1, -1};
  for (const auto& [thread, count] : counts) {
    if (count > most) most = count, best = thread;
  }
  return best;
}

// The model's vocabulary: the embedding table whose rows an lm_head projects onto (an
// encoder's tables — words, token types, positions — have none), else the axis a next
// token is chosen over, else (a graph replay that hides the embedding) the last projection
// much wider than its input.
TorchModel find_model(const std::vector<TorchOp>& ops) {
  std::vector<const TorchInput*> tables;
  std::set<int64_t> projected, sampled;
  const TorchOp* last_projection = nullptr;
  for (const TorchOp& op : ops) {
    if (op.role == TorchRole::Embedding && op.a && op.a->rank() == 2) tables.push_back(op.a);
    if (op.role == TorchRole::Projection && op.b) projected.insert(op.out_features), last_projection = &op;
    // Logits are floating point: an argmax over token ids (CLIP pools its text so) chooses no token.
    if (op.role == TorchRole::Sampling && op.a && op.a->rank() >= 1 && !torch_float_kind(op.a->type).empty()) {
      sampled.insert(op.a->dims.back());
    }
  }
  TorchModel model;
  for (bool by_sampling : {false, true}) {
    for (const TorchInput* table : tables) {
      const int64_t vocab = table->dims[0];
      if ((by_sampling ? sampled : projected).count(vocab) && vocab > model.vocab) {
        model = TorchModel{table->type, vocab, table->dims[1]};
      }
    }
    if (model.vocab > 0) return model;
  }
  for (int64_t axis : sampled) {
    // Chosen over an axis some projection produces — or, with no embedding in sight (a replayed
    // graph hides the whole forward), over a vocabulary-sized axis.
    if (axis > 1 && (projected.count(axis) || (tables.empty() && axis >= 1000))) model.vocab = std::max(model.vocab, axis);
  }
  if (model.vocab == 0 && tables.empty() && last_projection && last_projection->out_features >= 1000 &&
      last_projection->out_features >= 4 * last_projection->in_features) {
    model.vocab = last_projection->out_features;
  }
  if (model.vocab > 0) {
    for (const TorchOp& op : ops)
      if (op.role == TorchRole::Projection && op.b && op.out_features == model.vocab) {
        model.table_type = op.b->type, model.hidden = op.in_features;
      }
    return model;
  }
  if (!tables.empty()) model.table_type = tables.front()->type, model.hidden = tables.front()->dims[1];
  return model;  // vocab 0: nothing is projected onto a vocabulary
}

std::string lower_text(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// A range named as a decode step: "decode" in any case (sglang's step[DECODE bs=32], a user's
// decode_step), or vLLM's execute_..._context_0(...)_generation_N(...) with N > 0 — a batch of
// requests all past their prompts.
bool decode_range_name(const std::string& name) {
  const std::string text = lower_text(name);
  if (text.find("decode") != std::string::npos) return true;
  const size_t generation = text.find("_generation_");
  const size_t after = generation + std::string("_generation_").size();
  return text.find("_context_0(") != std::string::npos && generation != std::string::npos && after < text.size() &&
         text[after] >= '1' && text[after] <= '9';
}

// Whether pass `next` continues the generation of `previous`: the same sequences, attention
// reading one more position each, and no jump from cached steps back to a prefill.
bool continues(const PassReading& previous, const PassReading& next) {
  if (next.sequences != previous.sequences) return false;
  if (next.key_positions > 0 && previous.key_positions > 0) {
    return next.key_positions == previous.key_positions + 1 &&
           (next.rows_per_sequence() <= 1 || previous.rows_per_sequence() > 1);
  }
  return next.rows_per_sequence() <= 1;
}

int64_t trace_end_of(const TorchTrace& trace, TorchThread span) {
  return span.end > span.first ? trace.host_events[static_cast<size_t>(span.end - 1)].end_ns : 0;
}

template <typename Value>
Value median(std::vector<Value> values) {
  if (values.empty()) return Value{};
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(values.size() / 2), values.end());
  return values[values.size() / 2];
}

// Device busy and idle over the traced span: intervals merged over every stream (the device
// is busy while any stream runs), kernels alone and all activity (copies and memsets too).
void read_device_timeline(const TorchTrace& trace, TraceFacts& facts) {
  if (trace.device_events.empty()) return;
  auto merged = [&](bool kernels_only, int64_t* gaps) {
    int64_t busy = 0, open_begin = -1, open_end = -1;
    for (const TorchEvent& event : trace.device_events) {  // sorted by begin
      if (kernels_only && event.kind != TorchEventKind::Kernel) continue;
      if (open_begin < 0 || event.begin_ns > open_end) {
        if (open_begin >= 0) {
          busy += open_end - open_begin;
          if (gaps) ++*gaps;
        }
        open_begin = event.begin_ns, open_end = event.end_ns;
      } else {
        open_end = std::max(open_end, event.end_ns);
      }
    }
    if (open_begin >= 0) busy += open_end - open_begin;
    return static_cast<double>(busy) * 1e-9;
  };
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const TorchEvent& event : trace.device_events) first = std::min(first, event.begin_ns), last = std::max(last, event.end_ns);
  facts.device_span_seconds = static_cast<double>(last - first) * 1e-9;
  facts.kernel_busy_seconds = merged(true, nullptr);
  facts.device_busy_seconds = merged(false, &facts.idle_gaps);
}

// Whether the passes make an autoregressive generate loop: forwards that end in an lm_head
// (or a choice of a token over the vocabulary), and decode steps that continue a sequence. If
// not, why — and what a single forward still shows (host syncs inside its layers).
void judge_generate_loop(const TorchTrace& trace, const TorchModel& model, size_t producing, TraceReading& reading) {
  TraceFacts& facts = reading.facts;
  const size_t passes = reading.prefills.size() + reading.steps.size();
  if (!trace.shapes) {
    facts.generate_loop = !reading.steps.empty();
    if (!facts.generate_loop) facts.not_diagnosed = "one forward pass and no shapes recorded: no decode step to read";
  } else if (producing == 0) {
    facts.generate_loop = false;
    facts.not_diagnosed = !model.table_type.empty() && model.vocab == 0
                              ? "nothing is projected onto the vocabulary of an embedding table and no next token is "
                                "chosen over one (no lm_head): an encoder, a base model run without its head, or "
                                "another model that does not generate — not a generate loop"
                              : "no projection onto a vocabulary and no choice of a next token over one (no lm_head): "
                                "not a generate loop";
  } else if (reading.steps.empty()) {
    facts.generate_loop = false;
    const PassReading& first = *reading.prefills.front();
    facts.not_diagnosed =
        passes == 1 ? "a single forward pass (" + std::to_string(first.sequences) + " sequence" +
                          (first.sequences == 1 ? "" : "s") + ", " + std::to_string(first.rows) +
                          " rows) ending in an lm_head onto a vocabulary of " + std::to_string(model.vocab) +
                          ", and no decode step after it: one forward is not a generate loop"
                    : std::to_string(passes) + " forward passes ending in an lm_head, none continuing another's "
                          "sequence (attention reads no more positions from one to the next, and no pass runs one "
                          "row per sequence on a cache): not a generate loop";
  }
  if (facts.generate_loop) return;

  // What a forward still shows: device reads inside its layers stall the host mid-model.
  int reads = 0, in_layers = 0;
  std::string example;
  for (const auto* list : {&reading.prefills, &reading.steps})
    for (const PassReading* pass : *list) {
      reads += pass->device_reads + pass->syncs;
      in_layers += pass->reads_in_layers;
      if (example.empty()) example = pass->read_example;
    }
  if (reads > 0) {
    facts.limits.push_back(std::to_string(reads) + " device read" + (reads == 1 ? "" : "s") + " or sync" +
                           (reads == 1 ? "" : "s") + " in the forward" + (passes == 1 ? "" : "s") +
                           (in_layers > 0 ? ", " + std::to_string(in_layers) + " of them inside the layers" : "") +
                           (example.empty() ? "" : " (" + example + ")") +
                           (trace.gpu_runtime ? ": each stops the host until the device has caught up — a stall "
                                                "inside the model, though not a decode-loop bug"
                                              : ": on a GPU each would stop the host until the device caught up"));
  }
}

}  // namespace

TraceReading read_torch_trace(const TorchTrace& trace) {
  TraceReading reading;
  TraceFacts& facts = reading.facts;
  facts.source = "torch.profiler";
  const bool on_gpu = trace.gpu || trace.gpu_runtime || !trace.device.empty();  // kernels need not be recorded
  facts.backend = !on_gpu ? "cpu" : trace.hip ? "rocm" : "cuda";
  facts.device = !trace.device.empty() ? trace.device : on_gpu ? "GPU" : "CPU";
  facts.shapes = trace.shapes;
  facts.strides = trace.strides;
  facts.reads_block = on_gpu;
  if (!trace.kineto) {
    facts.limits.push_back("a legacy torch.profiler export (torch built without Kineto): every event named "
                           "namespace::op is read as an op, every other one as a record_function range");
  }

  read_device_timeline(trace, facts);
  const int thread = model_thread(trace);
  const TorchThread span = thread >= 0 ? thread_span(trace, thread) : TorchThread{};

  // The model's thread once over: its top-level ops (classified), graph launches and ranges.
  struct Range {
    int64_t begin_ns, end_ns;
    bool profiler_step;
    bool decode;  // named as a decode step ("step[DECODE bs=32]", "decode_step", "generation")
  };
  std::vector<Range> ranges;
  std::vector<TorchOp> top_ops;
  std::vector<int> markers;  // top-level ops and graph launches, in time order
  for (int i = span.first; i < span.end; ++i) {
    const TorchEvent& event = trace.host_events[static_cast<size_t>(i)];
    if (event.kind == TorchEventKind::Annotation) {
      const bool step = event.name.rfind("ProfilerStep#", 0) == 0;
      ranges.push_back(Range{event.begin_ns, event.end_ns, step, !step && decode_range_name(event.name)});
    }
    if (graph_launch(event)) markers.push_back(-(i + 1));  // negative: a host event index, not an op
    if (event.kind == TorchEventKind::CpuOp && trace.top_level_op(i)) {
      top_ops.push_back(classify_torch_op(trace, i));
      markers.push_back(static_cast<int>(top_ops.size()) - 1);
    }
  }
  const TorchModel model = find_model(top_ops);
  facts.dtype = torch_float_kind(model.table_type).empty() ? model.table_type : torch_float_kind(model.table_type);
  facts.model = model.vocab > 0 ? "PyTorch model (vocab " + std::to_string(model.vocab) +
                                      (model.hidden > 0 ? ", hidden " + std::to_string(model.hidden) : "") + ")"
                                : "PyTorch program";

  // Passes. All top-level embeddings before the first projection are one pass's inputs
  // (words, token types, positions); a pass begins at an embedding once the open pass did
  // work, or at a graph launch once the open pass produced its logits (or none is open).
  std::vector<int64_t> starts;           // of each pass
  std::vector<int64_t> after_start;      // the end of what began it (the begin of the op after it)
  bool open = false, worked = false, produced = false;
  auto begin_pass = [&](int64_t begin_ns, int64_t end_ns) {
    starts.push_back(begin_ns);
    after_start.push_back(end_ns);
    open = true, worked = false, produced = false;
  };
  for (int marker : markers) {
    if (marker < 0) {  // a graph launch
      const TorchEvent& launch = trace.host_events[static_cast<size_t>(-marker - 1)];
      if (!open || produced) begin_pass(launch.begin_ns, launch.end_ns);
      worked = true;
      continue;
    }
    const TorchOp& op = top_ops[static_cast<size_t>(marker)];
    const TorchEvent& event = trace.host_events[static_cast<size_t>(op.event)];
    switch (op.role) {
      case TorchRole::Embedding:
        if (!open || worked) begin_pass(event.begin_ns, event.end_ns);
        break;
      case TorchRole::Projection:
        worked = true;
        if (!trace.shapes || (model.vocab > 0 && op.out_features == model.vocab)) produced = true;
        break;
      case TorchRole::AttentionMatmul:
      case TorchRole::FusedAttention: worked = true; break;
      case TorchRole::Sampling:
        if (op.a && op.a->rank() >= 1 && model.vocab > 0 && op.a->dims.back() == model.vocab) produced = true;
        break;
      default: break;
    }
  }
  if (starts.empty()) {
    facts.limits.push_back("no top-level aten::embedding and no graph launch on any thread: the forward passes "
                           "could not be found");
    facts.generate_loop = false;
    facts.not_diagnosed = "no forward pass found (no top-level aten::embedding, no cudaGraphLaunch/hipGraphLaunch): "
                          "this trace holds no generate loop";
    return reading;
  }

  auto starts_within = [&starts](const Range& range) {
    return std::upper_bound(starts.begin(), starts.end(), range.end_ns) -
           std::lower_bound(starts.begin(), starts.end(), range.begin_ns);
  };
  // The smallest (or largest) range holding pass i — what began it and the op after it, so
  // that a range around the embedding alone is not taken for the pass — whose number of pass
  // starts passes `test`, or null.
  auto holding = [&](size_t i, bool largest, auto test) -> const Range* {
    const Range* best = nullptr;
    for (const Range& range : ranges) {
      if (range.profiler_step || starts[i] < range.begin_ns || after_start[i] > range.end_ns ||
          !test(starts_within(range))) {
        continue;
      }
      const int64_t length = range.end_ns - range.begin_ns;
      if (!best || (largest ? length > best->end_ns - best->begin_ns : length < best->end_ns - best->begin_ns)) best = &range;
    }
    return best;
  };
  const int64_t trace_end = trace_end_of(trace, span);
  std::vector<int64_t> begins(starts.size()), ends(starts.size());
  std::vector<bool> decode_named(starts.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const Range* own = holding(i, true, [](auto count) { return count == 1; });  // "decode step", not a sub-range
    begins[i] = own ? own->begin_ns : starts[i];
    // A pass runs to the next one (or the end of its group's range): what a step does after
    // its own range — a serving engine samples after step[DECODE ...] closes — is still the step's.
    const Range* group = holding(i, false, [](auto count) { return count >= 2; });
    ends[i] = group ? group->end_ns : trace_end;
    for (const Range& range : ranges)
      if (range.decode && starts[i] >= range.begin_ns && starts[i] <= range.end_ns) decode_named[i] = true;
  }
  for (size_t i = 0; i + 1 < starts.size(); ++i) ends[i] = std::min(ends[i], begins[i + 1]);
  const bool ranged = std::any_of(ranges.begin(), ranges.end(), [](const Range& r) { return !r.profiler_step; });
  if (!ranged && starts.size() > 1) {
    facts.limits.push_back("no record_function ranges: passes were split at each forward's first top-level "
                           "aten::embedding and a new request group begins where attention's key length does not "
                           "grow by one (a new request whose prompt is one token longer than the last sequence would "
                           "read as its continuation)");
  }

  std::vector<TorchPass> drafts;
  std::vector<int> group_keys, run_keys;  // the range holding each pass's group and run, or -1
  for (size_t i = 0; i < starts.size(); ++i) {
    drafts.push_back(read_torch_pass(trace, span, model, begins[i], ends[i]));
    const Range* group = holding(i, false, [](auto count) { return count >= 2; });
    group_keys.push_back(group ? static_cast<int>(group - ranges.data()) : -1);
    run_keys.push_back(-1);
    for (size_t r = 0; r < ranges.size(); ++r) {
      if (ranges[r].profiler_step && starts[i] >= ranges[r].begin_ns && starts[i] <= ranges[r].end_ns) run_keys.back() = static_cast<int>(r);
    }
  }
  if (trace.shapes && std::all_of(drafts.begin(), drafts.end(), [](const TorchPass& d) { return d.reading.attention_ops == 0; })) {
    facts.limits.push_back("no attention recognised (two batched matmuls around a softmax, or "
                           "scaled_dot_product_attention): what attention reads and copies could not be checked");
  }

  // A pass that opens a group is its prefill, unless it is shaped (or named) as a decode
  // step: one row per sequence attending to cached positions, or a range named a decode
  // step — a trace that begins inside a generation, as a serving engine's decode trace does.
  auto step_shaped = [&](size_t i) {
    const PassReading& pass = drafts[i].reading;
    if (decode_named[i] && drafts[i].output) return true;
    return trace.shapes && pass.sequences > 0 && pass.rows > 0 && pass.rows_per_sequence() <= 1 && pass.key_positions > 1;
  };

  // Runs → groups → passes, the outline first (the readings point into it).
  std::vector<std::vector<std::vector<size_t>>> layout;  // run → group → drafts
  std::vector<std::vector<bool>> opens_with_prefill;
  for (size_t i = 0; i < drafts.size(); ++i) {
    const bool new_run = i == 0 || run_keys[i] != run_keys[i - 1];
    const bool new_group = new_run || group_keys[i] != group_keys[i - 1] ||
                           (trace.shapes && !continues(drafts[i - 1].reading, drafts[i].reading));
    if (new_run) layout.emplace_back(), opens_with_prefill.emplace_back();
    if (new_group) layout.back().emplace_back(), opens_with_prefill.back().push_back(!step_shaped(i));
    layout.back().back().push_back(i);
  }
  for (size_t r = 0; r < layout.size(); ++r) {
    RunOutline& run_outline = reading.outline.runs.emplace_back();
    for (size_t g = 0; g < layout[r].size(); ++g) {
      const auto& group = layout[r][g];
      const bool prefill_first = opens_with_prefill[r][g];
      GroupOutline& group_outline = run_outline.groups.emplace_back();
      group_outline.index = static_cast<int>(run_outline.groups.size()) - 1;
      for (size_t k = 0; k < group.size(); ++k) {
        TorchPass& draft = drafts[group[k]];
        PassOutline pass;
        pass.prefill = k == 0 && prefill_first;
        pass.step = pass.prefill ? -1 : static_cast<int>(k) - (prefill_first ? 1 : 0);
        pass.begin_ns = draft.begin_ns, pass.end_ns = draft.end_ns;
        pass.ops = std::move(draft.ops), pass.op_layers = std::move(draft.op_layers);
        pass.calls = std::move(draft.calls), pass.call_layers = std::move(draft.call_layers);
        group_outline.calls.insert(group_outline.calls.end(), pass.calls.begin(), pass.calls.end());
        group_outline.passes.push_back(std::move(pass));
      }
    }
  }
  std::vector<int> attention_counts;
  size_t producing = 0;
  for (size_t r = 0; r < layout.size(); ++r) {
    std::vector<GroupReading>& groups = reading.runs.emplace_back();
    for (size_t g = 0; g < layout[r].size(); ++g) {
      GroupReading& group = groups.emplace_back();
      group.group = &reading.outline.runs[r].groups[g];
      for (size_t k = 0; k < layout[r][g].size(); ++k) {
        TorchPass& draft = drafts[layout[r][g][k]];
        draft.reading.pass = &group.group->passes[k];
        producing += draft.output;
        if (draft.reading.attention_ops > 0) attention_counts.push_back(draft.reading.attention_ops);
        const bool prefill = draft.reading.pass->prefill;
        // A step that recomputes every position it attends to has no cache: a copy feeding
        // its attention copies its own projections, not a cache.
        // Likewise a strided K/V view there is a view of its own projections.
        if (!prefill && draft.reading.multi_row() &&
            draft.reading.key_positions <= static_cast<int64_t>(draft.reading.rows_per_sequence())) {
          draft.reading.bytes -= draft.reading.cache_copy_bytes;
          draft.reading.fresh_copies = draft.reading.cache_copies + draft.reading.strided_attention_ops;
          draft.reading.cache_copies = 0, draft.reading.cache_copy_bytes = 0;
          draft.reading.strided_attention_ops = 0;
        }
        (prefill ? group.prefills : group.steps).push_back(std::move(draft.reading));
      }
    }
  }
  facts.layers = median(attention_counts);

  // Prompt uploads (host-to-device copies) belong to the group whose passes follow them.
  std::vector<int64_t> uploads;
  for (int i = span.first; i < span.end; ++i) {
    const TorchEvent& call = trace.host_events[static_cast<size_t>(i)];
    if (call.kind != TorchEventKind::Runtime || call.device_activity < 0) continue;
    const TorchEvent& activity = trace.device_events[static_cast<size_t>(call.device_activity)];
    if (activity.kind == TorchEventKind::Memcpy && activity.name.find("HtoD") != std::string::npos) uploads.push_back(call.begin_ns);
  }
  int64_t previous_end = INT64_MIN;
  for (size_t r = 0; r < reading.runs.size(); ++r)
    for (size_t g = 0; g < reading.runs[r].size(); ++g) {
      const int64_t end = reading.outline.runs[r].groups[g].passes.back().end_ns;
      reading.runs[r][g].uploads = std::count_if(uploads.begin(), uploads.end(),
                                                 [&](int64_t ns) { return ns > previous_end && ns <= end; });
      previous_end = end;
    }
  reading.index_passes();
  judge_generate_loop(trace, model, producing, reading);
  return reading;
}

}  // namespace decodelab
