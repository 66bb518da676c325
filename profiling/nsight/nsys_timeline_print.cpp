// Printers for NsysAnalysis: the console tables (timeline per device, top kernels,
// copies, host syncs) with the verdict and findings under them, and the JSON schema
// "decodelab-nsys". They only format; every number comes from analyze_nsys.
#include <sstream>

#include "profiling/nsight/nsys_timeline.h"
#include "profiling/report/text_table.h"
#include "profiling/units.h"

namespace decodelab {

std::string format_nsys_analysis(const NsysAnalysis& analysis) {
  std::ostringstream out;
  out << "nsys reports:";
  for (const std::string& source : analysis.sources) out << "\n  " << source;
  out << "\n";
  if (!analysis.nvtx_pattern.empty()) {
    out << "NVTX ranges matching \"" << analysis.nvtx_pattern << "\": " << analysis.nvtx_ranges << ", "
        << format_seconds(analysis.nvtx_seconds) << " of host time\n";
  }

  if (analysis.has_gpu_trace) {
    // Device time = busy + idle: the span of the trace, or with --nvtx the time the matched
    // ranges' ops took including the waits before them (which may lie outside the ranges).
    TextTable table({"device", "device time", "busy", "idle", "gaps", "largest gap", "ops"});
    for (const NsysDeviceTimeline& lane : analysis.devices) {
      const TimelineStats& t = lane.timeline;
      table.add({lane.device.empty() ? "(device)" : lane.device, format_seconds(t.device_seconds()), format_percent(t.busy_fraction()),
                 format_seconds(t.idle_seconds), std::to_string(t.gaps), format_seconds(t.largest_gap_seconds),
                 std::to_string(t.ops)});
    }
    out << "\ntimeline (gap: idle " << format_seconds(analysis.thresholds.gap_seconds_gpu) << " or more)\n" << table.str();
  }
  if (!analysis.top_kernels.empty()) {
    TextTable table({"kernel", "launches", "total", "mean", "share"});
    for (const NsysKernelStats& kernel : analysis.top_kernels) {
      table.add({truncated(kernel.name, 64), std::to_string(kernel.count), format_seconds(kernel.total_seconds),
                 format_seconds(kernel.mean_seconds()), format_percent(kernel.share)});
    }
    out << "\ntop kernels (" << analysis.kernels << " launches, " << format_seconds(analysis.kernel_seconds) << ")\n"
        << table.str();
  }
  if (!analysis.transfers.empty()) {
    TextTable table({"copies", "count", "bytes", "time"});
    for (const NsysTransferStats& transfer : analysis.transfers) {
      table.add({transfer.direction, std::to_string(transfer.count), format_bytes(transfer.bytes), format_seconds(transfer.seconds)});
    }
    out << "\n" << table.str();
  }
  if (!analysis.syncs.empty()) {
    TextTable table({"host sync", "calls", "in loop", "time", "largest"});
    for (const NsysSyncStats& sync : analysis.syncs) {
      table.add({sync.call, std::to_string(sync.count), analysis.loop_scope.empty() ? "?" : std::to_string(sync.loop_count),
                 format_seconds(sync.seconds), sync.largest_seconds > 0 ? format_seconds(sync.largest_seconds) : "-"});
    }
    out << "\n" << table.str();
    if (!analysis.loop_scope.empty()) out << "(in loop: " << analysis.loop_scope << ")\n";
  }
  if (!analysis.blocking_copies.empty()) {
    TextTable table({"blocking copy (no read-back)", "calls", "in loop", "time", "largest"});
    for (const NsysSyncStats& copy : analysis.blocking_copies) {
      table.add({copy.call, std::to_string(copy.count), analysis.loop_scope.empty() ? "?" : std::to_string(copy.loop_count),
                 format_seconds(copy.seconds), copy.largest_seconds > 0 ? format_seconds(copy.largest_seconds) : "-"});
    }
    out << "\n" << table.str();
  }
  if (analysis.launches > 0) {
    out << "\nlaunches: " << analysis.launches << " calls, " << format_seconds(analysis.launch_seconds) << " on the host";
    if (analysis.launch_median_seconds > 0) out << " (median " << format_seconds(analysis.launch_median_seconds) << " each)";
    out << "\n";
  }
  out << "\nverdict: " << analysis.verdict << "\n";
  for (const std::string& finding : analysis.findings) out << "  - " << finding << "\n";
  for (const std::string& note : analysis.notes) out << "note: " << note << "\n";
  return out.str();
}

nlohmann::json to_json(const NsysAnalysis& analysis) {
  auto timeline_json = [](const TimelineStats& t) {
    return nlohmann::json{{"span_s", t.span_seconds},   {"busy_s", t.busy_seconds}, {"idle_s", t.idle_seconds},
                          {"busy_fraction", t.busy_fraction()}, {"gaps", t.gaps}, {"largest_gap_s", t.largest_gap_seconds},
                          {"syncs", t.syncs},           {"ops", t.ops}};
  };
  nlohmann::json devices = nlohmann::json::array();
  for (const NsysDeviceTimeline& lane : analysis.devices) {
    devices.push_back({{"device", lane.device}, {"timeline", timeline_json(lane.timeline)}});
  }
  nlohmann::json kernels = nlohmann::json::array();
  for (const NsysKernelStats& kernel : analysis.top_kernels) {
    kernels.push_back({{"name", kernel.name}, {"launches", kernel.count}, {"total_s", kernel.total_seconds},
                       {"mean_s", kernel.mean_seconds()}, {"share", kernel.share}});
  }
  nlohmann::json transfers = nlohmann::json::array();
  for (const NsysTransferStats& transfer : analysis.transfers) {
    transfers.push_back({{"direction", transfer.direction}, {"count", transfer.count}, {"bytes", transfer.bytes},
                         {"seconds", transfer.seconds}});
  }
  auto waits_json = [&](const std::vector<NsysSyncStats>& waits) {
    nlohmann::json list = nlohmann::json::array();
    for (const NsysSyncStats& wait : waits) {
      list.push_back({{"call", wait.call},
                      {"count", wait.count},
                      {"seconds", wait.seconds},
                      {"largest_s", wait.largest_seconds},
                      {"loop_count", analysis.loop_scope.empty() ? nlohmann::json(nullptr) : nlohmann::json(wait.loop_count)},
                      {"loop_seconds", analysis.loop_scope.empty() ? nlohmann::json(nullptr) : nlohmann::json(wait.loop_seconds)}});
    }
    return list;
  };
  const nlohmann::json syncs = waits_json(analysis.syncs);
  return {{"schema", "decodelab-nsys"},
          {"schema_version", NsysAnalysis::kSchemaVersion},
          {"sources", analysis.sources},
          {"nvtx", {{"pattern", analysis.nvtx_pattern}, {"ranges", analysis.nvtx_ranges}, {"host_s", analysis.nvtx_seconds}}},
          {"timeline", analysis.has_gpu_trace ? timeline_json(analysis.timeline) : nlohmann::json(nullptr)},
          {"devices", devices},
          {"kernels", {{"launches", analysis.kernels},
                       {"seconds", analysis.kernel_seconds},
                       {"tiny", analysis.tiny_kernels},
                       {"tiny_seconds", analysis.tiny_kernel_seconds},
                       {"top", kernels}}},
          {"transfers", transfers},
          {"syncs", {{"calls", analysis.sync_calls},
                     {"seconds", analysis.sync_seconds},
                     {"loop_scope", analysis.loop_scope.empty() ? nlohmann::json(nullptr) : nlohmann::json(analysis.loop_scope)},
                     {"loop_calls", analysis.loop_scope.empty() ? nlohmann::json(nullptr) : nlohmann::json(analysis.loop_sync_calls)},
                     {"loop_seconds", analysis.loop_scope.empty() ? nlohmann::json(nullptr) : nlohmann::json(analysis.loop_sync_seconds)},
                     {"by_call", syncs}}},
          {"blocking_copies", waits_json(analysis.blocking_copies)},
          {"launches", {{"calls", analysis.launches},
                        {"seconds", analysis.launch_seconds},
                        {"median_s", analysis.launch_median_seconds > 0 ? nlohmann::json(analysis.launch_median_seconds)
                                                                        : nlohmann::json(nullptr)}}},
          {"overhead_bound", analysis.overhead_bound},
          {"verdict", analysis.verdict},
          {"findings", analysis.findings},
          {"notes", analysis.notes},
          {"thresholds", {{"gap_s", analysis.thresholds.gap_seconds_gpu},
                          {"idle_overhead_fraction", analysis.thresholds.idle_overhead_fraction},
                          {"tiny_kernel_s", analysis.thresholds.tiny_op_seconds_gpu}}}};
}

}  // namespace decodelab
