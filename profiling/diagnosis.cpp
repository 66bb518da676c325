// The five checks. Each pass (prefill or decode step) is first read into a few numbers
// a profiler shows — rows per sequence, what attention reads and from where, copies that
// feed it, device-to-host reads, fp32 work — and each check then asks whether its signal
// holds in more than half of the decode steps (the prefills where a trace has no steps).
#include "profiling/diagnosis.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "profiling/cost_model.h"
#include "profiling/trace_outline.h"
#include "profiling/units.h"

namespace decodelab {

const Finding* Diagnosis::find(const std::string& name) const {
  for (const Finding& finding : bugs) {
    if (finding.name == name) return &finding;
  }
  return nullptr;
}

namespace {

// One pass as a profiler sees it.
struct PassReading {
  const PassOutline* pass = nullptr;
  int64_t sequences = 0;      // rows of the logits it samples from: tokens it produces
  int64_t rows = 0;           // most rows a matmul ran: tokens it pushes through the layers
  int64_t key_positions = 0;  // cached positions attention reads per sequence (most over layers)
  double flops = 0;
  double bytes = 0;

  int attention_ops = 0;
  int strided_attention_ops = 0;    // K or V read through a view whose last stride is not 1
  int64_t head_dim_stride = 1;      // that stride, when strided
  int cache_copies = 0;             // copies of a strided view whose result attention reads
  double cache_copy_bytes = 0;
  double attention_seconds = 0, attention_bytes = 0;  // device time and declared bytes
  double matmul_seconds = 0, matmul_bytes = 0;

  int device_reads = 0;   // DeviceToHost host calls
  int reads_in_layers = 0;
  int syncs = 0;          // Synchronize host calls
  double wait_seconds = 0;  // host time blocked in those calls
  std::set<int> layers;

  int matmuls = 0, fp32_matmuls = 0;
  int norms = 0, fp32_norms = 0;
  int casts = 0;
  double fp32_weight_bytes = 0;

  double rows_per_sequence() const { return sequences > 0 ? static_cast<double>(rows) / sequences : 0.0; }
  bool multi_row() const { return sequences > 0 && rows > sequences; }
  bool reads_device() const { return device_reads + syncs > 0; }
  bool fp32_work() const { return fp32_matmuls + fp32_norms + casts > 0; }
};

bool same_view(const TensorInfo& a, const TensorInfo& b) {
  if (a.dtype != b.dtype || a.rank != b.rank) return false;
  for (size_t axis = 0; axis < static_cast<size_t>(a.rank); ++axis) {
    if (a.shape[axis] != b.shape[axis] || a.strides[axis] != b.strides[axis]) return false;
  }
  return true;
}

bool same_shape(const TensorInfo& a, const TensorInfo& b) {
  if (a.rank != b.rank) return false;
  for (size_t axis = 0; axis < static_cast<size_t>(a.rank); ++axis) {
    if (a.shape[axis] != b.shape[axis]) return false;
  }
  return true;
}

bool contiguous(const TensorInfo& tensor) {
  int64_t expected = 1;
  for (int axis = tensor.rank - 1; axis >= 0; --axis) {
    const size_t a = static_cast<size_t>(axis);
    if (tensor.shape[a] != 1 && tensor.strides[a] != expected) return false;
    expected *= tensor.shape[a];
  }
  return true;
}

int64_t innermost_stride(const TensorInfo& tensor) {
  if (tensor.rank == 0 || tensor.shape[static_cast<size_t>(tensor.rank - 1)] <= 1) return 1;
  return tensor.strides[static_cast<size_t>(tensor.rank - 1)];
}

PassReading read_pass(const Trace& trace, const PassOutline& pass) {
  PassReading reading;
  reading.pass = &pass;
  const std::vector<TraceOp>& ops = trace.ops();

  // What attention reads, per layer: a copy whose result is one of these fed it.
  std::vector<std::pair<int, const TensorInfo*>> attention_inputs;
  for (size_t k = 0; k < pass.ops.size(); ++k) {
    const OpDesc& op = ops[pass.ops[k]].desc;
    if (op.category != OpCategory::Attention || op.inputs.size() < 3) continue;
    attention_inputs.emplace_back(pass.op_layers[k], &op.inputs[1]);
    attention_inputs.emplace_back(pass.op_layers[k], &op.inputs[2]);
  }

  for (size_t k = 0; k < pass.ops.size(); ++k) {
    const TraceOp& traced = ops[pass.ops[k]];
    const OpDesc& op = traced.desc;
    const int layer = pass.op_layers[k];
    if (layer >= 0) reading.layers.insert(layer);
    if (op.category == OpCategory::Marker) continue;
    const OpCost cost = op_cost(op);
    reading.flops += cost.flops;
    reading.bytes += cost.bytes();
    switch (op.category) {
      case OpCategory::Matmul:
        if (op.inputs.size() < 2) break;
        ++reading.matmuls;
        reading.rows = std::max(reading.rows, op.inputs[0].rank > 0 ? op.inputs[0].shape[0] : 0);
        if (op.inputs[1].dtype == DType::F32 || op.inputs[0].dtype == DType::F32) {
          ++reading.fp32_matmuls;
          reading.fp32_weight_bytes += tensor_bytes(op.inputs[1]);
        }
        if (traced.has_device_time()) {
          reading.matmul_seconds += traced.device_seconds();
          reading.matmul_bytes += cost.bytes();
        }
        break;
      case OpCategory::Norm:
        ++reading.norms;
        if (!op.inputs.empty() && op.inputs[0].dtype == DType::F32) ++reading.fp32_norms;
        break;
      case OpCategory::Cast: ++reading.casts; break;
      case OpCategory::Sampling:
        if (!op.inputs.empty() && op.inputs[0].rank > 0) reading.sequences = op.inputs[0].shape[0];
        break;
      case OpCategory::Attention: {
        ++reading.attention_ops;
        if (op.inputs.size() >= 3) {
          const int64_t stride = std::max(innermost_stride(op.inputs[1]), innermost_stride(op.inputs[2]));
          if (stride != 1) {
            ++reading.strided_attention_ops;
            reading.head_dim_stride = stride;
          }
        }
        reading.key_positions = std::max(reading.key_positions, op.attention.key_positions_read);
        if (traced.has_device_time()) {
          reading.attention_seconds += traced.device_seconds();
          reading.attention_bytes += cost.bytes();
        }
        break;
      }
      case OpCategory::Copy: {
        // A .contiguous(): a strided view copied into a dense tensor of the same shape
        // that attention then reads, in the same layer.
        if (op.inputs.size() != 1 || op.outputs.size() != 1) break;
        const TensorInfo& source = op.inputs[0];
        const TensorInfo& result = op.outputs[0];
        if (contiguous(source) || !contiguous(result) || !same_shape(source, result)) break;
        const bool feeds_attention = std::any_of(attention_inputs.begin(), attention_inputs.end(), [&](const auto& input) {
          return input.first == layer && same_view(*input.second, result);
        });
        if (feeds_attention) {
          ++reading.cache_copies;
          reading.cache_copy_bytes += cost.bytes();
        }
        break;
      }
      default: break;
    }
  }
  if (reading.sequences > 0) reading.key_positions /= reading.sequences;

  const std::vector<HostCall>& calls = trace.host_calls();
  for (size_t k = 0; k < pass.calls.size(); ++k) {
    const HostCall& call = calls[pass.calls[k]];
    if (call.kind != HostCallKind::DeviceToHost && call.kind != HostCallKind::Synchronize) continue;
    (call.kind == HostCallKind::DeviceToHost ? reading.device_reads : reading.syncs) += 1;
    if (pass.call_layers[k] >= 0) ++reading.reads_in_layers;
    reading.wait_seconds += static_cast<double>(call.end_ns - call.begin_ns) * 1e-9;
  }
  return reading;
}

// The readings of one group: its prefill(s) and its decode steps in step order.
struct GroupReading {
  const GroupOutline* group = nullptr;
  std::vector<PassReading> prefills;
  std::vector<PassReading> steps;
  int64_t uploads = 0;  // HostToDevice calls: prompts sent

  int64_t sequences() const {
    for (const auto* list : {&prefills, &steps})
      for (const PassReading& pass : *list)
        if (pass.sequences > 0) return pass.sequences;
    return std::max<int64_t>(uploads, 1);
  }
};

struct TraceReading {
  std::vector<std::vector<GroupReading>> runs;
  std::vector<const PassReading*> steps;     // every decode step, in order
  std::vector<const PassReading*> prefills;
  // The passes step-level checks count over: the decode steps, or the prefills when the
  // trace has no steps (a generation of one token).
  const std::vector<const PassReading*>& judged() const { return steps.empty() ? prefills : steps; }
  const char* judged_name() const { return steps.empty() ? "prefills" : "decode steps"; }
};

TraceReading read_trace(const Trace& trace, const TraceOutline& outline) {
  TraceReading reading;
  for (const RunOutline& run : outline.runs) {
    std::vector<GroupReading>& groups = reading.runs.emplace_back();
    for (const GroupOutline& group : run.groups) {
      GroupReading& read = groups.emplace_back();
      read.group = &group;
      for (const PassOutline& pass : group.passes) (pass.prefill ? read.prefills : read.steps).push_back(read_pass(trace, pass));
      for (size_t call : group.calls) read.uploads += trace.host_calls()[call].kind == HostCallKind::HostToDevice;
    }
  }
  // Pointers only after every vector stopped growing.
  for (const auto& groups : reading.runs)
    for (const GroupReading& group : groups) {
      for (const PassReading& pass : group.prefills) reading.prefills.push_back(&pass);
      for (const PassReading& pass : group.steps) reading.steps.push_back(&pass);
    }
  return reading;
}

size_t passes_where(const std::vector<const PassReading*>& passes, bool (*test)(const PassReading&)) {
  return static_cast<size_t>(std::count_if(passes.begin(), passes.end(), [test](const PassReading* p) { return test(*p); }));
}

bool most(size_t count, size_t total) { return total > 0 && 2 * count > total; }

template <typename Value>
Value median_of(std::vector<Value> values) {
  if (values.empty()) return Value{};
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(values.size() / 2), values.end());
  return values[values.size() / 2];
}

// Pairs of consecutive decode steps (within a group) where `size` grew, and all pairs.
template <typename Size>
std::pair<size_t, size_t> growth(const TraceReading& reading, Size size) {
  size_t grew = 0, pairs = 0;
  for (const auto& groups : reading.runs)
    for (const GroupReading& group : groups)
      for (size_t s = 1; s < group.steps.size(); ++s, ++pairs) grew += size(group.steps[s]) > size(group.steps[s - 1]);
  return {grew, pairs};
}

// The first group with decode steps: where evidence quotes its first and last step.
const GroupReading* example_group(const TraceReading& reading) {
  for (const auto& groups : reading.runs)
    for (const GroupReading& group : groups)
      if (!group.steps.empty()) return &group;
  return nullptr;
}

std::string count_of(size_t count, size_t total) { return std::to_string(count) + " of " + std::to_string(total); }
std::string plural(int64_t count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

void check_kv_cache(const TraceReading& reading, Diagnosis& diagnosis) {
  const auto& steps = reading.steps;
  if (steps.empty()) {
    diagnosis.limits.push_back("no decode steps: a missing KV cache only shows in decode steps");
    return;
  }
  const size_t multi = passes_where(steps, [](const PassReading& p) { return p.multi_row(); });
  const auto [grew, pairs] = growth(reading, [](const PassReading& p) { return p.rows_per_sequence(); });
  if (!most(multi, steps.size())) {
    diagnosis.checked.push_back("no_kv_cache: " + count_of(steps.size() - multi, steps.size()) +
                                " decode steps run 1 row per sequence (a cached step)");
    return;
  }
  if (pairs > 0 && !most(grew, pairs)) {
    diagnosis.checked.push_back("no_kv_cache: decode steps run " + format_number(median_of([&] {
                                  std::vector<double> r;
                                  for (const PassReading* p : steps) r.push_back(p->rows_per_sequence());
                                  return r;
                                }()), 3) + " rows per sequence, but constant from step to step (multi-token steps, "
                                "not a prefix recomputed)");
    return;
  }
  const GroupReading& group = *example_group(reading);
  const PassReading& first = group.steps.front();
  const PassReading& last = group.steps.back();
  const bool whole_prefix = first.key_positions == static_cast<int64_t>(first.rows_per_sequence());
  Finding finding{"no_kv_cache", "", "", pairs > 0 ? 0.99 : 0.8};
  finding.evidence = count_of(multi, steps.size()) + " decode steps are prefill-shaped: " +
                     format_number(first.rows_per_sequence(), 4) + " rows per sequence at step " +
                     std::to_string(first.pass->step) + ", " + format_number(last.rows_per_sequence(), 4) +
                     " at step " + std::to_string(last.pass->step) + " (a cached step runs 1)" +
                     (whole_prefix ? ", every position attention reads is recomputed" : "") + "; FLOPs per step " +
                     format_flops(first.flops) + " → " + format_flops(last.flops) + " (" +
                     format_number(first.flops > 0 ? last.flops / first.flops : 0, 3) + "×), growing with position";
  diagnosis.bugs.push_back(finding);
}

void check_layout(const TraceReading& reading, Diagnosis& diagnosis) {
  const auto& passes = reading.judged();
  if (passes.empty()) return;
  const size_t copying = passes_where(passes, [](const PassReading& p) { return p.cache_copies > 0; });
  const size_t strided = passes_where(passes, [](const PassReading& p) { return p.strided_attention_ops > 0; });
  std::vector<std::string> variants, evidence;
  double confidence = 0;
  if (most(copying, passes.size())) {
    variants.push_back("copy");
    const auto [grew, pairs] = growth(reading, [](const PassReading& p) { return p.cache_copy_bytes; });
    const PassReading* first = passes.front();
    const PassReading* last = passes.back();
    if (const GroupReading* group = example_group(reading)) first = &group->steps.front(), last = &group->steps.back();
    const int layers = std::max<int>(1, static_cast<int>(first->layers.size()));
    evidence.push_back(count_of(copying, passes.size()) + " " + reading.judged_name() + " copy the KV cache out of a " +
                       "strided view before attention reads it (.contiguous()): " +
                       plural(first->cache_copies / layers, "copy") + " per layer, " +
                       format_bytes(first->cache_copy_bytes) + " per step at " + std::to_string(first->key_positions) +
                       " positions, " + format_bytes(last->cache_copy_bytes) + " at " +
                       std::to_string(last->key_positions) + " (" +
                       format_percent(last->bytes > 0 ? last->cache_copy_bytes / last->bytes : 0) +
                       " of that step's bytes), growing with the cache");
    confidence = pairs > 0 && most(grew, pairs) ? 0.98 : 0.85;
  }
  if (most(strided, passes.size())) {
    variants.push_back("strided");
    const PassReading& example = *passes.back();
    double attention_rate = 0, matmul_rate = 0;
    for (const PassReading* p : passes) {
      attention_rate += p->attention_seconds > 0 ? p->attention_bytes / p->attention_seconds : 0;
      matmul_rate += p->matmul_seconds > 0 ? p->matmul_bytes / p->matmul_seconds : 0;
    }
    std::string sentence = count_of(strided, passes.size()) + " " + reading.judged_name() +
                           " run attention on a K/V view whose head_dim stride is " +
                           std::to_string(example.head_dim_stride) +
                           " elements, not 1: each head vector is scattered (uncoalesced reads)";
    if (attention_rate > 0 && matmul_rate > 0) {
      sentence += "; attention moves its bytes at " + format_bandwidth(attention_rate / passes.size()) +
                  ", the matmuls at " + format_bandwidth(matmul_rate / passes.size());
    }
    evidence.push_back(sentence);
    confidence = std::max(confidence, 0.95);
  }
  if (variants.empty()) {
    diagnosis.checked.push_back("non_contiguous: attention reads stride-1 K/V in " + count_of(passes.size() - strided, passes.size()) +
                                " " + reading.judged_name() + ", and no step copies the cache before it");
    return;
  }
  Finding finding{"non_contiguous", variants.front(), evidence.front(), confidence};
  if (variants.size() > 1) {
    finding.variant += "+" + variants.back();
    finding.evidence += "; and " + evidence.back();
  }
  diagnosis.bugs.push_back(finding);
}

void check_host_reads(const TraceReading& reading, Diagnosis& diagnosis) {
  const auto& steps = reading.steps;
  if (steps.empty()) {
    diagnosis.limits.push_back("no decode steps: host syncs in the decode loop only show in decode steps");
    return;
  }
  const size_t reading_steps = passes_where(steps, [](const PassReading& p) { return p.reads_device(); });
  if (!most(reading_steps, steps.size())) {
    diagnosis.checked.push_back("host_sync: " + count_of(steps.size() - reading_steps, steps.size()) +
                                " decode steps neither read the device nor wait for it");
    return;
  }
  std::vector<int> per_step, in_layers, sequences, layers;
  double wait = 0, wall = 0;
  int64_t total = 0;
  for (const PassReading* p : steps) {
    per_step.push_back(p->device_reads + p->syncs);
    in_layers.push_back(p->reads_in_layers);
    sequences.push_back(static_cast<int>(p->sequences));
    layers.push_back(static_cast<int>(p->layers.size()));
    total += p->device_reads + p->syncs;
    wait += p->wait_seconds;
    wall += p->pass->host_seconds();
  }
  const int count = median_of(per_step);
  const int group = median_of(sequences);
  const int layer_count = median_of(layers);
  std::string variant, where;
  if (2 * median_of(in_layers) > count) {
    variant = "layer";
    where = "inside the layers: " + plural(count, "read") + " per step for " + plural(layer_count, "layer");
  } else if (group > 1 && count == group) {
    variant = "sequence";
    where = "after the layers: one per sequence (" + plural(count, "read") + " per step, groups of " +
            std::to_string(group) + ")";
  } else {
    variant = "token";
    where = "after the layers: " + plural(count, "read") + " per step" +
            (group == 1 ? " (one sequence per group: per token and per sequence read alike)"
                        : " for groups of " + std::to_string(group));
  }
  Finding finding{"host_sync", variant, "", 0.98 * static_cast<double>(reading_steps) / steps.size()};
  finding.evidence = std::to_string(total) + " blocking device-to-host reads inside " +
                     count_of(reading_steps, steps.size()) + " decode steps, " + where + "; the host waited " +
                     format_seconds(wait) + " in them, " + format_percent(wall > 0 ? wait / wall : 0) +
                     " of the decode steps' host time, instead of running ahead";
  diagnosis.bugs.push_back(finding);
}

// The model's storage dtype: the metadata's, else the embedding table's.
std::string model_dtype(const Trace& trace) {
  if (!trace.metadata().dtype.empty()) return trace.metadata().dtype;
  for (const TraceOp& op : trace.ops()) {
    if (op.desc.category == OpCategory::Embedding && !op.desc.inputs.empty()) return dtype_name(op.desc.inputs[0].dtype);
  }
  return "";
}

void check_precision(const Trace& trace, const TraceReading& reading, Diagnosis& diagnosis) {
  const auto& passes = reading.judged();
  if (passes.empty()) return;
  const std::string dtype = model_dtype(trace);
  const std::optional<DType> parsed = parse_dtype(dtype);
  if (!parsed || !is_half(*parsed)) {
    diagnosis.checked.push_back("fp32_ops: the model is " + (dtype.empty() ? std::string("of unknown dtype") : dtype) +
                                ", so fp32 matmuls and norms are its own precision, not a bug");
    return;
  }
  const size_t fp32 = passes_where(passes, [](const PassReading& p) { return p.fp32_work(); });
  if (!most(fp32, passes.size())) {
    diagnosis.checked.push_back("fp32_ops: every matmul and norm of the " + dtype + " model runs in " + dtype +
                                ", with no cast ops, in " + count_of(passes.size() - fp32, passes.size()) + " " +
                                reading.judged_name());
    return;
  }
  const PassReading& example = *passes.back();
  const bool matmuls = example.fp32_matmuls > 0, norms = example.fp32_norms > 0;
  const std::string variant = matmuls && norms ? "all" : matmuls ? "matmuls" : norms ? "norms" : "";
  std::string evidence = "in an " + dtype + " model, " + count_of(fp32, passes.size()) + " " + reading.judged_name() +
                         " run fp32 work: ";
  std::vector<std::string> parts;
  if (matmuls) {
    parts.push_back(count_of(static_cast<size_t>(example.fp32_matmuls), static_cast<size_t>(example.matmuls)) +
                    " matmuls per step read fp32 weights (" + format_bytes(example.fp32_weight_bytes) +
                    " per step, twice their " + dtype + " size)");
  }
  if (norms) {
    parts.push_back(count_of(static_cast<size_t>(example.fp32_norms), static_cast<size_t>(example.norms)) +
                    " norms run in fp32");
  }
  parts.push_back(plural(example.casts, "cast op") + " per step convert activations to fp32 and back");
  for (size_t i = 0; i < parts.size(); ++i) evidence += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  diagnosis.bugs.push_back(Finding{"fp32_ops", variant, evidence, example.casts > 0 ? 0.97 : 0.9});
}

void check_batching(const TraceReading& reading, Diagnosis& diagnosis) {
  size_t multi_request_runs = 0, sequential_runs = 0;
  int64_t requests = 0, groups = 0, steps_per_group = 0;
  std::vector<int64_t> group_sizes;
  for (const auto& run : reading.runs) {
    int64_t run_requests = 0;
    bool all_single = true;
    for (const GroupReading& group : run) {
      run_requests += group.sequences();
      all_single = all_single && group.sequences() == 1;
    }
    if (run_requests < 2) continue;
    ++multi_request_runs;
    if (all_single) ++sequential_runs;
    if (requests == 0) {
      requests = run_requests;
      groups = static_cast<int64_t>(run.size());
      steps_per_group = static_cast<int64_t>(run.front().steps.size());
      for (const GroupReading& group : run) group_sizes.push_back(group.sequences());
    }
  }
  if (multi_request_runs == 0) {
    diagnosis.limits.push_back("one request per run: there is nothing to batch, so sequential generation cannot "
                               "show (a batch of one looks the same either way)");
    return;
  }
  if (!most(sequential_runs, multi_request_runs)) {
    std::string sizes;
    for (size_t i = 0; i < group_sizes.size() && i < 8; ++i) sizes.append(i ? "," : "").append(std::to_string(group_sizes[i]));
    if (group_sizes.size() > 8) sizes.append(",...");
    diagnosis.checked.push_back("sequential_generation: " + std::to_string(requests) + " requests per run served in " +
                                plural(groups, "group") + " of " + sizes + " sequences");
    return;
  }
  Finding finding{"sequential_generation", "", "", requests >= 3 ? 0.9 : 0.8};
  finding.evidence = std::to_string(requests) + " requests served one at a time: " + plural(groups, "group") +
                     " of 1 sequence, each with its own prompt upload, prefill and " +
                     std::to_string(steps_per_group) + " batch-1 decode steps (" +
                     std::to_string(groups * steps_per_group) + " steps where one batch would take " +
                     std::to_string(steps_per_group) + "), the weights streamed again for every request";
  diagnosis.bugs.push_back(finding);
  diagnosis.limits.push_back("batch_size 1 chosen on purpose with several requests reads exactly like sequential "
                             "generation; it is reported, since the requests were served one at a time");
}

}  // namespace

Diagnosis diagnose(const Trace& trace) {
  const TraceOutline outline = outline_trace(trace);
  const TraceReading reading = read_trace(trace, outline);

  Diagnosis diagnosis;
  DiagnosedShape& shape = diagnosis.shape;
  const TraceMetadata& meta = trace.metadata();
  shape.backend = meta.backend;
  shape.device = meta.device;
  shape.dtype = model_dtype(trace);
  shape.model = meta.model.name;
  shape.runs = static_cast<int>(outline.runs.size());
  shape.groups = static_cast<int>(outline.groups());
  shape.decode_steps = static_cast<int>(outline.decode_steps());
  shape.layers = meta.model.num_hidden_layers;
  if (!reading.runs.empty()) {
    for (const GroupReading& group : reading.runs.front()) shape.requests_per_run += static_cast<int>(group.sequences());
  }
  if (reading.steps.empty() && reading.prefills.empty()) {
    diagnosis.limits.push_back("the trace holds no prefill or decode step ranges: nothing to diagnose");
    return diagnosis;
  }

  check_kv_cache(reading, diagnosis);
  check_layout(reading, diagnosis);
  check_host_reads(reading, diagnosis);
  check_precision(trace, reading, diagnosis);
  check_batching(reading, diagnosis);
  return diagnosis;
}

}  // namespace decodelab
