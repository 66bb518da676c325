// Roofline placement and limiter rules. The golden test runs the profiling seed's (000)
// five example kernel reports on H100 SXM peaks through read_kernel_report and holds the
// seed's printed readings, text included; the numbers are computed, not copied.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "profiling/model/decode_reading.h"
#include "profiling/model/roofline.h"

using namespace decodelab;

namespace {

constexpr double kH100Flops = 989e12;
constexpr double kH100Bandwidth = 3.35e12;

KernelReport report(const char* kernel, double duration_us, double flops, double dram_bytes, double sm_pct,
                    double memory_pct, double occupancy_pct, double sectors) {
  KernelReport r;
  r.kernel = kernel;
  r.duration_us = duration_us;
  r.flops = flops;
  r.dram_bytes = dram_bytes;
  r.sm_throughput_pct = sm_pct;
  r.memory_throughput_pct = memory_pct;
  r.achieved_occupancy_pct = occupancy_pct;
  r.sectors_per_request = sectors;
  return r;
}

using Lines = std::vector<std::string>;

}  // namespace

TEST_CASE("golden: the seed's five kernel reports read as the seed prints them", "[roofline][golden]") {
  // prepare: the seed's reports (duration µs, FLOPs, DRAM bytes, SM%, memory%, occupancy%, sectors/request)
  const KernelReport gemm = report("gemm_bf16_8192", 1600, 1.1e12, 0.55e9, 82, 28, 24, 4);
  const KernelReport layernorm = report("layernorm", 95, 0.17e9, 0.27e9, 18, 86, 71, 4);
  const KernelReport transpose = report("transpose_naive", 410, 0.0, 0.54e9, 9, 41, 88, 32);
  const KernelReport gather = report("gather_embed", 160, 0.0, 0.05e9, 12, 22, 14, 6);
  const KernelReport bias = report("bias_add", 4, 0.2e6, 1.2e6, 6, 9, 60, 4);

  // run
  const KernelReading gemm_reading = read_kernel_report(gemm, kH100Flops, kH100Bandwidth);
  const KernelReading layernorm_reading = read_kernel_report(layernorm, kH100Flops, kH100Bandwidth);
  const KernelReading transpose_reading = read_kernel_report(transpose, kH100Flops, kH100Bandwidth);
  const KernelReading gather_reading = read_kernel_report(gather, kH100Flops, kH100Bandwidth);
  const KernelReading bias_reading = read_kernel_report(bias, kH100Flops, kH100Bandwidth);

  // verify: the seed's printed output, line for line
  CHECK(gemm_reading.lines == Lines{"688 TFLOP/s at 2000 FLOP/B; roof 989 TFLOP/s -> 70% of roofline",
                                    "compute-bound: use tensor cores / lower precision, or accept"});
  CHECK(layernorm_reading.lines == Lines{"2.84 TB/s of DRAM -> 85% of peak bandwidth",
                                         "memory-bound: cut bytes (fuse, lower precision, reuse in SRAM)"});
  CHECK(transpose_reading.lines == Lines{"1.32 TB/s of DRAM -> 39% of peak bandwidth",
                                         "32 sectors/request: uncoalesced access",
                                         "neither unit busy: latency-bound; check occupancy and stalls"});
  CHECK(gather_reading.lines == Lines{"0.31 TB/s of DRAM -> 9% of peak bandwidth",
                                      "neither unit busy: latency-bound; check occupancy and stalls",
                                      "occupancy 14%: too few warps to hide latency"});
  CHECK(bias_reading.lines == Lines{"0.30 TB/s of DRAM -> 9% of peak bandwidth",
                                    "tiny kernel: launch overhead dominates; fuse or use CUDA graphs",
                                    "neither unit busy: latency-bound; check occupancy and stalls"});

  // and the structured verdicts behind the text
  CHECK(gemm_reading.limiter == Limiter::Compute);
  CHECK(gemm_reading.achieved_flops == Approx(687.5e12));
  CHECK(gemm_reading.intensity == Approx(2000.0));
  CHECK(gemm_reading.roof_flops == Approx(989e12));
  CHECK(gemm_reading.roof_fraction == Approx(0.695).epsilon(1e-3));
  CHECK(layernorm_reading.limiter == Limiter::Memory);
  CHECK(layernorm_reading.achieved_bandwidth == Approx(2.842e12).epsilon(1e-3));
  CHECK(transpose_reading.limiter == Limiter::Latency);
  CHECK(transpose_reading.uncoalesced);
  CHECK_FALSE(transpose_reading.low_occupancy);
  CHECK(gather_reading.limiter == Limiter::Latency);
  CHECK(gather_reading.low_occupancy);
  CHECK(bias_reading.tiny);
  CHECK(bias_reading.limiter == Limiter::Overhead);
  CHECK(bias_reading.unit_limiter == Limiter::Latency);
}

TEST_CASE("limiter thresholds: each rule switches exactly at its edge", "[roofline]") {
  const LimiterThresholds thresholds;
  const double long_op = 1e-3;

  SECTION("tiny ops are overhead-bound below the duration line, on either side of it per device") {
    CHECK(classify_limiter(9.99e-6, 0.9, 0.1, true, thresholds) == Limiter::Overhead);
    CHECK(classify_limiter(10e-6, 0.9, 0.1, true, thresholds) == Limiter::Compute);
    CHECK(classify_limiter(4.99e-6, 0.9, 0.1, false, thresholds) == Limiter::Overhead);
    CHECK(classify_limiter(5e-6, 0.9, 0.1, false, thresholds) == Limiter::Compute);
  }
  SECTION("both units below the busy line is latency; at the line the busier unit wins") {
    CHECK(classify_limiter(long_op, 0.5999, 0.5999, true, thresholds) == Limiter::Latency);
    CHECK(classify_limiter(long_op, 0.60, 0.10, true, thresholds) == Limiter::Compute);
    CHECK(classify_limiter(long_op, 0.10, 0.60, true, thresholds) == Limiter::Memory);
  }
  SECTION("a tie between the units reads as compute, as in the seed") {
    CHECK(classify_limiter(long_op, 0.7, 0.7, true, thresholds) == Limiter::Compute);
  }
  SECTION("thresholds are data: moving the busy line moves the verdict") {
    LimiterThresholds strict = thresholds;
    strict.busy_fraction = 0.9;
    CHECK(classify_limiter(long_op, 0.85, 0.2, true, strict) == Limiter::Latency);
  }
  SECTION("sectors per request: 8 is still coalesced enough, 9 is not") {
    KernelReport r;
    r.kernel = "k";
    r.duration_us = 100;
    r.dram_bytes = 1e8;
    r.memory_throughput_pct = 70;
    r.sectors_per_request = 8;
    CHECK_FALSE(read_kernel_report(r, kH100Flops, kH100Bandwidth).uncoalesced);
    r.sectors_per_request = 9;
    CHECK(read_kernel_report(r, kH100Flops, kH100Bandwidth).uncoalesced);
    r.sectors_per_request.reset();  // ncu "n/a"
    CHECK_FALSE(read_kernel_report(r, kH100Flops, kH100Bandwidth).uncoalesced);
  }
}

TEST_CASE("roofline point: % of roof is the time at the roof over the time taken", "[roofline]") {
  Roofs roofs;
  roofs.bandwidth = 1e12;
  roofs.fp32_flops = 10e12;
  roofs.fp16_flops = 100e12;

  SECTION("a memory-side op: % of roof equals the bandwidth fraction") {
    RooflinePoint point;
    OpCost cost{1e9, 1e9, 1e9, Precision::Fp32};  // 2 GB moved, intensity 0.5
    point.add(cost, 4e-3, roofs);                  // 0.5 TB/s achieved
    CHECK(point.intensity() == Approx(0.5));
    CHECK(point.achieved_bandwidth() == Approx(0.5e12));
    CHECK(point.memory_fraction() == Approx(0.5));
    CHECK(point.roof_fraction() == Approx(0.5));
    CHECK(point.roof_flops() == Approx(0.5e12));  // intensity × bandwidth
    CHECK(point.memory_side());
  }
  SECTION("a compute-side op is held to its own precision's peak") {
    RooflinePoint point;
    OpCost cost{100e9, 0.5e9, 0.5e9, Precision::Fp16};  // intensity 100 > ridge 100? equal -> compute side
    point.add(cost, 2e-3, roofs);
    CHECK(point.achieved_flops() == Approx(50e12));
    CHECK(point.compute_fraction() == Approx(0.5));
    CHECK(point.roof_fraction() == Approx(0.5));
  }
  SECTION("a group mixing precisions sums each op's own roof time") {
    RooflinePoint group;
    group.add(OpCost{10e9, 0.05e9, 0.05e9, Precision::Fp32}, 2e-3, roofs);   // 1 ms at roof
    group.add(OpCost{10e9, 0.05e9, 0.05e9, Precision::Fp16}, 1e-3, roofs);   // 0.1 ms at the fp16 roof, 0.1 ms memory
    CHECK(group.count == 2);
    CHECK(group.roof_seconds == Approx(1.1e-3));
    CHECK(group.roof_fraction() == Approx(1.1e-3 / 3e-3));
  }
  SECTION("no time recorded gives zeros, never a division by zero") {
    RooflinePoint empty;
    CHECK(empty.roof_fraction() == 0.0);
    CHECK(empty.achieved_flops() == 0.0);
    CHECK(empty.intensity() == 0.0);
  }
}

TEST_CASE("near a threshold or the ridge, the verdict says so", "[roofline]") {
  const LimiterThresholds thresholds;  // busy 60%, near_margin 15%: 51%..69% is near the busy line
  const double long_op = 1e-3;
  SECTION("just above the busy line: memory-bound, near latency-bound") {
    CHECK(classify_limiter(long_op, 0.10, 0.62, false, thresholds) == Limiter::Memory);
    CHECK(near_limiter(long_op, 0.10, 0.62, false, thresholds) == Limiter::Latency);
    CHECK(limiter_verdict(Limiter::Memory, Limiter::Latency) == "memory-bound, near latency-bound");
    CHECK(limiter_cell(Limiter::Memory, Limiter::Latency) == "memory, near latency");
  }
  SECTION("just below it: latency-bound, near memory-bound; far from it: nothing") {
    CHECK(near_limiter(long_op, 0.10, 0.57, false, thresholds) == Limiter::Memory);
    CHECK_FALSE(near_limiter(long_op, 0.10, 0.90, false, thresholds));
    CHECK_FALSE(near_limiter(long_op, 0.10, 0.30, false, thresholds));
    CHECK(limiter_verdict(Limiter::Latency, std::nullopt) == "latency-bound");
  }
  SECTION("near the ridge: both units busy and close") {
    CHECK(near_limiter(long_op, 0.80, 0.85, false, thresholds) == Limiter::Compute);
    CHECK_FALSE(near_limiter(long_op, 0.40, 0.85, false, thresholds));
  }
  SECTION("near the tiny-op line, and the idle line of a phase") {
    CHECK(near_limiter(5.5e-6, 0.1, 0.9, false, thresholds) == Limiter::Overhead);
    CHECK(near_limiter(4.6e-6, 0.1, 0.9, false, thresholds) == Limiter::Memory);
    CHECK(near_limiter(long_op, 0.1, 0.9, false, thresholds, 0.28) == Limiter::Overhead);
    CHECK(near_limiter(long_op, 0.1, 0.9, false, thresholds, 0.32) == Limiter::Memory);
  }
  SECTION("the rules' text comes from the thresholds") {
    LimiterThresholds moved = thresholds;
    moved.busy_fraction = 0.5;
    CHECK_THAT(limiter_rules_text(thresholds, false), Catch::Matchers::Contains("60% of its roof") && Catch::Matchers::Contains("51% and 69%"));
    CHECK_THAT(limiter_rules_text(moved, false), Catch::Matchers::Contains("50% of its roof"));
    CHECK_THAT(limiter_rules_text(thresholds, true), Catch::Matchers::Contains("under 10 µs"));
  }
}

TEST_CASE("decode reading: judged against the roof a decode matvec reaches, the copy's beside it", "[roofline]") {
  DeviceSpec spec;
  Roofs roofs;
  roofs.bandwidth = 24.2e9;  // a copy's rate
  roofs.fp16_flops = 1e12;
  // The table's η_bytes for fp16 one-row matmuls: 9.5 GB/s of the copy's 24.2.
  roofs.efficiency = {{"matmul", Precision::Fp16, 1, 10, 1, 9.5e9 / 24.2e9, ""},
                      {"matmul", Precision::Fp16, 2, 10, 1, 11e9 / 24.2e9, ""},
                      {"matmul", Precision::Fp32, 1, 10, 1, 20e9 / 24.2e9, ""}};
  spec.measured = roofs;

  // 7.69 GB/s at batch 1, the device busy 90% of each step: 81% of the 9.5 GB/s matvec roof.
  const DecodeReading busy = read_decode(7.69e9, 1.0, 0.9, 1, Precision::Fp16, spec);
  CHECK(busy.matvec_roof);
  CHECK(busy.reachable_roof == Approx(9.5e9));
  CHECK(busy.roof_fraction() == Approx(7.69 / 9.5));
  CHECK(busy.limiter == Limiter::Memory);
  CHECK_THAT(busy.sentence, Catch::Matchers::Contains("7.69 GB/s") && Catch::Matchers::Contains("81%") &&
                                Catch::Matchers::Contains("24.2 GB/s"));
  // The batch's rows class: 2-8 rows for a batch of 6.
  CHECK(read_decode(7.69e9, 1.0, 0.9, 6, Precision::Fp16, spec).reachable_roof == Approx(11e9));
  // A device idle half of each step waits for its host, whatever the bytes.
  const DecodeReading idle = read_decode(7.69e9, 1.0, 0.5, 1, Precision::Fp16, spec);
  CHECK(idle.limiter == Limiter::Overhead);
  CHECK_THAT(idle.sentence, Catch::Matchers::Contains("idles 50%"));
  // Far below the matvec roof with a busy device: latency-bound, and the same percent said.
  const DecodeReading slow = read_decode(1.9e9, 1.0, 0.95, 1, Precision::Fp16, spec);
  CHECK(slow.limiter == Limiter::Latency);
  CHECK_THAT(slow.sentence, Catch::Matchers::Contains("20%"));
  // Without a measured matvec rate (a datasheet GPU): the bandwidth roof.
  DeviceSpec gpu;
  Roofs datasheet;
  datasheet.bandwidth = 3.35e12;
  gpu.datasheet = datasheet;
  const DecodeReading on_gpu = read_decode(2.5e12, 1.0, 1.0, 1, Precision::Bf16, gpu);
  CHECK_FALSE(on_gpu.matvec_roof);
  CHECK(on_gpu.roof_fraction() == Approx(2.5 / 3.35));
  CHECK(on_gpu.limiter == Limiter::Memory);
}
