// The timeline reading of an Nsight Systems export — the seed's first question, "is the
// GPU idle between kernels?", asked of any CUDA program: device busy %, idle gaps (count,
// total, largest), host syncs (cudaStreamSynchronize, cudaDeviceSynchronize, cuCtxSynchronize,
// cudaEventSynchronize, device-to-host copies the host waits for: synchronous ones, or async
// ones into pageable memory) and the time the host spent in them, the copies that block the
// host without reading the device's results back (uploads: direction, pageable or pinned),
// launch counts and their median host cost, copies by direction, and the top kernels.
// The .item() advice is given only for the syncs of the repeated loop: those inside the
// matched NVTX ranges, or without ranges those after the first kernel launch (loading —
// weight uploads, allocation — comes before it); cuda_api_sum has no times, so there the
// loop's syncs are unknown and said to be.
// Optionally only the work launched inside NVTX ranges whose names match a pattern
// (decodelab's "step N" ranges: the decode steps alone).
//
// Non-obvious choice: as in profiling/model/analysis.h, an idle interval on the device belongs
// to the op that ends it, and an op belongs to an NVTX range when the API call that
// launched it (matched by correlation id) started inside the range — device work runs
// after its launch, so a step that waited on the host is the step that pays for the wait.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiling/model/analysis.h"
#include "profiling/trace/nsys_reader.h"
#include "profiling/model/roofline.h"

namespace decodelab {

struct NsysDeviceTimeline {
  std::string device;      // the trace's Device column ("" when it has none)
  TimelineStats timeline;  // wall = the device's span (or the matched ranges' host time)
};

struct NsysKernelStats {
  std::string name;
  int64_t count = 0;
  double total_seconds = 0;
  double share = 0;  // of all kernel time
  double mean_seconds() const { return count > 0 ? total_seconds / static_cast<double>(count) : 0.0; }
};

struct NsysTransferStats {
  std::string direction;  // "device-to-host", "host-to-device", "device-to-device", "peer-to-peer", "memset", ...
  int64_t count = 0;
  double bytes = 0;
  double seconds = 0;
};

struct NsysSyncStats {
  std::string call;  // "cudaStreamSynchronize", "cudaMemcpy D2H", "cudaMemcpyAsync D2H (pageable memory)"
  int64_t count = 0;
  double seconds = 0;          // host time inside the calls
  double largest_seconds = 0;
  int64_t loop_count = 0;      // of them, inside the repeated loop (see the header)
  double loop_seconds = 0;
};

struct NsysOptions {
  LimiterThresholds thresholds;  // gap line, idle share for "overhead-bound", tiny kernel line (GPU values)
  size_t top_kernels = 10;
  std::string nvtx_pattern;      // ECMAScript regex, whole-name match; empty: everything
};

struct NsysAnalysis {
  static constexpr int kSchemaVersion = 2;

  std::vector<std::string> sources;  // "file: report"
  bool has_gpu_trace = false;
  bool has_api_trace = false;

  std::string nvtx_pattern;
  int64_t nvtx_ranges = 0;           // ranges the pattern matched
  double nvtx_seconds = 0;           // host time they cover (their union)

  TimelineStats timeline;            // all devices together
  std::vector<NsysDeviceTimeline> devices;

  int64_t kernels = 0;
  double kernel_seconds = 0;
  int64_t tiny_kernels = 0;          // under thresholds.tiny_op_seconds_gpu
  double tiny_kernel_seconds = 0;
  std::vector<NsysKernelStats> top_kernels;
  std::vector<NsysTransferStats> transfers;

  std::vector<NsysSyncStats> syncs;  // by call, most time first
  int64_t sync_calls = 0;
  double sync_seconds = 0;
  // The loop's syncs: "the matched NVTX ranges", "after the first kernel launch", or ""
  // when the reports cannot tell (cuda_api_sum alone).
  std::string loop_scope;
  int64_t loop_sync_calls = 0;
  double loop_sync_seconds = 0;
  // Copies the host waits for that read nothing back ("cuMemcpyHtoD H2D (pageable memory)"):
  // uploads, not syncs.
  std::vector<NsysSyncStats> blocking_copies;
  int64_t launches = 0;              // kernel and graph launch calls
  double launch_seconds = 0;         // host time inside them
  double launch_median_seconds = 0;  // a typical launch (0 when unknown)

  bool overhead_bound = false;       // the device idles at least thresholds.idle_overhead_fraction
  std::string verdict;
  std::vector<std::string> findings;
  std::vector<std::string> notes;
  LimiterThresholds thresholds;
};

// InputError when the options need a report the tables lack (--nvtx without the NVTX or
// API trace) or the pattern matches no range.
NsysAnalysis analyze_nsys(const NsysTables& tables, const NsysOptions& options = {});

std::string format_nsys_analysis(const NsysAnalysis& analysis);
nlohmann::json to_json(const NsysAnalysis& analysis);

}  // namespace decodelab
