// Real Nsight Compute exports recorded by others (tests/data/real, provenance in SOURCES):
// each is read, each launch gets a verdict, and the GPU is the one it was recorded on or
// said to be unknown. Every expected number is worked out in the comments from the cells
// of the export itself (bytes, durations and percentages as ncu printed them).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/base/errors.h"
#include "profiling/trace/csv_table.h"
#include "profiling/nsight/ncu_reading.h"

using namespace decodelab;

namespace {

std::filesystem::path real_export(const char* name) {
  return std::filesystem::path(DECODELAB_SOURCE_DIR) / "tests" / "data" / "real" / name;
}

const NcuKernelReading& launch_with_id(const NcuReport& report, const std::string& id) {
  for (const NcuKernelReading& reading : report.kernels) {
    if (reading.id == id) return reading;
  }
  FAIL("no launch " << id);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("real ncu: an A100 details page with rule columns, its GPU found from its own DRAM peak", "[ncu_real]") {
  // prepare: ncu's details page ends metric rows after "Metric Value" (16 of 20 cells)
  const NcuExport exported = read_ncu_csv(real_export("a100_clima_details_cut.csv"));
  REQUIRE(exported.form == NcuForm::Long);
  REQUIRE(exported.launches.size() == 2);
  CHECK(exported.launches[0].compute_capability == "8.0");
  CHECK(exported.launches[0].device_name.empty());  // the "Device" column holds an ordinal
  CHECK(exported.launches[0].device_ordinal == "0");

  // run
  const NcuReport report = read_ncu_report(exported);

  // verify: 488.17 GB/s at 23.97% and 96.22 GB/s at 4.72% imply a 2.04 TB/s peak: the A100 80 GB,
  // not the H100 a silent default would have used.
  REQUIRE(report.devices.size() == 1);
  CHECK(report.devices[0].spec == "a100-80gb");
  CHECK_THAT(report.devices[0].reason, Catch::Matchers::Contains("compute capability 8.0"));
  const NcuKernelReading& first = launch_with_id(report, "0");
  CHECK(first.device_spec == "a100-80gb");
  CHECK(*first.inputs.duration_seconds == Approx(56.06e-6));
  CHECK(*first.inputs.dram_bytes == Approx(488.17e9 * 56.06e-6));  // Memory Throughput (Gbyte/s) × Duration
  CHECK(*first.inputs.dram_throughput_pct == Approx(23.97));
  CHECK_FALSE(first.inputs.flops);  // no FLOP counter in a --set full details page
  // 488.17 GB/s of 2.04 TB/s: 23.9%, as ncu's own 23.97% says (H100 roofs gave 15%).
  CHECK(*first.roof_share == Approx(488.17e9 / 2.04e12));
  CHECK(first.lines.at(0) == "0.49 TB/s of DRAM -> 24% of peak bandwidth; FLOPs not collected: intensity unknown");
  // SM 51.69%, memory 23.97%: neither unit reaches 60%.
  REQUIRE(first.limiter_known);
  CHECK(first.reading->limiter == Limiter::Latency);

  const NcuKernelReading& last = launch_with_id(report, "5");
  CHECK(*last.inputs.duration_seconds == Approx(30.86e-3));  // printed in ms
  CHECK(*last.roof_share == Approx(96.22e9 / 2.04e12));
  CHECK(last.reading->limiter == Limiter::Latency);
  CHECK(*last.inputs.achieved_occupancy_pct > 0);

  const std::string text = format_ncu_report(report);
  CHECK_THAT(text, Catch::Matchers::Contains("FLOPs not collected"));
  CHECK_THAT(text, Catch::Matchers::Contains("sm__sass_thread_inst_executed_op_ffma_pred_on.sum"));
  CHECK_THAT(text, Catch::Matchers::Contains("ncu --metrics "));
}

TEST_CASE("real ncu: an RTX 5090 details page, identified by compute capability and its DRAM peak", "[ncu_real]") {
  const NcuReport report = read_ncu_report(read_ncu_csv(real_export("rtx5090_gemv_details.csv")));
  REQUIRE(report.kernels.size() == 1);
  // 2.33 MB read, 0 written, in 6.75 µs at 19.66% of DRAM peak: 1.76 TB/s, within 2% of the
  // RTX 5090's 1792 GB/s; CC 12.0 leaves no other spec.
  REQUIRE(report.devices.size() == 1);
  CHECK(report.devices[0].spec == "rtx-5090");
  const NcuKernelReading& gemv = report.kernels[0];
  CHECK(*gemv.inputs.dram_bytes == Approx(2.33e6));
  CHECK(gemv.inputs.dram_bytes_source == "dram__bytes_read.sum + dram__bytes_write.sum");
  CHECK(*gemv.inputs.duration_seconds == Approx(6.75e-6));
  // Only sm__ops_path_tensor_src_bf16_dst_fp32.sum was collected, and it is 0: the GEMV's
  // FFMAs run on the CUDA cores, whose counters were not collected — not zero FLOPs.
  CHECK_FALSE(gemv.inputs.flops);
  CHECK_THAT(gemv.notes, Catch::Matchers::VectorContains(std::string(
                             "only tensor-pipe FLOP counters were collected, and they read 0: the CUDA cores' FLOPs were not collected")));
  // 345 GB/s of 1792
  CHECK(gemv.lines.at(0) == "0.35 TB/s of DRAM -> 19% of peak bandwidth; FLOPs not collected: intensity unknown");
  CHECK(gemv.reading->tiny);  // 6.75 µs
  CHECK(gemv.reading->limiter == Limiter::Overhead);
  CHECK(*gemv.inputs.sm_throughput_pct == Approx(9.15));
  CHECK(*gemv.inputs.memory_throughput_pct == Approx(19.66));
  CHECK(*gemv.inputs.achieved_occupancy_pct == Approx(11.32));
}

TEST_CASE("real ncu: one section's details page with a \"Body Item Label\" column reads, and says what it lacks",
          "[ncu_real]") {
  const NcuReport report = read_ncu_report(read_ncu_csv(real_export("rtx5090_gemv_roofline_section.csv")));
  REQUIRE(report.kernels.size() == 1);
  CHECK_FALSE(report.kernels[0].reading);
  CHECK_THAT(report.kernels[0].lines.at(0), Catch::Matchers::Contains("no kernel duration"));
  CHECK_THAT(report.kernels[0].lines.at(0), Catch::Matchers::Contains("ncu --metrics gpu__time_duration.sum"));
}

TEST_CASE("real ncu: Windows --metrics exports of an RTX 5070, a GPU no spec describes", "[ncu_real]") {
  SECTION("saxpy: bytes from dram__bytes_op_*, the GPU unknown, so no share of a roof") {
    const NcuReport report = read_ncu_report(read_ncu_csv(real_export("rtx5070_saxpy_metrics.csv")));
    REQUIRE(report.kernels.size() == 1);
    REQUIRE(report.devices.size() == 1);
    CHECK_FALSE(report.devices[0].known());
    CHECK_THAT(report.devices[0].reason, Catch::Matchers::Contains("compute capability 12.0"));
    const NcuKernelReading& saxpy = report.kernels[0];
    CHECK(saxpy.device_spec.empty());
    // 134,221,568 + 43,631,104 bytes in 292,928 ns: 607 GB/s.
    CHECK(*saxpy.inputs.dram_bytes == Approx(134221568.0 + 43631104.0));
    CHECK(saxpy.inputs.dram_bytes_source == "dram__bytes_op_read.sum + dram__bytes_op_write.sum");
    CHECK(saxpy.reading->achieved_bandwidth == Approx((134221568.0 + 43631104.0) / 292928e-9));
    CHECK_FALSE(saxpy.roof_share);
    CHECK(saxpy.lines.at(0) == "0.61 TB/s of DRAM; FLOPs not collected: intensity unknown");
    // SM 22.3% and no memory throughput: no verdict from a guessed roof.
    CHECK_FALSE(saxpy.limiter_known);
    CHECK_THAT(saxpy.lines.back(), Catch::Matchers::Contains("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"));
    CHECK_THAT(saxpy.lines.back(), Catch::Matchers::Contains("ncu --metrics gpu__compute_memory_throughput"));
    CHECK(*saxpy.inputs.sectors_per_request == Approx(4194304.0 / 1048576.0));
    const nlohmann::json json = to_json(report);
    CHECK(json["kernels"][0]["device_spec"].is_null());
    CHECK(json["kernels"][0]["reading"]["roof_fraction"].is_null());
    CHECK(json["kernels"][0]["inputs"]["flops"].is_null());
    CHECK(json["kernels"][0]["inputs"]["flops_collected"] == false);
  }
  SECTION("a naive GEMM at SM 97%: compute-bound by ncu's own speed-of-light reading") {
    const NcuReport report = read_ncu_report(read_ncu_csv(real_export("rtx5070_gemm_naive_metrics.csv")));
    REQUIRE(report.kernels.size() == 1);
    const NcuKernelReading& gemm = report.kernels[0];
    CHECK(*gemm.inputs.sm_throughput_pct == Approx(97.32));
    CHECK(*gemm.inputs.duration_seconds == Approx(9589248e-9));
    REQUIRE(gemm.limiter_known);
    CHECK(gemm.reading->limiter == Limiter::Compute);
    CHECK(gemm.lines.back() == "compute-bound: use tensor cores / lower precision, or accept");
    CHECK_FALSE(gemm.roof_share);
  }
  SECTION("--device still decides when given") {
    NcuReadingOptions options;
    options.device = find_device_spec("rtx-5090");
    const NcuReport report = read_ncu_report(read_ncu_csv(real_export("rtx5070_saxpy_metrics.csv")), options);
    CHECK(report.devices.at(0).spec == "rtx-5090");
    CHECK(*report.kernels[0].roof_share == Approx((134221568.0 + 43631104.0) / 292928e-9 / 1.792e12));
  }
}

TEST_CASE("real ncu: a truly cut export is still refused, naming the line", "[ncu_real]") {
  // The details page cut inside its second metric row: the row ends before "Metric Value".
  const std::string text = decodelab::read_text_file(real_export("rtx5090_gemv_details.csv"));
  const size_t second_row = text.find('\n', text.find('\n') + 1);
  const std::string cut = text.substr(0, text.find("\"dram__bytes_write.sum\"", second_row)) + "\n";
  try {
    parse_ncu_csv(cut, "cut.csv");
    FAIL("expected an InputError");
  } catch (const InputError& error) {
    CHECK(error.line() == 3);
    CHECK(error.key() == "column 14 \"Metric Unit\"");
    CHECK_THAT(error.problem(), Catch::Matchers::Contains("truncated"));
  }
}
