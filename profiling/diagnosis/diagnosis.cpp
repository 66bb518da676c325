// The five checks, over the pass readings (profiling/diagnosis/pass_reading.h): each asks whether its
// signal holds in more than half of the decode steps (the prefills where a trace has no
// steps), and sizes the evidence from the group it quotes.
#include "profiling/diagnosis/diagnosis.h"

#include <algorithm>

#include "profiling/diagnosis/pass_reading.h"
#include "profiling/units.h"

namespace decodelab {

const Finding* Diagnosis::find(const std::string& name) const {
  for (const Finding& finding : bugs) {
    if (finding.name == name) return &finding;
  }
  return nullptr;
}

namespace {

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
  if (count == 1) return "1 " + noun;
  const bool y_ending = noun.size() > 1 && noun.back() == 'y';
  return std::to_string(count) + " " + (y_ending ? noun.substr(0, noun.size() - 1) + "ies" : noun + "s");
}

// Rows per sequence: a whole number when it is one ("23", not "23.00").
std::string format_rows(double rows) {
  const double whole = static_cast<double>(static_cast<int64_t>(rows));
  return whole == rows ? std::to_string(static_cast<int64_t>(rows)) : format_number(rows, 3);
}

void check_kv_cache(const TraceReading& reading, Diagnosis& diagnosis) {
  const auto& steps = reading.steps;
  if (steps.empty()) {
    diagnosis.limits.push_back("no decode steps: a missing KV cache only shows in decode steps");
    return;
  }
  if (reading.steps_replay_graphs()) {
    diagnosis.checked.push_back("no_kv_cache: " + count_of(steps.size() - reading.visible_steps.size(), steps.size()) +
                                " decode steps replay a captured graph: the same shapes every step, so no prefix "
                                "is recomputed");
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
    std::vector<double> rows;
    for (const PassReading* p : steps) rows.push_back(p->rows_per_sequence());
    diagnosis.checked.push_back("no_kv_cache: decode steps run " + format_rows(median_of(rows)) +
                                " rows per sequence, but constant from step to step (multi-token steps, "
                                "not a prefix recomputed)");
    return;
  }
  const GroupReading& group = *example_group(reading);
  const PassReading& first = group.steps.front();
  const PassReading& last = group.steps.back();
  const bool whole_prefix = first.key_positions == static_cast<int64_t>(first.rows_per_sequence());
  Finding finding{"no_kv_cache", "", "", pairs > 0 ? 0.99 : 0.8};
  finding.evidence = count_of(multi, steps.size()) + " decode steps are prefill-shaped: " +
                     format_rows(first.rows_per_sequence()) + " rows per sequence at step " +
                     std::to_string(first.pass->step) + ", " + format_rows(last.rows_per_sequence()) +
                     " at step " + std::to_string(last.pass->step) + " (a cached step runs 1)" +
                     (whole_prefix ? ", every position attention reads is recomputed" : "") +
                     (last.rows_example.empty() ? "" : " (step " + std::to_string(last.pass->step) + ": " + last.rows_example + ")") +
                     "; FLOPs per step " +
                     format_flops(first.flops) + " → " + format_flops(last.flops) + " (" +
                     format_number(first.flops > 0 ? last.flops / first.flops : 0, 3) + "×)" +
                     (pairs > 0 ? ", growing with position" : " (one decode step per sequence: growth not seen)");
  diagnosis.bugs.push_back(finding);
}

void check_layout(const TraceReading& reading, Diagnosis& diagnosis) {
  const auto& passes = reading.judged();
  if (passes.empty()) {
    diagnosis.not_checked.push_back("non_contiguous: the decode steps replay a captured graph and no prefill shows "
                                    "the layers: what attention reads could not be seen");
    return;
  }
  if (reading.facts.source != "decodelab" &&
      passes_where(passes, [](const PassReading& p) { return p.attention_ops > 0; }) == 0) {
    diagnosis.not_checked.push_back("non_contiguous: no attention recognised in the " +
                                    std::string(reading.judged_name()) +
                                    " (two batched matmuls, or scaled_dot_product_attention): what attention reads "
                                    "and copies could not be checked");
    return;
  }
  const size_t copying = passes_where(passes, [](const PassReading& p) { return p.cache_copies > 0; });
  const size_t strided = passes_where(passes, [](const PassReading& p) { return p.strided_attention_ops > 0; });
  std::vector<std::string> variants, evidence;
  double confidence = 0;
  if (most(copying, passes.size())) {
    variants.push_back("copy");
    const auto [grew, pairs] = growth(reading, [](const PassReading& p) { return p.cache_copy_bytes; });
    const PassReading* first = passes.front();
    const PassReading* last = passes.back();
    if (const GroupReading* group = example_group(reading); group && reading.judges_steps()) {
      first = &group->steps.front(), last = &group->steps.back();
    }
    const int layers = std::max<int>(1, first->attention_ops > 0 ? first->attention_ops : static_cast<int>(first->layers.size()));
    const bool grows = pairs > 0 && most(grew, pairs);
    evidence.push_back(count_of(copying, passes.size()) + " " + reading.judged_name() + " copy the KV cache out of a " +
                       "strided view before attention reads it (.contiguous()): " +
                       plural(first->cache_copies / layers, "copy") + " per layer" +
                       (first->copy_example.empty() ? "" : " (" + first->copy_example + ")") + ", " +
                       format_bytes(first->cache_copy_bytes) + " per " + reading.judged_unit() + " at " +
                       std::to_string(first->key_positions) +
                       " positions, " + format_bytes(last->cache_copy_bytes) + " at " +
                       std::to_string(last->key_positions) + " (" +
                       format_percent(last->bytes > 0 ? last->cache_copy_bytes / last->bytes : 0) +
                       " of that step's bytes)" +
                       (grows      ? ", growing with the cache"
                        : pairs > 0 ? ""
                                    : " (one " + std::string(reading.judged_unit()) + " per sequence: growth not seen)"));
    confidence = grows ? 0.98 : 0.85;
  }
  if (most(strided, passes.size())) {
    variants.push_back("strided");
    const PassReading& example = *passes.back();
    double attention_bytes = 0, attention_seconds = 0, matmul_bytes = 0, matmul_seconds = 0;
    for (const PassReading* p : passes) {
      attention_bytes += p->attention_bytes, attention_seconds += p->attention_seconds;
      matmul_bytes += p->matmul_bytes, matmul_seconds += p->matmul_seconds;
    }
    std::string sentence = count_of(strided, passes.size()) + " " + reading.judged_name() +
                           " run attention on a K/V view that is not dense per head (" + example.strided_view +
                           "; dense is a head's positions head_dim elements apart and its elements 1 apart): each " +
                           "head's keys and values are scattered (uncoalesced reads)";
    if (attention_seconds > 0 && matmul_seconds > 0) {  // timings size the evidence, never decide
      sentence += "; attention moves its bytes at " + format_bandwidth(attention_bytes / attention_seconds) +
                  ", the matmuls at " + format_bandwidth(matmul_bytes / matmul_seconds);
    }
    evidence.push_back(sentence);
    confidence = std::max(confidence, 0.95);
  }
  if (variants.empty()) {
    const size_t fresh = passes_where(passes, [](const PassReading& p) { return p.fresh_copies > 0; });
    if (fresh > 0) {
      diagnosis.checked.push_back("non_contiguous: copies feed attention in " + count_of(fresh, passes.size()) + " " +
                                  reading.judged_name() + " (or attention reads a strided view), but of what the "
                                  "step itself just projected: every position is recomputed, there is no cache to "
                                  "copy or lay out");
      return;
    }
    diagnosis.checked.push_back("non_contiguous: attention reads " +
                                std::string(reading.facts.strides ? "dense K/V" : "K/V (strides not recorded)") +
                                " in " + count_of(passes.size() - strided, passes.size()) + " " +
                                reading.judged_name() + ", and none of them copies the cache before it");
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
  const size_t bookkeeping_steps = passes_where(steps, [](const PassReading& p) { return p.library_reads > 0; });
  if (most(bookkeeping_steps, steps.size())) {
    std::vector<int> counts;
    std::string example;
    for (const PassReading* p : steps) {
      counts.push_back(p->library_reads);
      if (example.empty()) example = p->library_read_example;
    }
    diagnosis.limits.push_back("host_sync: " + plural(median_of(counts), "read") + " per step" +
                               (example.empty() ? "" : " (" + example + ")") +
                               " read the loop's own bookkeeping — a 0-dim counter compared and read as a bool "
                               "(transformers' generate() decides to stop so every step), or a check before the "
                               "first projection (its attention-mask test): not counted as the bug, which would "
                               "come on top of them");
  }
  const size_t reading_steps = passes_where(steps, [](const PassReading& p) { return p.reads_device(); });
  const bool one_step_each = std::all_of(reading.runs.begin(), reading.runs.end(), [](const auto& run) {
    return std::all_of(run.begin(), run.end(), [](const GroupReading& g) { return g.steps.size() <= 1; });
  });
  if (one_step_each && reading.facts.source != "decodelab") {
    // One decode step (a serving engine's trace of a step): a read per step is what every engine
    // does to return its tokens; a loop pattern needs two steps of one generation.
    if (reading_steps > 0) {
      diagnosis.not_checked.push_back("host_sync: one decode step per generation in the trace, with " +
                                 plural(steps.front()->device_reads + steps.front()->syncs, "device read") + " (" +
                                 steps.front()->read_example + "): whether they repeat every step cannot be seen");
    } else {
      diagnosis.checked.push_back("host_sync: the decode step neither reads the device nor waits for it");
    }
    return;
  }
  if (!most(reading_steps, steps.size())) {
    diagnosis.checked.push_back("host_sync: " + count_of(steps.size() - reading_steps, steps.size()) +
                                " decode steps neither read the device nor wait for it");
    return;
  }
  // Where the reads sit, step by step: inside the layer ranges (per layer), one per
  // sequence of a group of several (per sequence), else after the layers (per token).
  size_t in_layers = 0, per_sequence = 0, single_sequence_steps = 0;
  std::vector<int> per_step, sequences, layers;
  double wait = 0, wall = 0;
  int64_t device_reads = 0, syncs = 0;
  for (const PassReading* p : steps) {
    const int reads = p->device_reads + p->syncs;
    if (reads == 0) continue;
    if (2 * p->reads_in_layers > reads) {
      ++in_layers;
    } else if (p->sequences > 1 && reads == p->sequences) {
      ++per_sequence;
    }
    single_sequence_steps += p->sequences == 1;
    per_step.push_back(reads);
    sequences.push_back(static_cast<int>(p->sequences));
    layers.push_back(static_cast<int>(p->layers.size()));
    device_reads += p->device_reads, syncs += p->syncs;
    wait += p->wait_seconds;
    wall += p->pass->host_seconds();
  }
  const int count = median_of(per_step);
  const int group = median_of(sequences);
  std::string variant, where;
  if (most(in_layers, reading_steps)) {
    variant = "layer";
    where = "inside the layers: " + plural(count, "read") + " per step for " + plural(median_of(layers), "layer");
  } else if (most(per_sequence, reading_steps)) {
    variant = "sequence";
    where = "after the layers, one per sequence: " + plural(count, "read") + " per step for groups of " +
            std::to_string(group);
  } else {
    variant = "token";
    where = "after the layers: " + plural(count, "read") + " per step" +
            (most(single_sequence_steps, reading_steps) ? " (one sequence per group: per token and per sequence read alike)"
             : group > 0                                 ? " for groups of " + std::to_string(group)
                                                         : "");
  }
  Finding finding{"host_sync", variant, "", 0.98 * static_cast<double>(reading_steps) / steps.size()};
  std::string example;
  for (const PassReading* p : steps) {
    if (!p->read_example.empty()) {
      example = " (" + p->read_example + ")";
      break;
    }
  }
  std::string what;
  if (device_reads > 0) what = std::to_string(device_reads) + " blocking device-to-host reads";
  if (syncs > 0) what += (what.empty() ? "" : " and ") + plural(syncs, "sync") + (device_reads > 0 ? "" : " with the device");
  finding.evidence = what + example + " inside " + count_of(reading_steps, steps.size()) + " decode steps, " + where;
  if (reading.facts.reads_block) {
    finding.evidence += "; the host waited " + format_seconds(wait) + " in them, " +
                        format_percent(wall > 0 ? wait / wall : 0) + " of the decode steps' host time, instead of running ahead";
  } else {
    finding.evidence += "; on this CPU run they cost the host " + (wait > 0 ? format_seconds(wait) : "no measurable time") +
                        ", on a GPU each one waits until the device has run every op enqueued before it";
  }
  diagnosis.bugs.push_back(finding);
}

void check_precision(const TraceReading& reading, Diagnosis& diagnosis) {
  const auto& passes = reading.judged();
  if (passes.empty()) {
    diagnosis.not_checked.push_back("fp32_ops: the decode steps replay a captured graph and no prefill shows the "
                                    "layers: the dtypes of their matmuls and norms could not be seen");
    return;
  }
  if (passes_where(passes, [](const PassReading& p) { return p.matmuls + p.norms > 0; }) == 0) {
    diagnosis.not_checked.push_back("fp32_ops: no matmul or norm recognised in the " + std::string(reading.judged_name()));
    return;
  }
  const std::string& dtype = reading.facts.dtype;
  const std::optional<DType> parsed = parse_dtype(dtype);
  if (parsed && *parsed == DType::F32 && reading.facts.source == "torch.profiler") {
    // A PyTorch model left in fp32 (loaded without torch_dtype, run without autocast): every
    // matmul reads fp32 weights. decodelab's own fp32 runs are a scenario's stated choice.
    const size_t fp32 = passes_where(passes, [](const PassReading& p) { return p.matmuls > 0 && p.fp32_matmuls == p.matmuls; });
    if (most(fp32, passes.size())) {
      const PassReading& example = *passes.back();
      diagnosis.bugs.push_back(Finding{
          "fp32_ops", "model",
          "the whole model runs in fp32 — its embedding table and " + plural(example.fp32_matmuls, "matmul") + " per " +
              reading.judged_unit() + " in " + count_of(fp32, passes.size()) + " " + reading.judged_name() +
              " read fp32 weights (" + format_bytes(example.fp32_weight_bytes) + " per " + reading.judged_unit() +
              "; e.g. " + example.fp32_matmul_example + "); no half-precision op and no autocast; bf16 or fp16 "
              "weights would halve the bytes every step moves; if fp32 is meant (a CPU without bf16), ignore this",
          reading.facts.reads_block ? 0.8 : 0.6});
      return;
    }
  }
  if (!parsed || !is_half(*parsed)) {
    diagnosis.checked.push_back("fp32_ops: the model is " + (dtype.empty() ? std::string("of unknown dtype") : dtype) +
                                ", so fp32 matmuls and norms are its own precision, not a bug");
    return;
  }
  const size_t fp32 = passes_where(passes, [](const PassReading& p) { return p.fp32_work(); });
  if (!most(fp32, passes.size())) {
    const PassReading& example = *passes.back();
    const std::string casts = example.casts == 0
                                  ? ", with no cast ops,"
                                  : " (and " + plural(example.casts, "cast op") + " per " + reading.judged_unit() +
                                        ", e.g. " + example.cast_example + ", which alone are not fp32 work)";
    const bool norms_seen = passes_where(passes, [](const PassReading& p) { return p.norms > 0; }) > 0;
    diagnosis.checked.push_back("fp32_ops: every matmul" + std::string(norms_seen ? " and norm" : "") + " of the " +
                                dtype + " model runs in " + dtype + casts + " in " +
                                count_of(passes.size() - fp32, passes.size()) + " " + reading.judged_name() +
                                (norms_seen ? "" : " (no norm recognised: the norms' precision was not checked)"));
    return;
  }
  const PassReading& example = *passes.back();
  const bool matmuls = example.fp32_matmuls > 0, norms = example.fp32_norms + example.fp32_softmaxes > 0;
  const std::string variant = matmuls && norms ? "all" : matmuls ? "matmuls" : norms ? "norms" : "";
  std::string evidence = "in the " + dtype + " model, " + count_of(fp32, passes.size()) + " " + reading.judged_name() +
                         " run fp32 work: ";
  std::vector<std::string> parts;
  if (matmuls) {
    parts.push_back(count_of(static_cast<size_t>(example.fp32_matmuls), static_cast<size_t>(example.matmuls)) +
                    " matmuls per " + reading.judged_unit() + " read fp32 weights (" +
                    format_bytes(example.fp32_weight_bytes) + " per " + reading.judged_unit() + ", twice their " +
                    dtype + " size; e.g. " + example.fp32_matmul_example + ")");
  }
  if (example.fp32_norms > 0) {
    parts.push_back(count_of(static_cast<size_t>(example.fp32_norms), static_cast<size_t>(example.norms)) +
                    " norms run in fp32 (e.g. " + example.fp32_norm_example + ")");
  }
  if (example.fp32_softmaxes > 0) {
    parts.push_back(count_of(static_cast<size_t>(example.fp32_softmaxes), static_cast<size_t>(example.softmaxes)) +
                    " attention softmaxes run in fp32");
  }
  parts.push_back(plural(example.casts, "cast op") + " per " + reading.judged_unit() +
                  " convert activations to fp32 and back" +
                  (example.cast_example.empty() ? "" : " (e.g. " + example.cast_example + ")"));
  for (size_t i = 0; i < parts.size(); ++i) evidence += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  diagnosis.bugs.push_back(Finding{"fp32_ops", variant, evidence, example.casts > 0 ? 0.97 : 0.9});
}

void check_batching(const TraceReading& reading, Diagnosis& diagnosis) {
  size_t multi_request_runs = 0, sequential_runs = 0;
  int64_t requests = 0, groups = 0, steps_per_group = 0, uploads = 0, prefills = 0;
  std::vector<int64_t> group_sizes;
  for (const auto& run : reading.runs) {
    int64_t run_requests = 0;
    bool all_single = true;
    for (const GroupReading& group : run) {
      if (group.prefills.empty()) continue;  // a generation already under way when the trace began: no new request
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
      for (const GroupReading& group : run) {
        uploads += group.uploads;
        prefills += static_cast<int64_t>(group.prefills.size());
      }
      for (const GroupReading& group : run) group_sizes.push_back(group.sequences());
    }
  }
  if (multi_request_runs == 0 && requests == 0 && std::all_of(reading.runs.begin(), reading.runs.end(), [](const auto& run) {
        return std::all_of(run.begin(), run.end(), [](const GroupReading& g) { return g.prefills.empty() && g.sequences() > 1; });
      })) {
    diagnosis.checked.push_back("sequential_generation: the decode steps run " +
                                std::to_string(reading.runs.front().front().sequences()) + " sequences at once");
    return;
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
                     " of 1 sequence, one after another, with " +
                     (uploads > 0 ? plural(uploads, "prompt upload") + " and " : std::string()) +
                     plural(prefills, "prefill") + ", then " + std::to_string(steps_per_group) +
                     " batch-1 decode steps each (" + std::to_string(groups * steps_per_group) +
                     " steps where one batch would take " + std::to_string(steps_per_group) +
                     "): the weights are streamed again for every request";
  diagnosis.bugs.push_back(finding);
  diagnosis.limits.push_back("batch_size 1 chosen on purpose with several requests reads exactly like sequential "
                             "generation; it is reported, since the requests were served one at a time");
}

}  // namespace

Diagnosis diagnose(const TraceReading& reading) {
  const TraceOutline& outline = reading.outline;
  const TraceFacts& facts = reading.facts;

  Diagnosis diagnosis;
  DiagnosedShape& shape = diagnosis.shape;
  shape.source = facts.source;
  shape.backend = facts.backend;
  shape.device = facts.device;
  shape.dtype = facts.dtype;
  shape.model = facts.model;
  shape.runs = static_cast<int>(outline.runs.size());
  shape.decode_steps = static_cast<int>(outline.decode_steps());
  shape.layers = facts.layers;
  shape.device_span_seconds = facts.device_span_seconds;
  shape.device_busy_seconds = facts.device_busy_seconds;
  shape.kernel_busy_seconds = facts.kernel_busy_seconds;
  shape.idle_gaps = facts.idle_gaps;
  if (!reading.runs.empty()) {
    shape.groups_per_run = static_cast<int>(reading.runs.front().size());
    for (const GroupReading& group : reading.runs.front()) shape.requests_per_run += static_cast<int>(group.sequences());
  }
  if (!facts.shapes) shape.requests_per_run = 0;  // sequences per pass are not recorded
  diagnosis.limits = facts.limits;
  if (reading.steps.empty() && reading.prefills.empty()) {
    diagnosis.diagnosed = false;
    diagnosis.not_diagnosed = facts.not_diagnosed.empty()
                                  ? "the trace holds no prefill or decode step ranges: no generate loop to read"
                                  : facts.not_diagnosed;
    return diagnosis;
  }
  if (!facts.generate_loop) {
    diagnosis.diagnosed = false;
    diagnosis.not_diagnosed = facts.not_diagnosed;
    return diagnosis;
  }

  if (reading.steps_replay_graphs() && !reading.prefills.empty()) {
    diagnosis.limits.push_back("the decode steps replay a captured graph, whose ops the trace does not list: layout "
                               "and precision were read from the prefills, which run the same kernels on the same "
                               "cache");
  }
  if (!facts.shapes) {  // names and times only: where the device reads sit is all that shows
    diagnosis.limits.push_back("the trace records no tensor shapes or dtypes: no_kv_cache (rows per sequence), "
                               "non_contiguous (what a copy copies), fp32_ops (dtypes) and sequential_generation "
                               "(sequences per pass) were not checked");
    check_host_reads(reading, diagnosis);
    return diagnosis;
  }
  if (!facts.strides) {
    diagnosis.limits.push_back("the trace records no strides: attention reading a strided K/V view in place (no "
                               "copy) could not be checked; copies of the cache could");
  }
  check_kv_cache(reading, diagnosis);
  check_layout(reading, diagnosis);
  check_host_reads(reading, diagnosis);
  check_precision(reading, diagnosis);
  check_batching(reading, diagnosis);
  return diagnosis;
}

Diagnosis diagnose(const Trace& trace) { return diagnose(read_trace(trace)); }

}  // namespace decodelab
