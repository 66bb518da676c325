// Building the outline: the closed ranges of each kind in begin order, then each lower
// level hung under the upper level that holds its begin, then every op and host call
// placed by binary search over the passes and the layers.
#include "profiling/diagnosis/trace_outline.h"

#include <algorithm>

namespace decodelab {

namespace {

struct Span {
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  int index = -1;  // the range's own index (group, step or layer number)
};

std::vector<Span> spans_of(const Trace& trace, RangeKind kind) {
  std::vector<Span> spans;
  for (const TraceRange& range : trace.ranges()) {
    if (range.kind == kind && range.closed()) spans.push_back(Span{range.begin_ns, range.end_ns, range.index});
  }
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin_ns < b.begin_ns; });
  return spans;
}

// Position of the span holding `ns` among spans sorted by begin (ranges of one kind do
// not overlap), or -1.
int holding(const std::vector<Span>& spans, int64_t ns) {
  auto after = std::upper_bound(spans.begin(), spans.end(), ns, [](int64_t t, const Span& s) { return t < s.begin_ns; });
  if (after == spans.begin()) return -1;
  const auto candidate = after - 1;
  return ns <= candidate->end_ns ? static_cast<int>(candidate - spans.begin()) : -1;
}

struct PassSlot {
  size_t run = 0, group = 0, pass = 0;
};

}  // namespace

size_t TraceOutline::decode_steps() const {
  size_t count = 0;
  for (const RunOutline& run : runs)
    for (const GroupOutline& group : run.groups)
      for (const PassOutline& pass : group.passes) count += pass.prefill ? 0 : 1;
  return count;
}

TraceOutline outline_trace(const Trace& trace) {
  TraceOutline outline;
  std::vector<Span> runs = spans_of(trace, RangeKind::Run);
  if (runs.empty()) runs.push_back(Span{trace.first_ns(), trace.last_ns(), -1});
  outline.runs.resize(runs.size());

  // Groups under runs; a run without group ranges is one group spanning the run.
  std::vector<Span> group_spans;
  std::vector<std::pair<size_t, size_t>> group_slots;  // (run, group) per entry of group_spans
  const std::vector<Span> groups = spans_of(trace, RangeKind::Group);
  for (size_t r = 0; r < runs.size(); ++r) {
    for (const Span& group : groups) {
      if (group.begin_ns < runs[r].begin_ns || group.begin_ns > runs[r].end_ns) continue;
      group_slots.emplace_back(r, outline.runs[r].groups.size());
      group_spans.push_back(group);
      outline.runs[r].groups.push_back(GroupOutline{group.index, {}, {}});
    }
    if (outline.runs[r].groups.empty()) {
      group_slots.emplace_back(r, 0);
      group_spans.push_back(runs[r]);
      outline.runs[r].groups.push_back(GroupOutline{});
    }
  }
  // group_spans is in run order, and runs do not overlap, so it stays sorted by begin.

  // Passes under groups.
  std::vector<Span> pass_spans;
  std::vector<PassSlot> pass_slots;
  std::vector<std::pair<Span, bool>> passes;  // (span, is prefill)
  for (const Span& span : spans_of(trace, RangeKind::Prefill)) passes.emplace_back(span, true);
  for (const Span& span : spans_of(trace, RangeKind::Step)) passes.emplace_back(span, false);
  std::stable_sort(passes.begin(), passes.end(),
                   [](const auto& a, const auto& b) { return a.first.begin_ns < b.first.begin_ns; });
  for (const auto& [span, prefill] : passes) {
    const int g = holding(group_spans, span.begin_ns);
    if (g < 0) continue;
    const auto [r, group] = group_slots[static_cast<size_t>(g)];
    std::vector<PassOutline>& list = outline.runs[r].groups[group].passes;
    PassOutline pass;
    pass.prefill = prefill;
    pass.step = prefill ? -1 : span.index;
    pass.begin_ns = span.begin_ns;
    pass.end_ns = span.end_ns;
    pass_slots.push_back(PassSlot{r, group, list.size()});
    pass_spans.push_back(span);
    list.push_back(std::move(pass));
  }

  const std::vector<Span> layers = spans_of(trace, RangeKind::Layer);
  auto layer_at = [&layers](int64_t ns) {
    const int position = holding(layers, ns);
    return position < 0 ? -1 : layers[static_cast<size_t>(position)].index;
  };
  auto pass_at = [&](int64_t ns) -> PassOutline* {
    const int position = holding(pass_spans, ns);
    if (position < 0) return nullptr;
    const PassSlot& slot = pass_slots[static_cast<size_t>(position)];
    return &outline.runs[slot.run].groups[slot.group].passes[slot.pass];
  };

  const std::vector<TraceOp>& ops = trace.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (PassOutline* pass = pass_at(ops[i].host_begin_ns)) {
      pass->ops.push_back(i);
      pass->op_layers.push_back(layer_at(ops[i].host_begin_ns));
    }
  }
  const std::vector<HostCall>& calls = trace.host_calls();
  for (size_t i = 0; i < calls.size(); ++i) {
    if (PassOutline* pass = pass_at(calls[i].begin_ns)) {
      pass->calls.push_back(i);
      pass->call_layers.push_back(layer_at(calls[i].begin_ns));
    }
    const int g = holding(group_spans, calls[i].begin_ns);
    if (g >= 0) {
      const auto [r, group] = group_slots[static_cast<size_t>(g)];
      outline.runs[r].groups[group].calls.push_back(i);
    }
  }
  return outline;
}

}  // namespace decodelab
