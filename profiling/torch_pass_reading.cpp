// Reading a torch.profiler trace: find the passes on the thread that runs the model, read
// each (profiling/torch_pass.h), then cut the passes into request groups and runs and build
// the outline and the reading the checks judge.
#include "profiling/torch_pass_reading.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>

#include "profiling/torch_pass.h"

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

// The thread that runs the model: the most top-level embeddings (then the most ops).
int model_thread(const TorchTrace& trace) {
  std::map<int, std::pair<int, int>> counts;  // thread → (embeddings, ops)
  for (size_t i = 0; i < trace.host_events.size(); ++i) {
    const TorchEvent& event = trace.host_events[i];
    if (event.kind != TorchEventKind::CpuOp) continue;
    auto& [embeddings, ops] = counts[event.thread];
    ++ops;
    if (event.name == "aten::embedding" && trace.top_level_op(static_cast<int>(i))) ++embeddings;
  }
  int best = -1;
  std::pair<int, int> most{-1, -1};
  for (const auto& [thread, count] : counts) {
    if (count > most) most = count, best = thread;
  }
  return best;
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

}  // namespace

TraceReading read_torch_trace(const TorchTrace& trace) {
  TraceReading reading;
  TraceFacts& facts = reading.facts;
  facts.source = "torch.profiler";
  facts.backend = trace.gpu ? "cuda" : "cpu";
  facts.device = !trace.device.empty() ? trace.device : trace.gpu ? "GPU" : "CPU";
  facts.shapes = trace.shapes;
  facts.strides = trace.strides;
  facts.reads_block = trace.gpu;
  if (!trace.kineto) {
    facts.limits.push_back("a legacy torch.profiler export (torch built without Kineto): every event named "
                           "namespace::op is read as an op, every other one as a record_function range");
  }

  const int thread = model_thread(trace);
  const TorchThread span = thread >= 0 ? thread_span(trace, thread) : TorchThread{};
  std::vector<int64_t> starts;           // of each pass: its top-level aten::embedding
  std::vector<int64_t> after_embedding;  // the begin of the next top-level op
  int64_t embedding_end = 0;
  TorchModel model;
  struct Range {
    int64_t begin_ns, end_ns;
    bool profiler_step;
  };
  std::vector<Range> ranges;
  for (int i = span.first; i < span.end; ++i) {
    const TorchEvent& event = trace.host_events[static_cast<size_t>(i)];
    if (event.kind == TorchEventKind::Annotation) {
      ranges.push_back(Range{event.begin_ns, event.end_ns, event.name.rfind("ProfilerStep#", 0) == 0});
    }
    if (event.kind == TorchEventKind::CpuOp && !starts.empty() && after_embedding.size() < starts.size() &&
        event.begin_ns >= embedding_end && trace.top_level_op(i)) {
      after_embedding.push_back(event.begin_ns);
    }
    if (event.name != "aten::embedding" || !trace.top_level_op(i)) continue;
    starts.push_back(event.begin_ns);
    embedding_end = event.end_ns;
    if (model.vocab == 0 && !event.inputs.empty() && event.inputs[0].rank() == 2) {
      model.table_type = event.inputs[0].type;
      model.vocab = event.inputs[0].dims[0];
      model.hidden = event.inputs[0].dims[1];
    }
  }
  facts.dtype = torch_float_kind(model.table_type).empty() ? model.table_type : torch_float_kind(model.table_type);
  facts.model = model.vocab > 0 ? "PyTorch decoder (vocab " + std::to_string(model.vocab) + ", hidden " +
                                      std::to_string(model.hidden) + ")"
                                : "PyTorch program";
  after_embedding.resize(starts.size(), trace_end_of(trace, span));
  if (starts.empty()) {
    facts.limits.push_back("no top-level aten::embedding on any thread: the forward passes could not be found");
    return reading;
  }

  auto starts_within = [&starts](const Range& range) {
    return std::upper_bound(starts.begin(), starts.end(), range.end_ns) -
           std::lower_bound(starts.begin(), starts.end(), range.begin_ns);
  };
  // The smallest (or largest) range holding pass i — its embedding and the op after it, so
  // that a range around the embedding alone is not taken for the pass — whose number of pass
  // starts passes `test`, or null.
  auto holding = [&](size_t i, bool largest, auto test) -> const Range* {
    const Range* best = nullptr;
    for (const Range& range : ranges) {
      if (range.profiler_step || starts[i] < range.begin_ns || after_embedding[i] > range.end_ns ||
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
  for (size_t i = 0; i < starts.size(); ++i) {
    const Range* own = holding(i, true, [](auto count) { return count == 1; });  // "decode step", not a sub-range
    begins[i] = own ? own->begin_ns : starts[i];
    const Range* around = holding(i, false, [](auto) { return true; });
    ends[i] = own ? own->end_ns : around ? around->end_ns : trace_end;
  }
  for (size_t i = 0; i + 1 < starts.size(); ++i) ends[i] = std::min(ends[i], begins[i + 1]);
  const bool ranged = std::any_of(ranges.begin(), ranges.end(), [](const Range& r) { return !r.profiler_step; });
  if (!ranged) {
    facts.limits.push_back("no record_function ranges: passes were split at each top-level aten::embedding and a new "
                           "request group begins where attention's key length does not grow by one (a new request "
                           "whose prompt is one token longer than the last sequence would read as its continuation)");
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

  // Runs → groups → passes, the outline first (the readings point into it).
  std::vector<std::vector<std::vector<size_t>>> layout;  // run → group → drafts
  for (size_t i = 0; i < drafts.size(); ++i) {
    const bool new_run = i == 0 || run_keys[i] != run_keys[i - 1];
    const bool new_group = new_run || group_keys[i] != group_keys[i - 1] ||
                           (trace.shapes && !continues(drafts[i - 1].reading, drafts[i].reading));
    if (new_run) layout.emplace_back();
    if (new_group) layout.back().emplace_back();
    layout.back().back().push_back(i);
  }
  for (const auto& run : layout) {
    RunOutline& run_outline = reading.outline.runs.emplace_back();
    for (const auto& group : run) {
      GroupOutline& group_outline = run_outline.groups.emplace_back();
      group_outline.index = static_cast<int>(run_outline.groups.size()) - 1;
      for (size_t k = 0; k < group.size(); ++k) {
        TorchPass& draft = drafts[group[k]];
        PassOutline pass;
        pass.prefill = k == 0;
        pass.step = k == 0 ? -1 : static_cast<int>(k) - 1;
        pass.begin_ns = draft.begin_ns, pass.end_ns = draft.end_ns;
        pass.ops = std::move(draft.ops), pass.op_layers = std::move(draft.op_layers);
        pass.calls = std::move(draft.calls), pass.call_layers = std::move(draft.call_layers);
        group_outline.calls.insert(group_outline.calls.end(), pass.calls.begin(), pass.calls.end());
        group_outline.passes.push_back(std::move(pass));
      }
    }
  }
  std::vector<int> attention_counts;
  for (size_t r = 0; r < layout.size(); ++r) {
    std::vector<GroupReading>& groups = reading.runs.emplace_back();
    for (size_t g = 0; g < layout[r].size(); ++g) {
      GroupReading& group = groups.emplace_back();
      group.group = &reading.outline.runs[r].groups[g];
      for (size_t k = 0; k < layout[r][g].size(); ++k) {
        TorchPass& draft = drafts[layout[r][g][k]];
        draft.reading.pass = &group.group->passes[k];
        attention_counts.push_back(draft.reading.attention_ops);
        (k == 0 ? group.prefills : group.steps).push_back(std::move(draft.reading));
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
  return reading;
}

}  // namespace decodelab
