// The timeline reading of nsys exports, on a hand-made decode (tests/fixtures/nsys): an
// upload, a prefill GEMM, three decode steps that each read a token back through pageable
// memory and synchronise, and a final read. Step s (s = 0, 1, 2) starts at
// B = 1,010,000 + 120,000·s ns; its kernels run B+4,000..+7,000 (rmsnorm), B+9,000..+49,000
// (gemv), ..+61,000 (attention), ..+65,000 (argmax), then the copy to B+67,000. Every
// expected number below is worked out from that construction, in the comments.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "engine/base/errors.h"
#include "profiling/nsight/nsys_timeline.h"

using namespace decodelab;

namespace {

std::filesystem::path nsys_fixture(const char* name) {
  return std::filesystem::path(DECODELAB_SOURCE_DIR) / "tests" / "fixtures" / "nsys" / name;
}

NsysTables decode_traces(bool with_nvtx = true) {
  NsysTables tables;
  read_nsys_csv(nsys_fixture("decode_cuda_gpu_trace.csv"), tables);
  read_nsys_csv(nsys_fixture("decode_cuda_api_trace.csv"), tables);
  if (with_nvtx) read_nsys_csv(nsys_fixture("decode_nvtx_pushpop_trace.csv"), tables);
  return tables;
}

const NsysSyncStats* sync(const NsysAnalysis& analysis, const std::string& call) {
  for (const NsysSyncStats& stats : analysis.syncs) {
    if (stats.call == call) return &stats;
  }
  return nullptr;
}

constexpr double kUs = 1e-6;

}  // namespace

TEST_CASE("nsys timeline: the whole decode trace", "[nsys_timeline]") {
  const NsysAnalysis analysis = analyze_nsys(decode_traces());

  // Device: first op 1,001,000, last end 1,334,000 -> 333 µs. Busy: upload 1 + GEMM 5 +
  // 3 steps × (3+40+12+4+2) + final read 3 = 192 µs; idle is the rest, 141 µs.
  REQUIRE(analysis.devices.size() == 1);
  CHECK(analysis.devices[0].device == "NVIDIA H100 80GB HBM3 (0)");
  const TimelineStats& t = analysis.timeline;
  CHECK(t.span_seconds == Approx(333 * kUs));
  CHECK(t.busy_seconds == Approx(192 * kUs));
  CHECK(t.idle_seconds == Approx(141 * kUs));
  CHECK(t.busy_seconds + t.idle_seconds == Approx(t.span_seconds));
  // Gaps of 5 µs or more: before step 1 (6), steps 2 and 3 (57 each), the final read (14).
  CHECK(t.gaps == 4);
  CHECK(t.largest_gap_seconds == Approx(57 * kUs));
  CHECK(t.ops == 18);
  CHECK(analysis.overhead_bound);  // idle 141/333 = 42% ≥ 30%
  CHECK_THAT(analysis.verdict, Catch::Matchers::StartsWith("overhead-bound"));

  // Kernels: 13 launches, 182 µs; under 10 µs: GEMM (5), 3 rmsnorm (3), 3 argmax (4) = 26 µs.
  CHECK(analysis.kernels == 13);
  CHECK(analysis.kernel_seconds == Approx(182 * kUs));
  CHECK(analysis.tiny_kernels == 7);
  CHECK(analysis.tiny_kernel_seconds == Approx(26 * kUs));
  REQUIRE(analysis.top_kernels.size() == 5);
  CHECK(analysis.top_kernels[0].name.rfind("void gemv2T_kernel_val", 0) == 0);
  CHECK(analysis.top_kernels[0].share == Approx(120.0 / 182.0));
  CHECK(analysis.top_kernels[0].mean_seconds() == Approx(40 * kUs));

  // Copies: one upload of 4,096 B; four reads, 3 × 4 B + 1,024 B, 3 × 2 + 3 µs.
  REQUIRE(analysis.transfers.size() == 2);
  const NsysTransferStats& reads = analysis.transfers[0].direction == "device-to-host" ? analysis.transfers[0] : analysis.transfers[1];
  CHECK(reads.count == 4);
  CHECK(reads.bytes == Approx(1036.0));
  CHECK(reads.seconds == Approx(9 * kUs));

  // Syncs: three async reads into pageable memory (47.8 µs each), four stream syncs
  // (3 × 1.5 + 1 µs), one synchronous read (6 µs); the pinned upload is no sync.
  CHECK(analysis.sync_calls == 8);
  CHECK(analysis.sync_seconds == Approx(3 * 47.8 * kUs + 5.5 * kUs + 6 * kUs));
  REQUIRE(sync(analysis, "cudaMemcpyAsync D2H (pageable memory)"));
  CHECK(sync(analysis, "cudaMemcpyAsync D2H (pageable memory)")->count == 3);
  CHECK(sync(analysis, "cudaMemcpyAsync D2H (pageable memory)")->largest_seconds == Approx(47.8 * kUs));
  REQUIRE(sync(analysis, "cudaStreamSynchronize"));
  CHECK(sync(analysis, "cudaStreamSynchronize")->count == 4);
  REQUIRE(sync(analysis, "cudaMemcpy D2H (pinned memory)"));
  CHECK(analysis.syncs.front().call == "cudaMemcpyAsync D2H (pageable memory)");  // most time first
  // All of them come after the first launch (1,001,000 ns): the loop's.
  CHECK(analysis.loop_scope == "after the first kernel launch");
  CHECK(analysis.loop_sync_calls == 8);
  CHECK(analysis.blocking_copies.empty());  // the upload is async from pinned memory
  CHECK(analysis.launches == 13);
  CHECK(analysis.launch_seconds == Approx(13 * 5 * kUs));
  CHECK(analysis.launch_median_seconds == Approx(5 * kUs));
}

TEST_CASE("nsys timeline: only the decode steps, by their NVTX ranges", "[nsys_timeline]") {
  NsysOptions options;
  options.nvtx_pattern = "step [0-9]+";
  const NsysAnalysis analysis = analyze_nsys(decode_traces(), options);

  // Three "step N" ranges of 70 µs; their 15 ops are busy 3 × 61 µs. Idle is what precedes
  // each step op: 6 + 2 (step 1, after the prefill), 57 + 2 (steps 2 and 3).
  CHECK(analysis.nvtx_ranges == 3);
  CHECK(analysis.nvtx_seconds == Approx(210 * kUs));
  const TimelineStats& t = analysis.timeline;
  CHECK(t.span_seconds == Approx(210 * kUs));
  CHECK(t.ops == 15);
  CHECK(t.busy_seconds == Approx(183 * kUs));
  CHECK(t.idle_seconds == Approx(126 * kUs));
  CHECK(t.gaps == 3);
  CHECK(analysis.overhead_bound);
  CHECK(analysis.kernels == 12);
  CHECK(analysis.kernel_seconds == Approx(177 * kUs));
  CHECK(analysis.tiny_kernels == 6);
  CHECK(analysis.sync_calls == 6);
  CHECK(analysis.sync_seconds == Approx(3 * (47.8 + 1.5) * kUs));
  CHECK(analysis.launches == 12);
  CHECK(analysis.top_kernels.size() == 4);  // the prefill GEMM is left out

  SECTION("a range name with the domain separator newer nsys writes matches too") {
    NsysTables tables = decode_traces();
    for (NsysRange& range : tables.ranges) range.name = ":" + range.name;
    CHECK(analyze_nsys(tables, options).nvtx_ranges == 3);
  }
}

TEST_CASE("nsys timeline: from the summaries alone", "[nsys_timeline]") {
  NsysTables tables;
  read_nsys_csv(nsys_fixture("decode_summaries.csv"), tables);
  const NsysAnalysis analysis = analyze_nsys(tables);

  CHECK_FALSE(analysis.has_gpu_trace);
  CHECK_THAT(analysis.verdict, Catch::Matchers::Contains("no cuda_gpu_trace"));
  CHECK(analysis.kernels == 13);
  CHECK(analysis.kernel_seconds == Approx(182 * kUs));
  CHECK(analysis.tiny_kernels == 7);  // by their means: GEMM 5, argmax 4, rmsnorm 3 µs
  // The summary cannot tell pageable async copies: stream syncs and the synchronous read only.
  CHECK(analysis.sync_calls == 5);
  CHECK(analysis.sync_seconds == Approx(11.5 * kUs));
  CHECK(sync(analysis, "cudaMemcpy"));
  // Without times, which syncs belong to the loop is unknown: no .item() advice.
  CHECK(analysis.loop_scope.empty());
  for (const std::string& finding : analysis.findings) CHECK(finding.find(".item()") == std::string::npos);
  CHECK(analysis.launches == 13);
  CHECK(analysis.launch_median_seconds == Approx(5 * kUs));  // cudaLaunchKernel's "Med (ns)"
  CHECK(analysis.notes.size() == 2);
}

TEST_CASE("nsys timeline: thresholds are data, overlapping streams count once", "[nsys_timeline]") {
  NsysTables tables;
  parse_nsys_csv("Start (ns),Duration (ns),CorrId,Device,Strm,Name\n"
                 "0,10000,1,GPU,7,a\n"
                 "4000,10000,2,GPU,8,b\n"      // overlaps a: busy runs 0..14,000
                 "20000,2000,3,GPU,7,c\n",     // after a 6 µs gap
                 "overlap.csv", tables);
  const NsysAnalysis base = analyze_nsys(tables);
  CHECK(base.timeline.busy_seconds == Approx(16 * kUs));
  CHECK(base.timeline.idle_seconds == Approx(6 * kUs));
  CHECK(base.timeline.gaps == 1);
  CHECK_FALSE(base.overhead_bound);  // idle 6/22 = 27%

  NsysOptions strict;
  strict.thresholds.gap_seconds_gpu = 7e-6;
  strict.thresholds.idle_overhead_fraction = 0.25;
  const NsysAnalysis moved = analyze_nsys(tables, strict);
  CHECK(moved.timeline.gaps == 0);
  CHECK(moved.overhead_bound);
}

TEST_CASE("nsys timeline: --nvtx needs its reports and a range to match", "[nsys_timeline]") {
  NsysOptions options;
  options.nvtx_pattern = "step [0-9]+";
  SECTION("without the NVTX trace") { CHECK_THROWS_AS(analyze_nsys(decode_traces(false), options), InputError); }
  SECTION("without the API trace") {
    NsysTables tables;
    read_nsys_csv(nsys_fixture("decode_cuda_gpu_trace.csv"), tables);
    read_nsys_csv(nsys_fixture("decode_nvtx_pushpop_trace.csv"), tables);
    CHECK_THROWS_AS(analyze_nsys(tables, options), InputError);
  }
  SECTION("a pattern that matches nothing lists the ranges there are") {
    options.nvtx_pattern = "decode";
    try {
      analyze_nsys(decode_traces(), options);
      FAIL("expected an InputError");
    } catch (const InputError& error) {
      CHECK(error.file() == "--nvtx");
      CHECK_THAT(error.problem(), Catch::Matchers::Contains("\"step 1\""));
    }
  }
  SECTION("a pattern that is no regex") {
    options.nvtx_pattern = "step [";
    CHECK_THROWS_AS(analyze_nsys(decode_traces(), options), InputError);
  }
}

TEST_CASE("nsys timeline: printout and JSON", "[nsys_timeline]") {
  const NsysAnalysis analysis = analyze_nsys(decode_traces());
  const std::string text = format_nsys_analysis(analysis);
  CHECK_THAT(text, Catch::Matchers::Contains("verdict: overhead-bound"));
  CHECK_THAT(text, Catch::Matchers::Contains("cudaMemcpyAsync D2H (pageable memory)"));
  CHECK_THAT(text, Catch::Matchers::Contains("7 of 13 kernels run under 10.0 µs"));

  const nlohmann::json json = to_json(analysis);
  CHECK(json["schema"] == "decodelab-nsys");
  CHECK(json["timeline"]["gaps"] == 4);
  CHECK(json["syncs"]["calls"] == 8);
  CHECK(json["kernels"]["top"][0]["launches"] == 3);
  CHECK(json["overhead_bound"] == true);
}

TEST_CASE("nsys timeline: load-time uploads are copies, not the loop's syncs, and a launch costs its median", "[nsys_timeline]") {
  // A program that uploads three weights with synchronous cuMemcpyHtoD from pageable memory
  // (as a driver-API loader does), then launches: the first launch takes 23.5 ms (module
  // loading), the others 100, 100 and 140 µs; two stream syncs inside the loop.
  const std::string api =
      "Start (ns),Duration (ns),Name,Result,CorrID,Pid,Tid,T-Pri,Thread Name\n"
      "1000,50000,cuMemcpyHtoD_v2,0,1,7,7,20,python\n"
      "60000,50000,cuMemcpyHtoD_v2,0,2,7,7,20,python\n"
      "120000,50000,cuMemcpyHtoD_v2,0,3,7,7,20,python\n"
      "200000,23500000,cuLaunchKernel,0,4,7,7,20,python\n"
      "23800000,100000,cuLaunchKernel,0,5,7,7,20,python\n"
      "23900000,100000,cuLaunchKernel,0,6,7,7,20,python\n"
      "24000000,20000,cuStreamSynchronize,0,7,7,7,20,python\n"
      "24100000,140000,cuLaunchKernel,0,8,7,7,20,python\n"
      "24300000,20000,cuStreamSynchronize,0,9,7,7,20,python\n";
  const std::string gpu =
      "Start (ns),Duration (ns),CorrId,Bytes (MB),SrcMemKd,DstMemKd,Device,Strm,Name\n"
      "5000,40000,1,100,Pageable,Device,GPU (0),7,[CUDA memcpy Host-to-Device]\n"
      "65000,40000,2,100,Pageable,Device,GPU (0),7,[CUDA memcpy Host-to-Device]\n"
      "125000,40000,3,100,Pageable,Device,GPU (0),7,[CUDA memcpy Host-to-Device]\n"
      "23700000,10000,4,,,,GPU (0),7,k\n"
      "23910000,10000,5,,,,GPU (0),7,k\n"
      "24010000,10000,6,,,,GPU (0),7,k\n"
      "24240000,10000,8,,,,GPU (0),7,k\n";
  NsysTables tables;
  parse_nsys_csv(api, "api.csv", tables);
  parse_nsys_csv(gpu, "gpu.csv", tables);
  const NsysAnalysis analysis = analyze_nsys(tables);

  CHECK(analysis.sync_calls == 2);
  CHECK(analysis.loop_sync_calls == 2);
  CHECK(analysis.loop_sync_seconds == Approx(40 * kUs));
  REQUIRE(analysis.blocking_copies.size() == 1);
  CHECK(analysis.blocking_copies[0].call == "cuMemcpyHtoD H2D (pageable memory)");
  CHECK(analysis.blocking_copies[0].count == 3);
  CHECK(analysis.blocking_copies[0].loop_count == 0);
  // Median of 23,500, 100, 100 and 140 µs: 120 µs (the mean, 5.96 ms, is one slow launch).
  CHECK(analysis.launch_median_seconds == Approx(120 * kUs));
  bool advice = false, uploads = false, launch_cost = false;
  for (const std::string& finding : analysis.findings) {
    if (finding.rfind("2 host syncs in the loop", 0) == 0 && finding.find(".item()") != std::string::npos) advice = true;
    if (finding.rfind("3 copies block the host", 0) == 0 && finding.find("not syncs") != std::string::npos) uploads = true;
    if (finding.find("a launch costs the host 120 µs (median)") != std::string::npos) launch_cost = true;
  }
  CHECK(advice);
  CHECK(uploads);
  CHECK(launch_cost);
  const nlohmann::json json = to_json(analysis);
  CHECK(json["syncs"]["loop_calls"] == 2);
  CHECK(json["blocking_copies"][0]["count"] == 3);
}

TEST_CASE("nsys timeline: a real cuda_gpu_kern_sum (RTX 5090 decode, tests/data/real)", "[nsys_timeline]") {
  NsysTables tables;
  read_nsys_csv(std::filesystem::path(DECODELAB_SOURCE_DIR) / "tests" / "data" / "real" / "rtx5090_decode_cuda_gpu_kern_sum.csv",
                tables);
  const NsysAnalysis analysis = analyze_nsys(tables);
  REQUIRE_FALSE(analysis.top_kernels.empty());
  // The first row: 61,602,133 ns over 16,448 launches of a bf16 gemvx kernel, 34.4% of the time.
  CHECK(analysis.top_kernels[0].count == 16448);
  CHECK(analysis.top_kernels[0].total_seconds == Approx(61602133e-9));
  CHECK(analysis.top_kernels[0].share == Approx(0.344).margin(0.001));
  CHECK(analysis.loop_scope.empty());
}
