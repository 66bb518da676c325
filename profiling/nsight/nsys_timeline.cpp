// NsysTables -> NsysAnalysis, as a recipe: the NVTX window (if any), the ops launched in
// it, the device sweep of profiling/model/analysis.cpp (sorted by start, idle before each op, busy
// past the device's free time), kernels and copies, the host calls that wait for the device,
// then the reading in the seed's words. Printing is in nsys_timeline_print.cpp.
#include "profiling/nsight/nsys_timeline.h"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <unordered_map>

#include "engine/base/errors.h"
#include "profiling/report/text_table.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

constexpr double kNs = 1e-9;

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }
bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// "cudaMemcpyAsync_v3020_ptsz" -> "cudaMemcpyAsync": versioned and per-thread-stream entry points read as one call.
std::string base_api_name(std::string_view name) {
  std::string base(name);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::string_view suffix : {"_ptsz", "_ptds"}) {
      if (ends_with(base, suffix)) {
        base.erase(base.size() - suffix.size());
        changed = true;
      }
    }
    const size_t version = base.rfind("_v");
    if (version != std::string::npos && version + 2 < base.size() &&
        std::all_of(base.begin() + static_cast<std::ptrdiff_t>(version) + 2, base.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      base.erase(version);
      changed = true;
    }
  }
  return base;
}

bool is_kernel(const NsysGpuOp& op) { return !starts_with(op.name, "[CUDA "); }

// "D2H", "H2D", "D2D", "P2P", "H2H", "memset", or "" for a kernel or an unknown copy.
std::string short_direction(std::string_view name) {
  if (starts_with(name, "[CUDA memset")) return "memset";
  if (!starts_with(name, "[CUDA memcpy")) return "";
  const std::pair<std::string_view, const char*> spellings[] = {
      {"HtoD", "H2D"}, {"Host-to-Device", "H2D"}, {"DtoH", "D2H"}, {"Device-to-Host", "D2H"},
      {"DtoD", "D2D"}, {"Device-to-Device", "D2D"}, {"PtoP", "P2P"}, {"Peer-to-Peer", "P2P"},
      {"HtoH", "H2H"}, {"Host-to-Host", "H2H"}};
  for (const auto& [spelling, direction] : spellings) {
    if (name.find(spelling) != std::string_view::npos) return direction;
  }
  return "copy";
}

const char* long_direction(const std::string& direction) {
  if (direction == "H2D") return "host-to-device";
  if (direction == "D2H") return "device-to-host";
  if (direction == "D2D") return "device-to-device";
  if (direction == "P2P") return "peer-to-peer";
  if (direction == "H2H") return "host-to-host";
  if (direction == "memset") return "memset";
  return "other copy";
}

// A host call that waits: a sync (the host waits for the device's results) or a blocking
// copy (the host waits for its own upload); None for a call that returns at once.
struct HostWait {
  enum Kind : uint8_t { None, Sync, BlockingCopy } kind = None;
  std::string label;
};

HostWait classify_host_call(const NsysApiCall& call, const NsysGpuOp* copy) {
  static const std::set<std::string, std::less<>> waits = {
      "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
      "cuCtxSynchronize",      "cuStreamSynchronize",   "cuEventSynchronize"};
  const std::string base = base_api_name(call.name);
  if (waits.count(base)) return {HostWait::Sync, base};
  if (!starts_with(base, "cudaMemcpy") && !starts_with(base, "cuMemcpy")) return {};
  std::string direction = copy ? short_direction(copy->name) : "";
  if (direction.empty() || direction == "copy") {
    if (base.find("DtoH") != std::string::npos) direction = "D2H";
    else if (base.find("HtoD") != std::string::npos) direction = "H2D";
    else if (base.find("DtoD") != std::string::npos) direction = "D2D";
  }
  // The host side of the copy: where D2H writes, where H2D reads.
  std::string host_memory;
  if (copy && direction == "D2H") host_memory = copy->destination_kind;
  if (copy && direction == "H2D") host_memory = copy->source_kind;
  const bool pageable = host_memory == "Pageable";
  const std::string memory = host_memory.empty() ? "" : " (" + std::string(pageable ? "pageable" : "pinned") + " memory)";
  if (base.find("Async") != std::string::npos) {
    // An async copy to or from pageable memory is staged by the host: it returns when done.
    if (!pageable) return {};
    if (direction == "D2H") return {HostWait::Sync, base + " D2H (pageable memory)"};
    return {HostWait::BlockingCopy, base + " " + direction + " (pageable memory)"};
  }
  if (direction == "D2D") return {};  // a device-to-device copy does not wait for the host's view
  if (direction == "D2H") return {HostWait::Sync, base + " D2H" + memory};
  if (direction.empty() || direction == "copy") return {HostWait::Sync, base};  // direction unknown: it may read back
  return {HostWait::BlockingCopy, base + " " + direction + memory};
}

bool is_launch(const std::string& base) {
  static const std::set<std::string, std::less<>> launches = {
      "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel", "cuLaunchKernel",
      "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cudaGraphLaunch",        "cuGraphLaunch"};
  return launches.count(base) > 0;
}

// Sorted, merged host intervals of the matched NVTX ranges.
class RangeUnion {
 public:
  void add(double start, double end) { intervals_.push_back({start, end}); }
  void merge() {
    std::sort(intervals_.begin(), intervals_.end());
    std::vector<std::pair<double, double>> merged;
    for (const auto& interval : intervals_) {
      if (!merged.empty() && interval.first <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, interval.second);
      } else {
        merged.push_back(interval);
      }
    }
    intervals_ = std::move(merged);
  }
  bool contains(double t) const {
    auto after = std::upper_bound(intervals_.begin(), intervals_.end(), t,
                                  [](double value, const std::pair<double, double>& interval) { return value < interval.first; });
    return after != intervals_.begin() && t <= std::prev(after)->second;
  }
  double total() const {
    double sum = 0;
    for (const auto& [start, end] : intervals_) sum += end - start;
    return sum;
  }

 private:
  std::vector<std::pair<double, double>> intervals_;
};

std::string range_names_sample(const NsysTables& tables) {
  std::vector<std::string> names;
  for (const NsysRange& range : tables.ranges) {
    if (std::find(names.begin(), names.end(), range.name) == names.end()) names.push_back(range.name);
    if (names.size() == 6) break;
  }
  std::string sample;
  for (const std::string& name : names) sample += (sample.empty() ? "\"" : ", \"") + name + "\"";
  return sample.empty() ? "none" : sample;
}

void add_sync(std::map<std::string, NsysSyncStats>& syncs, const std::string& label, int64_t count, double seconds,
              double largest, bool in_loop) {
  NsysSyncStats& stats = syncs[label];
  stats.call = label;
  stats.count += count;
  stats.seconds += seconds;
  stats.largest_seconds = std::max(stats.largest_seconds, largest);
  if (in_loop) {
    stats.loop_count += count;
    stats.loop_seconds += seconds;
  }
}

double nsys_median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

void read_verdict(NsysAnalysis& analysis) {
  const LimiterThresholds& thresholds = analysis.thresholds;
  const TimelineStats& timeline = analysis.timeline;
  if (analysis.has_gpu_trace && timeline.device_seconds() > 0) {
    analysis.overhead_bound = timeline.idle_fraction() >= thresholds.idle_overhead_fraction;
    analysis.findings.push_back("the GPU is busy " + format_percent(timeline.busy_fraction()) + " of " +
                                format_seconds(timeline.device_seconds()) + ": idle " + format_seconds(timeline.idle_seconds) +
                                " in " + std::to_string(timeline.gaps) + " gaps of " +
                                format_seconds(thresholds.gap_seconds_gpu) + " or more, the largest " +
                                format_seconds(timeline.largest_gap_seconds));
    analysis.verdict = analysis.overhead_bound
                           ? "overhead-bound: the GPU is idle " + format_percent(timeline.idle_fraction()) +
                                 " of the time between kernels — CUDA graphs, fusion, fewer host syncs, async copies"
                           : "the GPU is kept busy (" + format_percent(timeline.busy_fraction()) +
                                 "): kernel time decides the speed — read the top kernels with Nsight Compute "
                                 "(scripts/ncu-profile.sh, then decodelab ncu)";
  } else if (analysis.has_gpu_trace) {
    analysis.verdict = "cuda_gpu_trace holds no GPU work" + std::string(analysis.nvtx_pattern.empty() ? "" : " in the matched ranges");
  } else {
    analysis.verdict = "no cuda_gpu_trace: device busy % and gaps are unknown; the totals below rank the work";
  }
  const std::string span_name = analysis.nvtx_pattern.empty() ? " of the trace's span)" : " of the ranges' host time)";
  auto share_of_span = [&](double seconds) {
    return timeline.span_seconds > 0 ? " (" + format_percent(seconds / timeline.span_seconds) + span_name : std::string();
  };
  if (analysis.loop_sync_calls > 0) {
    analysis.findings.push_back(std::to_string(analysis.loop_sync_calls) + " host syncs in the loop (" + analysis.loop_scope +
                                ") hold the host " + format_seconds(analysis.loop_sync_seconds) +
                                share_of_span(analysis.loop_sync_seconds) +
                                ": each waits for the device, as .item() or .cpu() do — keep values on the device and "
                                "read them once, after the loop, into pinned memory");
  }
  if (!analysis.loop_scope.empty() && analysis.sync_calls > analysis.loop_sync_calls) {
    analysis.findings.push_back(std::to_string(analysis.sync_calls - analysis.loop_sync_calls) +
                                " host syncs before the first kernel launch (loading, set-up), " +
                                format_seconds(analysis.sync_seconds - analysis.loop_sync_seconds) + ": not the loop's");
  }
  if (analysis.loop_scope.empty() && analysis.sync_calls > 0) {
    analysis.findings.push_back(std::to_string(analysis.sync_calls) + " host syncs hold the host " +
                                format_seconds(analysis.sync_seconds) + share_of_span(analysis.sync_seconds) +
                                "; cuda_api_sum has no times, so which of them run in the loop is unknown — export "
                                "cuda_api_trace (or read the loop's NVTX ranges with --nvtx) to tell");
  }
  int64_t copy_calls = 0;
  double copy_seconds = 0;
  for (const NsysSyncStats& copy : analysis.blocking_copies) {
    copy_calls += copy.count;
    copy_seconds += copy.seconds;
  }
  if (copy_calls > 0) {
    analysis.findings.push_back(std::to_string(copy_calls) + " copies block the host " + format_seconds(copy_seconds) +
                                " without reading results back (" + analysis.blocking_copies.front().call +
                                (analysis.blocking_copies.size() > 1 ? ", ..." : "") +
                                "): uploads such as loading weights, not syncs; pinned memory and cudaMemcpyAsync let "
                                "them overlap");
  }
  if (analysis.kernels > 0 && 2 * analysis.tiny_kernels >= analysis.kernels) {
    analysis.findings.push_back(std::to_string(analysis.tiny_kernels) + " of " + std::to_string(analysis.kernels) +
                                " kernels run under " + format_seconds(thresholds.tiny_op_seconds_gpu) + " (" +
                                format_percent(analysis.kernel_seconds > 0 ? analysis.tiny_kernel_seconds / analysis.kernel_seconds : 0) +
                                " of kernel time): launch overhead dominates them — fuse them or capture the step in a "
                                "CUDA graph");
  }
  if (analysis.launches > 0 && analysis.kernels > 0 && analysis.launch_median_seconds > 0) {
    // The median: one slow first launch (module loading) drags the mean far above a typical one.
    const double per_launch = analysis.launch_median_seconds;
    const double per_kernel = analysis.kernel_seconds / static_cast<double>(analysis.kernels);
    if (per_launch >= per_kernel) {
      analysis.findings.push_back("a launch costs the host " + format_seconds(per_launch) + " (median), more than the mean kernel runs (" +
                                  format_seconds(per_kernel) + "): the host cannot keep the GPU fed");
    }
  }
  if (!analysis.top_kernels.empty()) {
    const NsysKernelStats& top = analysis.top_kernels.front();
    analysis.findings.push_back("top kernel: " + truncated(top.name, 80) + ", " + format_percent(top.share) +
                                " of kernel time (" + std::to_string(top.count) + " launches, mean " +
                                format_seconds(top.mean_seconds()) + ")");
  }
}

// The host intervals of the NVTX ranges the pattern matches; InputError if it cannot apply.
RangeUnion matched_ranges(const NsysTables& tables, const std::string& pattern_text, NsysAnalysis& analysis) {
  if (!tables.has(NsysReport::NvtxTrace)) {
    throw InputError("--nvtx", 0, pattern_text, "needs the nvtx_pushpop_trace report among the files");
  }
  if (!analysis.has_gpu_trace || !analysis.has_api_trace) {
    throw InputError("--nvtx", 0, pattern_text,
                     "needs cuda_gpu_trace and cuda_api_trace: GPU work is placed in a range by the API call that launched it");
  }
  std::regex pattern;
  try {
    pattern = std::regex(pattern_text, std::regex::ECMAScript);
  } catch (const std::regex_error& error) {
    throw InputError("--nvtx", 0, pattern_text, std::string("not a valid regular expression: ") + error.what());
  }
  RangeUnion window;
  for (const NsysRange& range : tables.ranges) {
    // Newer nsys prefixes a range with its domain ("domain:name"; ":name" for the default one).
    const bool match = std::regex_match(range.name, pattern) ||
                       (starts_with(range.name, ":") && std::regex_match(range.name.substr(1), pattern));
    if (!match) continue;
    window.add(range.start_ns, range.end_ns);
    ++analysis.nvtx_ranges;
  }
  if (analysis.nvtx_ranges == 0) {
    throw InputError("--nvtx", 0, pattern_text,
                     "matches no NVTX range (the whole name must match); the trace's ranges include " +
                         range_names_sample(tables));
  }
  window.merge();
  analysis.nvtx_seconds = window.total() * kNs;
  return window;
}

// Which GPU ops count: all, or those whose launching call started inside the window.
std::vector<bool> ops_in_window(const NsysTables& tables, const RangeUnion* window, int64_t& unplaced) {
  std::vector<bool> included(tables.gpu_ops.size(), true);
  if (!window) return included;
  std::unordered_map<int64_t, const NsysApiCall*> launcher;
  for (const NsysApiCall& call : tables.api_calls) {
    if (call.correlation) launcher.emplace(*call.correlation, &call);
  }
  for (size_t i = 0; i < tables.gpu_ops.size(); ++i) {
    const auto& correlation = tables.gpu_ops[i].correlation;
    auto found = correlation ? launcher.find(*correlation) : launcher.end();
    if (found == launcher.end()) ++unplaced;
    included[i] = found != launcher.end() && window->contains(found->second->start_ns);
  }
  return included;
}

// Busy, idle and gaps per device: every op moves the device's free time, the included ones
// are counted (idle before an op is the op's), as profiling/model/analysis.cpp does for a trace.
void sweep_devices(const NsysTables& tables, const std::vector<bool>& included, bool filtered, NsysAnalysis& analysis) {
  std::vector<std::string> device_order;
  std::map<std::string, std::vector<size_t>> by_device;
  for (size_t i = 0; i < tables.gpu_ops.size(); ++i) {
    const std::string device(tables.gpu_ops[i].device);
    if (!by_device.count(device)) device_order.push_back(device);
    by_device[device].push_back(i);
  }
  const double gap_line_ns = analysis.thresholds.gap_seconds_gpu / kNs;
  double first_start = 0, last_end = 0;
  for (const std::string& device : device_order) {
    std::vector<size_t>& order = by_device[device];
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return tables.gpu_ops[a].start_ns < tables.gpu_ops[b].start_ns; });
    NsysDeviceTimeline lane;
    lane.device = device;
    const double span_start = tables.gpu_ops[order.front()].start_ns;
    double device_free = span_start;
    for (size_t i : order) {
      const NsysGpuOp& op = tables.gpu_ops[i];
      const double idle = std::max(0.0, op.start_ns - device_free);
      const double busy = std::max(0.0, op.end_ns() - std::max(op.start_ns, device_free));
      device_free = std::max(device_free, op.end_ns());
      if (!included[i]) continue;
      ++lane.timeline.ops;
      lane.timeline.busy_seconds += busy * kNs;
      lane.timeline.idle_seconds += idle * kNs;
      if (idle >= gap_line_ns) ++lane.timeline.gaps;
      lane.timeline.largest_gap_seconds = std::max(lane.timeline.largest_gap_seconds, idle * kNs);
    }
    lane.timeline.span_seconds = filtered ? analysis.nvtx_seconds : (device_free - span_start) * kNs;
    first_start = analysis.devices.empty() ? span_start : std::min(first_start, span_start);
    last_end = analysis.devices.empty() ? device_free : std::max(last_end, device_free);
    analysis.timeline.add(lane.timeline);
    analysis.devices.push_back(std::move(lane));
  }
  analysis.timeline.span_seconds = filtered ? analysis.nvtx_seconds : (last_end - first_start) * kNs;
}

void count_kernel(std::map<std::string, NsysKernelStats>& kernels, const std::string& name, int64_t count,
                  double total_ns, double mean_ns, NsysAnalysis& analysis) {
  NsysKernelStats& stats = kernels[name];
  stats.name = name;
  stats.count += count;
  stats.total_seconds += total_ns * kNs;
  analysis.kernels += count;
  analysis.kernel_seconds += total_ns * kNs;
  if (mean_ns < analysis.thresholds.tiny_op_seconds_gpu / kNs) {
    analysis.tiny_kernels += count;
    analysis.tiny_kernel_seconds += total_ns * kNs;
  }
}

// Kernels by name (from the trace, else the summary) and copies by direction.
void count_device_work(const NsysTables& tables, const std::vector<bool>& included, size_t top, NsysAnalysis& analysis) {
  std::map<std::string, NsysKernelStats> kernels;
  std::map<std::string, NsysTransferStats> transfers;
  for (size_t i = 0; i < tables.gpu_ops.size(); ++i) {
    if (!included[i]) continue;
    const NsysGpuOp& op = tables.gpu_ops[i];
    if (is_kernel(op)) {
      count_kernel(kernels, std::string(op.name), 1, op.duration_ns, op.duration_ns, analysis);
      continue;
    }
    const std::string direction = long_direction(short_direction(op.name));
    NsysTransferStats& stats = transfers[direction];
    stats.direction = direction;
    ++stats.count;
    stats.bytes += op.bytes.value_or(0);
    stats.seconds += op.duration_ns * kNs;
  }
  if (!analysis.has_gpu_trace && tables.has(NsysReport::KernelSummary)) {
    for (const NsysSummaryRow& row : tables.kernel_summary) {
      const double mean_ns = row.count > 0 ? row.total_ns / static_cast<double>(row.count) : 0.0;
      count_kernel(kernels, row.name, row.count, row.total_ns, mean_ns, analysis);
    }
    analysis.notes.push_back("kernels from cuda_gpu_kern_sum: a kernel counts as tiny by its mean duration");
  } else if (analysis.has_gpu_trace && tables.has(NsysReport::KernelSummary)) {
    analysis.notes.push_back("cuda_gpu_kern_sum not used: cuda_gpu_trace lists every launch");
  }
  for (auto& [name, stats] : kernels) {
    stats.share = analysis.kernel_seconds > 0 ? stats.total_seconds / analysis.kernel_seconds : 0.0;
    analysis.top_kernels.push_back(stats);
  }
  std::stable_sort(analysis.top_kernels.begin(), analysis.top_kernels.end(),
                   [](const NsysKernelStats& a, const NsysKernelStats& b) { return a.total_seconds > b.total_seconds; });
  if (analysis.top_kernels.size() > top) analysis.top_kernels.resize(top);
  for (auto& [direction, stats] : transfers) analysis.transfers.push_back(stats);
}

// Host calls that wait for the device, and launches (from the trace, else the summary).
void count_host_calls(const NsysTables& tables, const RangeUnion* window, NsysAnalysis& analysis) {
  std::map<std::string, NsysSyncStats> syncs;
  std::map<std::string, NsysSyncStats> copies;
  std::unordered_map<int64_t, const NsysGpuOp*> copy_of;
  for (const NsysGpuOp& op : tables.gpu_ops) {
    if (!is_kernel(op) && op.correlation) copy_of.emplace(*op.correlation, &op);
  }
  // Without NVTX ranges the loop starts at the first kernel launch.
  std::optional<double> first_launch;
  for (const NsysApiCall& call : tables.api_calls) {
    if (is_launch(base_api_name(call.name)) && (!first_launch || call.start_ns < *first_launch)) first_launch = call.start_ns;
  }
  if (window) {
    analysis.loop_scope = "the matched NVTX ranges";
  } else if (analysis.has_api_trace && first_launch) {
    analysis.loop_scope = "after the first kernel launch";
  }
  std::vector<double> launch_ns;
  for (const NsysApiCall& call : tables.api_calls) {
    if (window && !window->contains(call.start_ns)) continue;
    auto copy = call.correlation ? copy_of.find(*call.correlation) : copy_of.end();
    const HostWait wait = classify_host_call(call, copy == copy_of.end() ? nullptr : copy->second);
    const bool in_loop = window || (first_launch && call.start_ns >= *first_launch);
    if (wait.kind == HostWait::Sync) add_sync(syncs, wait.label, 1, call.duration_ns * kNs, call.duration_ns * kNs, in_loop);
    if (wait.kind == HostWait::BlockingCopy) add_sync(copies, wait.label, 1, call.duration_ns * kNs, call.duration_ns * kNs, in_loop);
    if (is_launch(base_api_name(call.name))) {
      ++analysis.launches;
      analysis.launch_seconds += call.duration_ns * kNs;
      launch_ns.push_back(call.duration_ns);
    }
  }
  analysis.launch_median_seconds = nsys_median(std::move(launch_ns)) * kNs;
  if (!analysis.has_api_trace && tables.has(NsysReport::ApiSummary)) {
    int64_t most_calls = 0;
    for (const NsysSummaryRow& row : tables.api_summary) {
      NsysApiCall call;
      call.name = row.name;
      const HostWait wait = classify_host_call(call, nullptr);
      if (wait.kind == HostWait::Sync) add_sync(syncs, wait.label, row.count, row.total_ns * kNs, 0.0, false);
      if (wait.kind == HostWait::BlockingCopy) add_sync(copies, wait.label, row.count, row.total_ns * kNs, 0.0, false);
      if (is_launch(base_api_name(row.name))) {
        analysis.launches += row.count;
        analysis.launch_seconds += row.total_ns * kNs;
        // The most-called launch entry point's median stands for a typical launch.
        if (row.count > most_calls) {
          most_calls = row.count;
          const double mean_ns = row.count > 0 ? row.total_ns / static_cast<double>(row.count) : 0.0;
          analysis.launch_median_seconds = row.median_ns.value_or(mean_ns) * kNs;
        }
      }
    }
    analysis.notes.push_back("host calls from cuda_api_sum: async copies into pageable memory cannot be told apart there");
  } else if (!analysis.has_api_trace) {
    analysis.notes.push_back("no cuda_api_trace or cuda_api_sum: host syncs and launches are unknown");
  }
  for (auto& [label, stats] : syncs) {
    analysis.sync_calls += stats.count;
    analysis.sync_seconds += stats.seconds;
    analysis.loop_sync_calls += stats.loop_count;
    analysis.loop_sync_seconds += stats.loop_seconds;
    analysis.syncs.push_back(stats);
  }
  for (auto& [label, stats] : copies) analysis.blocking_copies.push_back(stats);
  auto most_time_first = [](const NsysSyncStats& a, const NsysSyncStats& b) { return a.seconds > b.seconds; };
  std::stable_sort(analysis.syncs.begin(), analysis.syncs.end(), most_time_first);
  std::stable_sort(analysis.blocking_copies.begin(), analysis.blocking_copies.end(), most_time_first);
  analysis.timeline.syncs = analysis.sync_calls;
}

}  // namespace

NsysAnalysis analyze_nsys(const NsysTables& tables, const NsysOptions& options) {
  NsysAnalysis analysis;
  analysis.thresholds = options.thresholds;
  analysis.sources = tables.sources;
  analysis.has_gpu_trace = tables.has(NsysReport::GpuTrace);
  analysis.has_api_trace = tables.has(NsysReport::ApiTrace);
  analysis.nvtx_pattern = options.nvtx_pattern;

  std::optional<RangeUnion> window;
  if (!options.nvtx_pattern.empty()) window = matched_ranges(tables, options.nvtx_pattern, analysis);
  int64_t unplaced = 0;
  const std::vector<bool> included = ops_in_window(tables, window ? &*window : nullptr, unplaced);
  sweep_devices(tables, included, window.has_value(), analysis);
  count_device_work(tables, included, options.top_kernels, analysis);
  count_host_calls(tables, window ? &*window : nullptr, analysis);

  if (window) {
    analysis.notes.push_back("only work launched inside the " + std::to_string(analysis.nvtx_ranges) +
                             " NVTX ranges matching \"" + options.nvtx_pattern + "\" (" +
                             format_seconds(analysis.nvtx_seconds) + " of host time)");
    if (unplaced > 0) {
      analysis.notes.push_back(std::to_string(unplaced) + " GPU ops have no launching call in cuda_api_trace and are left out");
    }
  }
  read_verdict(analysis);
  return analysis;
}

}  // namespace decodelab
