// Pricing an op stream: one pass over the ops in program order moves the host clock and
// the device clock (see prediction.h), then the clocks are read at the generator's markers.
#include "profiling/model/prediction.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "engine/base/errors.h"
#include "engine/parallel_regions.h"
#include "profiling/model/cache_residency.h"
#include "profiling/model/cost_model.h"
#include "profiling/model/efficiency.h"
#include "profiling/model/statistics.h"

namespace decodelab {

const char* predicted_bound_name(PredictedBound bound) {
  switch (bound) {
    case PredictedBound::Compute: return "compute roof";
    case PredictedBound::Memory: return "bandwidth roof";
    case PredictedBound::Cache: return "cache bandwidth";
    case PredictedBound::OpOverhead: return "per-op overhead";
    case PredictedBound::HostDispatch: return "host dispatch";
    case PredictedBound::HostReads: return "device-to-host reads";
  }
  return "?";
}

const char* predicted_bound_key(PredictedBound bound) {
  switch (bound) {
    case PredictedBound::Compute: return "compute";
    case PredictedBound::Memory: return "memory";
    case PredictedBound::Cache: return "cache";
    case PredictedBound::OpOverhead: return "op_overhead";
    case PredictedBound::HostDispatch: return "host_dispatch";
    case PredictedBound::HostReads: return "host_reads";
  }
  return "?";
}

double TimeSplit::part(PredictedBound bound) const {
  switch (bound) {
    case PredictedBound::Compute: return compute;
    case PredictedBound::Memory: return memory;
    case PredictedBound::Cache: return cache;
    case PredictedBound::OpOverhead: return overhead;
    case PredictedBound::HostDispatch: return host_dispatch;
    case PredictedBound::HostReads: return host_reads;
  }
  return 0;
}

PredictedBound TimeSplit::largest() const {
  PredictedBound best = PredictedBound::Memory;
  for (PredictedBound bound : {PredictedBound::Compute, PredictedBound::Memory, PredictedBound::Cache,
                               PredictedBound::OpOverhead, PredictedBound::HostDispatch, PredictedBound::HostReads}) {
    if (part(bound) > part(best)) best = bound;
  }
  return best;
}

void TimeSplit::add(const TimeSplit& other) {
  compute += other.compute;
  memory += other.memory;
  cache += other.cache;
  overhead += other.overhead;
  host_dispatch += other.host_dispatch;
  host_reads += other.host_reads;
}

const PhasePrediction* Prediction::phase(Phase which) const {
  for (const PhasePrediction& candidate : phases) {
    if (candidate.phase == which) return &candidate;
  }
  return nullptr;
}

namespace {

bool is_named_op(const OpDesc& op, const char* name) { return std::strcmp(op.name, name) == 0; }

Phase phase_of(const StreamPlace& place) {
  if (place.prefill) return Phase::Prefill;
  return place.step >= 0 ? Phase::Decode : Phase::Other;
}

// One op on the device: when it started, the idle gap before it and its cause, its busy
// time split by bound.
struct PricedOp {
  double start = 0;
  double gap = 0;
  bool gap_after_read = false;  // the host was blocked in a read before enqueueing it
  TimeSplit busy;
  double cache_bytes = 0;
  OpCost cost;
};

// Where an op's bytes come from, by the cache model: the fraction of its operand bytes
// found resident, and the fraction of its written bytes touched before and evicted since
// (each such line is read from DRAM before it is written: write-allocate). A buffer's first
// use in the stream is not counted: a measured run has touched it in its warm-up, and
// where it sits then the stream does not say.
struct Residency {
  double resident = 0;
  double cold_written = 0;
};

// Device busy time of one op, by the one rule for every device:
//   max(FLOPs / (peak · η_flops), bytes / (bandwidth · η_bytes)) + per-op overhead + its parallel regions
// where the bytes are the DRAM bytes (with the cold written ones read first) at the memory's
// bandwidth — the host link's for a copy to or from the host — and the cache-resident ones at
// the cache's, and η is the efficiency table's for the op's category, precision and bucket.
TimeSplit price(const StreamOp& op, const OpCost& cost, const Residency& residency, const EfficiencyLookup& efficiency,
                const PredictionInputs& inputs) {
  TimeSplit busy;
  busy.overhead = inputs.costs.op_overhead + inputs.costs.parallel_region * cpu::parallel_regions(op.desc);
  const double peak = inputs.roofs.flops(cost.precision) * efficiency.flops;
  const double compute = peak > 0 ? cost.flops / peak : 0.0;
  const bool host_copy = op.desc.category == OpCategory::Memcpy && inputs.costs.host_link_bandwidth > 0;
  const double bandwidth = (host_copy ? inputs.costs.host_link_bandwidth : inputs.roofs.bandwidth) * efficiency.bytes;
  const double cache_bytes = cost.bytes() * residency.resident;
  // A CPU cache allocates a line on a write miss: a cold written byte is also read first.
  const double dram_bytes = cost.bytes() - cache_bytes + cost.bytes_written * residency.cold_written;
  const double dram = bandwidth > 0 ? dram_bytes / bandwidth : 0.0;
  const double cache_bandwidth = inputs.cache ? inputs.cache->bandwidth * efficiency.bytes : 0.0;
  const double cached = cache_bandwidth > 0 ? cache_bytes / cache_bandwidth : 0.0;
  const double memory = dram + cached;
  if (compute >= memory) {
    busy.compute = compute;
  } else if (cached > dram) {
    busy.cache = memory;
  } else {
    busy.memory = memory;
  }
  return busy;
}

// The split of the device timeline from the start of op `from` to the start of op `to`:
// `from`'s busy time, then each later op's idle gap and (except `to`'s) busy time.
TimeSplit split_between(const std::vector<PricedOp>& ops, size_t from, size_t to) {
  TimeSplit split;
  if (to <= from) return split;
  split.add(ops[from].busy);
  for (size_t i = from + 1; i <= to; ++i) {
    (ops[i].gap_after_read ? split.host_reads : split.host_dispatch) += ops[i].gap;
    if (i < to) split.add(ops[i].busy);
  }
  return split;
}

struct GroupMarkers {
  std::optional<size_t> start, first_token;
  std::vector<size_t> steps;
  int64_t sequences = 0;  // logits rows of the group's decode steps
};

}  // namespace

Prediction predict_op_stream(const OpStream& stream, const PredictionInputs& inputs) {
  Prediction prediction;
  prediction.inputs = inputs;
  std::optional<CacheResidency> cache;
  if (inputs.cache && inputs.cache->bytes > 0 && inputs.cache->bandwidth > 0) cache.emplace(*inputs.cache);

  // The two clocks, in program order.
  std::vector<PricedOp> priced(stream.ops.size());
  double host = 0, device_free = 0;
  bool blocked = false;
  size_t next_call = 0;
  auto host_calls_before = [&](size_t op_index) {
    for (; next_call < stream.calls.size() && stream.calls[next_call].ops_before <= op_index; ++next_call) {
      const HostCallKind kind = stream.calls[next_call].call.kind;
      if (kind == HostCallKind::DeviceToHost || kind == HostCallKind::Synchronize) {
        host = std::max(host, device_free) + inputs.costs.return_latency();
        blocked = true;
      }
    }
  };
  for (size_t i = 0; i < stream.ops.size(); ++i) {
    host_calls_before(i);
    const StreamOp& op = stream.ops[i];
    PricedOp& out = priced[i];
    out.cost = op_cost(op.desc);
    Residency residency;
    if (cache && !op.operands.empty()) {
      double touched = 0, resident = 0, written = 0, cold_written = 0;
      for (const OperandAccess& operand : op.operands) {
        const double bytes = static_cast<double>(operand.bytes);
        double seen = 0;
        const double found = cache->touch(operand.address, bytes, &seen);
        touched += bytes;
        resident += found;
        if (operand.written) {
          written += bytes;
          cold_written += seen - found;  // evicted since its last use; a first use is not known cold
        }
      }
      residency.resident = touched > 0 ? resident / touched : 0.0;
      residency.cold_written = written > 0 ? cold_written / written : 0.0;
    }
    const ShapeBucket bucket = shape_bucket(op.desc);
    const Precision precision = table_precision(op.desc, out.cost.precision);
    const EfficiencyLookup efficiency = look_up_efficiency(inputs.roofs, op.desc.category, precision, bucket);
    if (!efficiency.exact && op.desc.category != OpCategory::Marker) {
      // A category without entries is said once; a bucket priced from its neighbour, per bucket.
      const std::string note =
          efficiency.entry ? std::string(op_category_name(op.desc.category)) + " " + precision_name(precision) + " " +
                                 describe_bucket(op.desc.category, bucket) + ": " + efficiency.said
                           : efficiency.said;
      if (std::find(prediction.efficiency_notes.begin(), prediction.efficiency_notes.end(), note) ==
          prediction.efficiency_notes.end())
        prediction.efficiency_notes.push_back(note);
    }
    out.busy = price(op, out.cost, residency, efficiency, inputs);
    out.cache_bytes = out.cost.bytes() * residency.resident;
    host += inputs.host_overhead + inputs.costs.host_launch;
    out.start = std::max(device_free, host);
    out.gap = out.start - device_free;
    out.gap_after_read = blocked;
    blocked = false;
    device_free = out.start + out.busy.total();
  }
  host_calls_before(stream.ops.size());

  // The generator's markers: group start, first token (in the prefill), step ends.
  std::vector<GroupMarkers> groups;
  std::map<int, size_t> group_index;
  for (size_t i = 0; i < stream.ops.size(); ++i) {
    const StreamOp& op = stream.ops[i];
    if (op.place.group < 0) continue;
    auto [slot, inserted] = group_index.try_emplace(op.place.group, groups.size());
    if (inserted) groups.emplace_back();
    GroupMarkers& group = groups[slot->second];
    if (op.desc.category == OpCategory::Marker) {
      if (op.place.step >= 0) {
        group.steps.push_back(i);
      } else if (op.place.prefill) {
        group.first_token = i;
      } else if (!group.start) {
        group.start = i;
      }
    }
    if (op.place.step >= 0 && is_named_op(op.desc, "argmax") && !op.desc.inputs.empty())
      group.sequences = op.desc.inputs[0].shape[0];
  }

  GenerationTiming& timing = prediction.timing;
  PhasePrediction prefill, decode;
  prefill.phase = Phase::Prefill;
  decode.phase = Phase::Decode;
  for (size_t g = 0; g < groups.size(); ++g) {
    const GroupMarkers& group = groups[g];
    if (!group.start || !group.first_token) continue;
    const TimeSplit to_first_token = split_between(priced, *group.start, *group.first_token);
    if (g == 0) timing.ttft_ms = to_first_token.total() * 1e3;
    timing.prefill_ms += to_first_token.total() * 1e3;
    prefill.split.add(to_first_token);
    ++prefill.passes;
    size_t previous = *group.first_token;
    for (size_t step_end : group.steps) {
      const TimeSplit step = split_between(priced, previous, step_end);
      timing.step_ms.push_back(step.total() * 1e3);
      prediction.step_busy_ms.push_back(step.busy() * 1e3);
      decode.split.add(step);
      previous = step_end;
    }
    timing.decode_ms += (priced[previous].start - priced[*group.first_token].start) * 1e3;
    timing.decode_tokens += group.sequences * static_cast<int64_t>(group.steps.size());
    decode.passes += static_cast<int64_t>(group.steps.size());
  }
  timing.groups = static_cast<int64_t>(groups.size());
  timing.total_ms = host * 1e3;

  // Per phase and category: ops, work, and busy time by bound.
  std::map<std::pair<Phase, OpCategory>, CategoryPrediction> categories;
  for (size_t i = 0; i < stream.ops.size(); ++i) {
    const StreamOp& op = stream.ops[i];
    const Phase phase = phase_of(op.place);
    if (op.desc.category != OpCategory::Marker) {
      ++prediction.ops;
      if (phase == Phase::Prefill) ++prefill.ops;
      if (phase == Phase::Decode) ++decode.ops;
    }
    if (op.desc.category == OpCategory::Memcpy && is_named_op(op.desc, "memcpy_dtoh")) {
      if (phase == Phase::Prefill) ++prefill.device_to_host_reads;
      if (phase == Phase::Decode) ++decode.device_to_host_reads;
    }
    CategoryPrediction& row = categories[{phase, op.desc.category}];
    row.phase = phase;
    row.category = op.desc.category;
    ++row.ops;
    row.flops += priced[i].cost.flops;
    row.bytes += priced[i].cost.bytes();
    row.cache_bytes += priced[i].cache_bytes;
    row.busy.add(priced[i].busy);
  }
  for (PhasePrediction* phase : {&prefill, &decode}) {
    if (phase->passes == 0) continue;
    phase->bound = phase->split.largest();
    prediction.phases.push_back(*phase);
  }
  for (auto& [key, row] : categories) prediction.categories.push_back(row);
  std::stable_sort(prediction.categories.begin(), prediction.categories.end(),
                   [](const CategoryPrediction& a, const CategoryPrediction& b) {
                     if (a.phase != b.phase) return a.phase < b.phase;
                     return a.busy.busy() > b.busy.busy();
                   });
  return prediction;
}

// The median as measured runs take it (profiling's one summary of repeated figures).
double Prediction::decode_step_wall_ms() const { return median_of(timing.step_ms); }
double Prediction::decode_step_busy_ms() const { return median_of(step_busy_ms); }

PredictionInputs prediction_inputs(const DeviceSpec& device, double host_overhead_seconds) {
  const std::optional<FixedCosts> costs = device.effective_fixed_costs();
  if (!costs) {
    throw InputError(device.name, 0, "fixed_costs",
                     "the device has no fixed costs (per-op overhead, launch, sync round trip): add a fixed_costs: "
                     "section to its device file, or measure them into one (decodelab roofline --measure --save FILE)");
  }
  PredictionInputs inputs;
  inputs.roofs = device.effective_roofs();
  inputs.costs = *costs;
  inputs.cache = device.effective_cache();
  inputs.host_overhead = host_overhead_seconds;
  return inputs;
}

nlohmann::json to_json(const TimeSplit& split) {
  return {{"compute_s", split.compute},         {"memory_s", split.memory},
          {"cache_s", split.cache},             {"op_overhead_s", split.overhead},
          {"host_dispatch_s", split.host_dispatch}, {"host_reads_s", split.host_reads}};
}

nlohmann::json to_json(const Prediction& prediction) {
  nlohmann::json phases = nlohmann::json::array();
  for (const PhasePrediction& phase : prediction.phases) {
    phases.push_back({{"phase", phase_name(phase.phase)},
                      {"passes", phase.passes},
                      {"ops", phase.ops},
                      {"device_to_host_reads", phase.device_to_host_reads},
                      {"wall_s", phase.wall_seconds()},
                      {"bound", predicted_bound_key(phase.bound)},
                      {"split", to_json(phase.split)}});
  }
  nlohmann::json categories = nlohmann::json::array();
  for (const CategoryPrediction& row : prediction.categories) {
    categories.push_back({{"phase", phase_name(row.phase)},
                          {"category", op_category_name(row.category)},
                          {"ops", row.ops},
                          {"flops", row.flops},
                          {"bytes", row.bytes},
                          {"cache_bytes", row.cache_bytes},
                          {"busy_s", row.busy.busy()},
                          {"bound", predicted_bound_key(row.busy.largest())},
                          {"split", to_json(row.busy)}});
  }
  const GenerationTiming& timing = prediction.timing;
  nlohmann::json inputs = {{"roofs", to_json(prediction.inputs.roofs)},
                           {"fixed_costs", to_json(prediction.inputs.costs)},
                           {"host_overhead_s", prediction.inputs.host_overhead}};
  if (prediction.inputs.cache) inputs["cache"] = to_json(*prediction.inputs.cache);
  return {{"inputs", inputs},
          {"ttft_ms", timing.ttft_ms},
          {"prefill_ms", timing.prefill_ms},
          {"decode_ms", timing.decode_ms},
          {"total_ms", timing.total_ms},
          {"decode_tokens", timing.decode_tokens},
          {"groups", timing.groups},
          {"decode_steps", timing.step_ms.size()},
          {"decode_wall_ms_per_step", prediction.decode_step_wall_ms()},
          {"decode_busy_ms_per_step", prediction.decode_step_busy_ms()},
          {"ops", prediction.ops},
          {"efficiency_fallbacks", prediction.efficiency_notes},
          {"phases", phases},
          {"categories", categories}};
}

}  // namespace decodelab
