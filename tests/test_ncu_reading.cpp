// The seed's reading of Nsight Compute exports. Golden: the seed's five kernel reports
// (profiling seed 000), written as real ncu CSVs in both forms, read as the seed prints
// them — every number recomputed from the fixture's counters, not copied. Then the device
// choice, the precision mix, and what a partial export still allows.
#include <catch2/catch.hpp>

#include <array>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/base/errors.h"
#include "profiling/nsight/ncu_reading.h"

using namespace decodelab;

namespace {

std::filesystem::path ncu_fixture(const char* name) {
  return std::filesystem::path(DECODELAB_SOURCE_DIR) / "tests" / "fixtures" / "ncu" / name;
}

using Lines = std::vector<std::string>;

const NcuKernelReading& kernel(const NcuReport& report, const std::string& name) {
  for (const NcuKernelReading& reading : report.kernels) {
    if (reading.kernel == name) return reading;
  }
  FAIL("no kernel " << name);
  throw std::logic_error("unreachable");
}

// A one-launch long export from (metric, unit, value) rows.
NcuExport long_export(const std::vector<std::array<std::string, 3>>& metrics, const std::string& kernel_name = "k") {
  std::string text = "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";
  for (const auto& [name, unit, value] : metrics) {
    text += "\"0\",\"" + kernel_name + "\",\"" + name + "\",\"" + unit + "\",\"" + value + "\"\n";
  }
  return parse_ncu_csv(text, "partial.csv");
}

}  // namespace

TEST_CASE("golden: the seed's five kernels, from ncu CSV in both forms, read as the seed prints them", "[ncu_reading][golden]") {
  for (const char* file : {"seed_kernels_raw.csv", "seed_kernels_details.csv"}) {
    INFO(file);
    // prepare: the export names its GPU, which selects the h100-sxm datasheet peaks
    const NcuReport report = read_ncu_report(read_ncu_csv(ncu_fixture(file)));

    // verify: one device, chosen from the export
    REQUIRE(report.devices.size() == 1);
    CHECK(report.devices[0].spec == "h100-sxm");
    CHECK_THAT(report.devices[0].reason, Catch::Matchers::Contains("NVIDIA H100 80GB HBM3"));
    REQUIRE(report.kernels.size() == 5);

    const NcuKernelReading& gemm = kernel(report, "gemm_bf16_8192");
    CHECK(gemm.lines == Lines{"688 TFLOP/s at 2000 FLOP/B; roof 989 TFLOP/s -> 70% of roofline",
                              "compute-bound: use tensor cores / lower precision, or accept"});
    CHECK(gemm.inputs.flops_by_precision[static_cast<size_t>(Precision::Bf16)] == Approx(1.1e12));
    CHECK(gemm.peak_flops == Approx(989e12));
    REQUIRE(gemm.reading);
    CHECK(gemm.reading->achieved_flops == Approx(1.1e12 / 1.6e-3));
    CHECK(gemm.reading->intensity == Approx(1.1e12 / 0.55e9));
    CHECK(gemm.reading->roof_fraction == Approx(1.1e12 / 1.6e-3 / 989e12));
    CHECK(gemm.reading->limiter == Limiter::Compute);

    const NcuKernelReading& layernorm = kernel(report, "layernorm");
    CHECK(layernorm.lines == Lines{"2.84 TB/s of DRAM -> 85% of peak bandwidth",
                                   "memory-bound: cut bytes (fuse, lower precision, reuse in SRAM)"});
    CHECK(*layernorm.inputs.flops == Approx(40e6 + 30e6 + 2 * 50e6));  // add + mul + 2·fma
    CHECK(layernorm.reading->achieved_bandwidth == Approx(0.27e9 / 95e-6));
    CHECK(layernorm.reading->limiter == Limiter::Memory);

    const NcuKernelReading& transpose = kernel(report, "transpose_naive");
    CHECK(transpose.lines == Lines{"1.32 TB/s of DRAM -> 39% of peak bandwidth", "32 sectors/request: uncoalesced access",
                                   "neither unit busy: latency-bound; check occupancy and stalls"});
    CHECK(*transpose.inputs.sectors_per_request == Approx(4194304.0 / 131072.0));
    CHECK(transpose.reading->uncoalesced);

    const NcuKernelReading& gather = kernel(report, "gather_embed");
    CHECK(gather.lines == Lines{"0.31 TB/s of DRAM -> 9% of peak bandwidth",
                                "neither unit busy: latency-bound; check occupancy and stalls",
                                "occupancy 14%: too few warps to hide latency"});
    CHECK(gather.reading->low_occupancy);

    const NcuKernelReading& bias = kernel(report, "bias_add");
    CHECK(bias.lines == Lines{"0.30 TB/s of DRAM -> 9% of peak bandwidth",
                              "tiny kernel: launch overhead dominates; fuse or use CUDA graphs",
                              "neither unit busy: latency-bound; check occupancy and stalls"});
    CHECK(bias.reading->limiter == Limiter::Overhead);
    CHECK(bias.notes.empty());
  }
}

TEST_CASE("ncu reading: the device's peaks come from --device or the export, else from none", "[ncu_reading]") {
  const NcuExport exported = read_ncu_csv(ncu_fixture("seed_kernels_raw.csv"));

  SECTION("--device overrides the export's name: an H200's measured bandwidth roof") {
    NcuReadingOptions options;
    options.device = find_device_spec("h200");
    const NcuReport report = read_ncu_report(exported, options);
    const NcuKernelReading& layernorm = kernel(report, "layernorm");
    CHECK(report.devices.at(0).reason == "--device");
    CHECK(layernorm.peak_bandwidth == Approx(4.3e12));  // measured where measured
    CHECK(layernorm.lines.at(0) == "2.84 TB/s of DRAM -> 66% of peak bandwidth");
  }
  SECTION("an unknown GPU name is said to be unknown, and no share of any roof is printed") {
    NcuExport renamed = exported;
    for (NcuLaunch& launch : renamed.launches) launch.device_name = "NVIDIA RTX 9000 Imaginary";
    const NcuReport report = read_ncu_report(renamed);
    REQUIRE(report.devices.size() == 1);
    CHECK_FALSE(report.devices[0].known());
    CHECK_THAT(report.devices[0].reason, Catch::Matchers::Contains("matches no configs/devices spec"));
    const NcuKernelReading& layernorm = kernel(report, "layernorm");
    CHECK(layernorm.device_spec.empty());
    CHECK_FALSE(layernorm.roof_share);
    CHECK(layernorm.lines.at(0).find("% of") == std::string::npos);
    CHECK_THAT(layernorm.lines.at(0), Catch::Matchers::Contains("2.84 TB/s of DRAM"));
    // The units' own percentages still decide: layernorm's memory throughput is in the export.
    CHECK(layernorm.reading->limiter == Limiter::Memory);
    CHECK_THAT(format_ncu_report(report), Catch::Matchers::Contains("no share of any roof"));
  }
}

TEST_CASE("ncu reading: a mixed-precision kernel is held to each precision's roof", "[ncu_reading]") {
  // 1e12 bf16 tensor FLOPs and 1e10 fp32 FLOPs (5e9 FFMA) in 2 ms, 1 GB of DRAM.
  const NcuExport exported = long_export({{"gpu__time_duration.sum", "msecond", "2"},
                                          {"sm__ops_path_tensor_src_bf16_dst_fp32.sum", "", "1,000,000,000,000"},
                                          {"sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", "5,000,000,000"},
                                          {"dram__bytes_read.sum", "Gbyte", "0.9"},
                                          {"dram__bytes_write.sum", "Gbyte", "0.1"},
                                          {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "75"},
                                          {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%", "20"}});
  NcuReadingOptions options;
  options.device = find_device_spec("h100-sxm");
  const NcuKernelReading reading = read_ncu_report(exported, options).kernels.at(0);

  const double seconds_at_roof = 1e12 / 989e12 + 1e10 / 67e12;
  CHECK(*reading.inputs.flops == Approx(1.01e12));
  CHECK(reading.peak_flops == Approx(1.01e12 / seconds_at_roof));
  CHECK(reading.reading->roof_fraction == Approx(seconds_at_roof / 2e-3));
  CHECK(reading.reading->limiter == Limiter::Compute);
}

TEST_CASE("ncu reading: a partial export reads what it can and says what is missing", "[ncu_reading]") {
  NcuReadingOptions options;
  options.device = find_device_spec("h100-sxm");

  SECTION("no SpeedOfLight percentages: the units' verdict comes from achieved over peak") {
    // 3.01 GB in 1 ms on 3.35 TB/s: 90% of the bandwidth roof -> memory-bound.
    const NcuKernelReading reading =
        read_ncu_report(long_export({{"gpu__time_duration.sum", "usecond", "1000"},
                                     {"dram__bytes_read.sum", "Gbyte", "2.0"},
                                     {"dram__bytes_write.sum", "Gbyte", "1.01"}}),
                        options)
            .kernels.at(0);
    CHECK(reading.limiter_known);
    CHECK(reading.reading->limiter == Limiter::Memory);
    CHECK(reading.lines.at(0) == "3.01 TB/s of DRAM -> 90% of peak bandwidth; FLOPs not collected: intensity unknown");
    CHECK_THAT(reading.notes.at(0), Catch::Matchers::Contains("achieved DRAM bandwidth over the peak"));
    CHECK_THAT(reading.notes.at(1), Catch::Matchers::Contains("speed-of-light"));
  }
  SECTION("no DRAM bytes: no placement, the units still decide") {
    const NcuKernelReading reading =
        read_ncu_report(long_export({{"gpu__time_duration.sum", "usecond", "50"},
                                     {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "20"},
                                     {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%", "80"}}),
                        options)
            .kernels.at(0);
    CHECK(reading.lines == Lines{"FLOPs not collected and no DRAM bytes in the export: cannot place it on the roofline",
                                 "memory-bound: cut bytes (fuse, lower precision, reuse in SRAM)"});
  }
  SECTION("only a duration: tiny, so overhead-bound, and the units' limiter unknown with the line that collects them") {
    const NcuKernelReading reading =
        read_ncu_report(long_export({{"gpu__time_duration.sum", "usecond", "3"}}), options).kernels.at(0);
    CHECK(reading.limiter_known);
    CHECK(reading.reading->limiter == Limiter::Overhead);
    CHECK(reading.lines.size() == 3);
    CHECK(reading.lines[1] == "tiny kernel: launch overhead dominates; fuse or use CUDA graphs");
    CHECK_THAT(reading.lines[2], Catch::Matchers::StartsWith("unit limiter unknown: sm__throughput.avg.pct_of_peak_sustained_elapsed and "
                                                             "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed are not in the export"));
    CHECK_THAT(reading.lines[2], Catch::Matchers::EndsWith(
                                     "ncu --metrics sm__throughput.avg.pct_of_peak_sustained_elapsed,"
                                     "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed --csv <your program>"));
  }
  SECTION("a long kernel with only a duration: limiter unknown, never a default") {
    const NcuKernelReading reading =
        read_ncu_report(long_export({{"gpu__time_duration.sum", "usecond", "300"}}), options).kernels.at(0);
    CHECK_FALSE(reading.limiter_known);
    CHECK_THAT(reading.lines.back(), Catch::Matchers::StartsWith("limiter unknown: "));
  }
  SECTION("no duration: nothing to read, and the report still lists the kernel") {
    const NcuReport report = read_ncu_report(long_export({{"dram__bytes_read.sum", "byte", "1,000"}}), options);
    REQUIRE(report.kernels.size() == 1);
    CHECK_FALSE(report.kernels[0].reading);
    CHECK_THAT(report.kernels[0].lines.at(0), Catch::Matchers::Contains("no kernel duration"));
    CHECK_THAT(format_ncu_report(report), Catch::Matchers::Contains("unknown"));
  }
  SECTION("bytes from the details page's DRAM rate times the duration, n/a said in a note") {
    const NcuKernelReading reading =
        read_ncu_report(long_export({{"Duration", "msecond", "2"},
                                     {"Memory Throughput", "Tbyte/second", "1.5"},
                                     {"Memory Throughput", "%", "45"},
                                     {"Compute (SM) Throughput", "%", "10"},
                                     {"sm__warps_active.avg.pct_of_peak_sustained_active", "%", "n/a"}}),
                        options)
            .kernels.at(0);
    CHECK(*reading.inputs.dram_bytes == Approx(1.5e12 * 2e-3));
    CHECK_FALSE(reading.inputs.achieved_occupancy_pct);
    CHECK(reading.reading->limiter == Limiter::Latency);
    CHECK_THAT(reading.notes.back(), Catch::Matchers::Contains("n/a"));
  }
}

TEST_CASE("ncu reading: JSON carries the numbers, nulls where the export had none", "[ncu_reading]") {
  const NcuReport report = read_ncu_report(read_ncu_csv(ncu_fixture("seed_kernels_details.csv")));
  const nlohmann::json json = to_json(report);
  CHECK(json["schema"] == "decodelab-ncu");
  CHECK(json["form"] == "long");
  REQUIRE(json["kernels"].size() == 5);
  CHECK(json["kernels"][0]["reading"]["limiter"] == "compute");
  CHECK(json["kernels"][0]["inputs"]["duration_s"].get<double>() == Approx(1.6e-3));
  CHECK(json["kernels"][4]["reading"]["limiter"] == "overhead");
  CHECK(json["kernels"][2]["inputs"]["flops"].get<double>() == 0.0);

  const NcuReport partial = read_ncu_report(long_export({{"gpu__time_duration.sum", "usecond", "30"}}));
  const nlohmann::json partial_json = to_json(partial);
  CHECK(partial_json["kernels"][0]["inputs"]["dram_bytes"].is_null());
  CHECK(partial_json["kernels"][0]["reading"]["limiter"].is_null());
  CHECK(partial_json["kernels"][0]["reading"]["roof_fraction"].is_null());
}

TEST_CASE("ncu reading: the printout shows each launch's reading and a summary table", "[ncu_reading]") {
  const std::string text = format_ncu_report(read_ncu_report(read_ncu_csv(ncu_fixture("seed_kernels_raw.csv"))));
  CHECK_THAT(text, Catch::Matchers::Contains("gemm_bf16_8192  [ID 0]"));
  CHECK_THAT(text, Catch::Matchers::Contains("688 TFLOP/s at 2000 FLOP/B; roof 989 TFLOP/s -> 70% of roofline"));
  CHECK_THAT(text, Catch::Matchers::Contains("32.0 sectors/request"));
  CHECK_THAT(text, Catch::Matchers::Contains("device h100-sxm"));
  CHECK_THAT(text, Catch::Matchers::Contains("summary"));
}

TEST_CASE("ncu reading: FLOPs are labelled by precision, fp64 counted and held to the fp64 roof", "[ncu_reading]") {
  // A pure fp64 kernel: 10e6 DADD + 20e6 DMUL + 68.5e6 DFMA = 167e6 FLOPs in 100 µs, 1 GB of DRAM.
  const NcuExport exported = long_export({{"gpu__time_duration.sum", "usecond", "100"},
                                          {"sm__sass_thread_inst_executed_op_dadd_pred_on.sum", "inst", "10,000,000"},
                                          {"sm__sass_thread_inst_executed_op_dmul_pred_on.sum", "inst", "20,000,000"},
                                          {"sm__sass_thread_inst_executed_op_dfma_pred_on.sum", "inst", "68,500,000"},
                                          {"sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst", "0"},
                                          {"dram__bytes_read.sum", "Mbyte", "600"},
                                          {"dram__bytes_write.sum", "Mbyte", "400"},
                                          {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "20"},
                                          {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%", "70"}});
  NcuReadingOptions options;
  options.device = find_device_spec("a100-80gb");
  const NcuReport report = read_ncu_report(exported, options);
  const NcuKernelReading& reading = report.kernels.at(0);
  CHECK(*reading.inputs.flops == Approx(167e6));
  CHECK(reading.inputs.fp64_flops == Approx(167e6));
  CHECK(reading.inputs.flops_by_precision[static_cast<size_t>(Precision::Fp32)] == 0.0);
  CHECK(reading.peak_flops == Approx(9.7e12));  // the A100's fp64 peak, not its fp32 one
  const std::string text = format_ncu_report(report);
  CHECK_THAT(text, Catch::Matchers::Contains("167 MFLOP (fp64)"));
  CHECK(text.find("(fp32)") == std::string::npos);
  CHECK(to_json(report)["kernels"][0]["inputs"]["flops_by_precision"]["fp64"].get<double>() == Approx(167e6));
}

TEST_CASE("ncu reading: what ncu writes under other names is read", "[ncu_reading]") {
  NcuReadingOptions options;
  options.device = find_device_spec("h100-sxm");
  SECTION("the duration from elapsed SM cycles over their rate") {
    // 1,755,000 cycles at 1.755 GHz (ncu prints "cycle/nsecond"): 1 ms.
    const NcuKernelReading reading = read_ncu_report(long_export({{"sm__cycles_elapsed.avg", "cycle", "1,755,000"},
                                                                  {"sm__cycles_elapsed.avg.per_second", "cycle/nsecond", "1.755"},
                                                                  {"dram__bytes.sum", "Gbyte", "2"}}),
                                                     options)
                                         .kernels.at(0);
    CHECK(*reading.inputs.duration_seconds == Approx(1e-3));
    CHECK_THAT(reading.inputs.duration_source, Catch::Matchers::Contains("sm__cycles_elapsed.avg.per_second"));
    CHECK(*reading.inputs.dram_bytes == Approx(2e9));  // dram__bytes.sum
    CHECK(*reading.roof_share == Approx(2e9 / 1e-3 / 3.35e12));
  }
  SECTION("gpu__dram_throughput stands in for the memory throughput") {
    const NcuKernelReading reading =
        read_ncu_report(long_export({{"gpu__time_duration.sum", "usecond", "500"},
                                     {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "12"},
                                     {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "%", "88"}}),
                        options)
            .kernels.at(0);
    CHECK(*reading.inputs.dram_throughput_pct == Approx(88));
    REQUIRE(reading.limiter_known);
    CHECK(reading.reading->limiter == Limiter::Memory);
  }
  SECTION("SM throughput alone, below ncu's 80% line, leaves the limiter unknown") {
    const NcuKernelReading reading =
        read_ncu_report(long_export({{"gpu__time_duration.sum", "usecond", "500"},
                                     {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "79"}}),
                        options)
            .kernels.at(0);
    CHECK_FALSE(reading.limiter_known);
    CHECK_THAT(reading.lines.back(), Catch::Matchers::Contains("below ncu's 80% line"));
  }
}

TEST_CASE("ncu reading: the GPU from device attributes, and never from a bandwidth alone", "[ncu_reading]") {
  SECTION("compute capability with memory clock × bus width: 2 × 1,593 MHz × 5120 bit = 2.04 TB/s, an A100 80 GB") {
    const NcuReport report = read_ncu_report(long_export({{"gpu__time_duration.sum", "usecond", "100"},
                                                          {"device__attribute_compute_capability_major", "", "8"},
                                                          {"device__attribute_compute_capability_minor", "", "0"},
                                                          {"device__attribute_max_mem_frequency_khz", "", "1,593,000"},
                                                          {"device__attribute_global_memory_bus_width", "bit", "5,120"}}));
    CHECK(report.devices.at(0).spec == "a100-80gb");
    CHECK_THAT(report.devices.at(0).reason, Catch::Matchers::Contains("memory clock × bus width"));
  }
  SECTION("the same clocks with a compute capability whose GPUs have other bandwidths match nothing") {
    // 8.6: the A10's 600 GB/s, far from 2.04 TB/s.
    const NcuReport report = read_ncu_report(long_export({{"gpu__time_duration.sum", "usecond", "100"},
                                                          {"device__attribute_compute_capability_major", "", "8"},
                                                          {"device__attribute_compute_capability_minor", "", "6"},
                                                          {"device__attribute_max_mem_frequency_khz", "", "1,593,000"},
                                                          {"device__attribute_global_memory_bus_width", "bit", "5,120"}}));
    CHECK_FALSE(report.devices.at(0).known());
    CHECK(report.devices.at(0).roofs.bandwidth == Approx(2.0 * 1593e6 * 5120 / 8));
  }
  SECTION("a DRAM peak without a compute capability: only the peak is used") {
    // 2.04 GB in 1 ms at 100%: 2.04 TB/s, which an A100 80 GB has, but so might another GPU.
    const NcuReport report = read_ncu_report(long_export({{"gpu__time_duration.sum", "msecond", "1"},
                                                          {"dram__bytes.sum", "Gbyte", "2.04"},
                                                          {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", "100"}}));
    CHECK_FALSE(report.devices.at(0).known());
    CHECK(report.devices.at(0).roofs.bandwidth == Approx(2.04e12));
    CHECK_FALSE(report.devices.at(0).roofs.has_any_flops());
    CHECK(*report.kernels.at(0).roof_share == Approx(1.0));
  }
}

TEST_CASE("ncu reading: tensor-pipe counters alone do not stand for all FLOPs", "[ncu_reading]") {
  NcuReadingOptions options;
  options.device = find_device_spec("h100-sxm");
  SECTION("they read 0: the CUDA cores' FLOPs were not collected, so FLOPs are unknown") {
    const NcuKernelReading reading = read_ncu_report(long_export({{"gpu__time_duration.sum", "usecond", "40"},
                                                                  {"sm__ops_path_tensor_src_bf16_dst_fp32.sum", "", "0"},
                                                                  {"dram__bytes.sum", "Mbyte", "80"}}),
                                                     options)
                                         .kernels.at(0);
    CHECK_FALSE(reading.inputs.flops);
    CHECK_THAT(reading.lines.at(0), Catch::Matchers::EndsWith("FLOPs not collected: intensity unknown"));
  }
  SECTION("they saw work: counted, as a lower bound said in a note") {
    const NcuKernelReading reading = read_ncu_report(long_export({{"gpu__time_duration.sum", "usecond", "40"},
                                                                  {"sm__ops_path_tensor_src_bf16_dst_fp32.sum", "", "4e9"},
                                                                  {"dram__bytes.sum", "Mbyte", "80"}}),
                                                     options)
                                         .kernels.at(0);
    REQUIRE(reading.inputs.flops);
    CHECK(*reading.inputs.flops == Approx(4e9));
    CHECK_THAT(reading.notes.at(0), Catch::Matchers::Contains("a lower bound"));
  }
}
