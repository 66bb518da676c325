// Device specs: the shipped YAML files hold FORMATS.md's datasheet table, loading
// errors name the file, line and key, and measured figures merge over the datasheet.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "engine/base/errors.h"
#include "profiling/device_spec.h"

using namespace decodelab;

TEST_CASE("shipped device files hold the datasheet table and cite a source", "[device_spec]") {
  struct Row {
    const char* name;
    double bandwidth_tb_s, fp32, tf32, half;
    int sms;
  };
  for (const Row& row : {Row{"h100-sxm", 3.35, 67, 495, 989, 132}, Row{"h200", 4.8, 67, 495, 989, 132},
                         Row{"a100-80gb", 2.04, 19.5, 156, 312, 108}, Row{"l4", 0.30, 30.3, 60, 121, 58}}) {
    INFO(row.name);
    const DeviceSpec spec = find_device_spec(row.name);
    REQUIRE(spec.datasheet);
    CHECK(spec.datasheet->bandwidth == Approx(row.bandwidth_tb_s * 1e12));
    CHECK(spec.datasheet->fp32_flops == Approx(row.fp32 * 1e12));
    CHECK(spec.datasheet->tf32_flops == Approx(row.tf32 * 1e12));
    CHECK(spec.datasheet->fp16_flops == Approx(row.half * 1e12));
    CHECK(spec.datasheet->bf16_flops == Approx(row.half * 1e12));
    CHECK(spec.sm_count == row.sms);
    CHECK_FALSE(spec.datasheet->source.empty());
  }
  const std::vector<std::string> names = list_device_specs();
  CHECK(std::find(names.begin(), names.end(), "h200") != names.end());
}

TEST_CASE("ridge point: peak FLOP/s over bandwidth", "[device_spec]") {
  const DeviceSpec h100 = find_device_spec("h100-sxm");
  CHECK(h100.datasheet->ridge_point(Precision::Fp16) == Approx(989.0 / 3.35));
  CHECK(h100.datasheet->ridge_point(Precision::Fp32) == Approx(67.0 / 3.35));
  const DeviceSpec a100 = find_device_spec("a100-80gb");
  CHECK(a100.datasheet->ridge_point(Precision::Bf16) == Approx(312.0 / 2.04));  // ~153, the seed's ~156 at 2 TB/s
}

TEST_CASE("H200: measured reference roofs sit below the datasheet and win where present", "[device_spec]") {
  const DeviceSpec h200 = find_device_spec("h200");
  REQUIRE(h200.measured);
  CHECK(h200.measured->bandwidth == Approx(4.3e12));
  CHECK(h200.measured->bf16_flops == Approx(790e12));
  const Roofs effective = h200.effective_roofs();
  CHECK(effective.bandwidth == Approx(4.3e12));
  CHECK(effective.flops(Precision::Bf16) == Approx(790e12));
  CHECK(effective.flops(Precision::Fp16) == Approx(790e12));  // same tensor units
  CHECK(effective.flops(Precision::Fp32) == Approx(67e12));   // not measured: datasheet
  CHECK(h200.roofs_origin() == "measured + datasheet");
}

TEST_CASE("CUDA device names select their spec at a word boundary", "[device_spec]") {
  CHECK(match_device_spec("NVIDIA H200")->name == "h200");
  CHECK(match_device_spec("NVIDIA H100 80GB HBM3")->name == "h100-sxm");
  CHECK(match_device_spec("NVIDIA A100-SXM4-80GB")->name == "a100-80gb");
  CHECK(match_device_spec("NVIDIA L4")->name == "l4");
  // Names that contain another GPU's name select their own spec, or none.
  CHECK(match_device_spec("NVIDIA L40S")->name == "l40s");
  CHECK(match_device_spec("NVIDIA H100 PCIe")->name == "h100-pcie");
  CHECK(match_device_spec("NVIDIA A10")->name == "a10");
  CHECK(match_device_spec("NVIDIA A100-PCIE-40GB")->name == "a100-40gb");
  CHECK(match_device_spec("NVIDIA GeForce RTX 4090")->name == "rtx-4090");
  CHECK(match_device_spec("NVIDIA GeForce RTX 5090")->name == "rtx-5090");
  CHECK(match_device_spec("NVIDIA GH200 480GB")->name == "gh200");
  CHECK(match_device_spec("NVIDIA B200")->name == "b200");
  CHECK_FALSE(match_device_spec("NVIDIA L40").has_value());
  CHECK_FALSE(match_device_spec("NVIDIA A10G").has_value());
  CHECK_FALSE(match_device_spec("NVIDIA GB200").has_value());  // not "NVIDIA B200"
  CHECK_FALSE(match_device_spec("NVIDIA GH200 144G HBM3e").has_value());  // not "H200", nor the 96 GB GH200
}

TEST_CASE("GPU device files carry a compute capability and their datasheet peaks", "[device_spec]") {
  struct Row {
    const char* name;
    const char* compute_capability;
    double bandwidth_tb_s;
    double fp32_tflops;
    double bf16_tflops;
    double fp64_tflops;  // 0 where the datasheet gives none
  };
  for (const Row& row : {Row{"a100-40gb", "8.0", 1.555, 19.5, 312, 9.7}, Row{"a100-80gb", "8.0", 2.04, 19.5, 312, 9.7},
                         Row{"a10", "8.6", 0.60, 31.2, 125, 0}, Row{"l4", "8.9", 0.30, 30.3, 121, 0},
                         Row{"l40s", "8.9", 0.864, 91.6, 362, 0}, Row{"rtx-4090", "8.9", 1.008, 82.6, 165.2, 0},
                         Row{"rtx-5090", "12.0", 1.792, 104.8, 209.5, 0}, Row{"h100-pcie", "9.0", 2.0, 51, 756, 26},
                         Row{"h100-sxm", "9.0", 3.35, 67, 989, 34}, Row{"h200", "9.0", 4.8, 67, 989, 34},
                         Row{"gh200", "9.0", 4.0, 67, 990, 34}, Row{"b200", "10.0", 8.0, 80, 2250, 40}}) {
    INFO(row.name);
    const DeviceSpec spec = find_device_spec(row.name);
    CHECK(spec.compute_capability == row.compute_capability);
    REQUIRE(spec.datasheet);
    CHECK_FALSE(spec.datasheet->source.empty());
    CHECK(spec.datasheet->bandwidth == Approx(row.bandwidth_tb_s * 1e12));
    CHECK(spec.datasheet->fp32_flops == Approx(row.fp32_tflops * 1e12));
    CHECK(spec.datasheet->bf16_flops == Approx(row.bf16_tflops * 1e12));
    CHECK(spec.datasheet->fp64_flops == Approx(row.fp64_tflops * 1e12));
  }
  // The compute capability and fp64 survive the YAML and JSON round trips.
  const DeviceSpec a100 = find_device_spec("a100-80gb");
  CHECK(parse_device_spec(device_spec_to_yaml(a100), "again.yaml") == a100);
  CHECK(device_spec_from_json(to_json(a100), "a100") == a100);
}

TEST_CASE("bad device files: errors name the file, the line and the key", "[device_spec]") {
  auto problem = [](const std::string& yaml) -> std::string {
    try {
      parse_device_spec(yaml, "bad.yaml");
    } catch (const InputError& error) {
      return error.what();
    }
    return "no error";
  };
  CHECK_THAT(problem("description: x\nsource: s\nmemory_bandwidth_tb_s: 1\n"), Catch::Contains("bad.yaml") &&
                                                                               Catch::Contains("name: missing"));
  CHECK_THAT(problem("name: x\nsource: s\nmemory_bandwith_tb_s: 1\n"),
             Catch::Contains("bad.yaml:3") && Catch::Contains("memory_bandwith_tb_s: unknown key"));
  CHECK_THAT(problem("name: x\nsource: s\nmemory_bandwidth_tb_s: fast\n"),
             Catch::Contains("bad.yaml:3") && Catch::Contains("expected a positive number"));
  CHECK_THAT(problem("name: x\nsource: s\nmemory_bandwidth_tb_s: -2\n"), Catch::Contains("positive"));
  CHECK_THAT(problem("name: x\nsource: s\npeak_tflops: {fp32: 1, fp8: 2}\n"),
             Catch::Contains("peak_tflops.fp8: unknown key"));
  CHECK_THAT(problem("name: x\nsource: s\ncompute_capability: 9\nmemory_bandwidth_tb_s: 1\n"),
             Catch::Contains("bad.yaml:3") && Catch::Contains("compute_capability: expected MAJOR.MINOR"));
  CHECK_THAT(problem("name: x\nmemory_bandwidth_tb_s: 1\n"), Catch::Contains("source: missing"));
  CHECK_THAT(problem("name: x\n"), Catch::Contains("expected datasheet figures"));
  CHECK_THAT(problem("name: [x\n"), Catch::Contains("not valid YAML"));
  CHECK_THAT(problem("- a\n- b\n"), Catch::Contains("expected a mapping"));
  CHECK_THAT(problem("name: x\nsource: s\nmemory_bandwidth_tb_s: 1\nmemory_bandwidth_gb_s: 1\n"),
             Catch::Contains("once"));
  CHECK_THROWS_AS(find_device_spec("no-such-device"), InputError);
  CHECK_THROWS_AS(load_device_spec("/nonexistent/dir/x.yaml"), InputError);
}

TEST_CASE("a measured CPU spec saves and loads back (GB/s units, machine identity)", "[device_spec]") {
  DeviceSpec spec;
  spec.name = "cpu-test";
  spec.description = "Test CPU \"quoted\" (2 threads)";
  Roofs measured;
  measured.bandwidth = 23.4567e9;
  measured.fp32_flops = 101.25e9;
  measured.fp16_flops = 40.5e9;
  measured.bf16_flops = 38.0e9;
  measured.source = "decodelab roofline --measure";
  measured.efficiency = {{"matmul", Precision::Fp32, 1, 10, 0.75, 0.75, "lab-small's q/k/v \"1 row\""},
                         {"matmul", Precision::Fp16, 2, 7, 0.5, 0.25, ""},
                         {"attention", Precision::Bf16, 1, 9, 0.625, 0.625, "decode attention"}};
  spec.measured = measured;
  spec.machine = MachineIdentity{"host-1", "AMD EPYC", 2};

  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("decodelab-test-spec-" + std::to_string(::getpid()) + ".yaml");
  save_device_spec(spec, file);
  const DeviceSpec loaded = load_device_spec(file);
  std::filesystem::remove(file);

  CHECK(loaded.name == spec.name);
  CHECK(loaded.description == spec.description);
  REQUIRE(loaded.measured);
  CHECK_FALSE(loaded.datasheet);
  CHECK(loaded.measured->bandwidth == Approx(measured.bandwidth).epsilon(1e-5));
  CHECK(loaded.measured->fp16_flops == Approx(measured.fp16_flops).epsilon(1e-5));
  CHECK(loaded.machine == spec.machine);
  CHECK(loaded.measured->efficiency == measured.efficiency);
  CHECK(device_spec_to_yaml(spec).find("efficiency_table:\n    - {category: matmul, precision: fp32, rows_from: 1, size_log2: 10") !=
        std::string::npos);
  CHECK(device_spec_to_yaml(spec).find("memory_bandwidth_gb_s") != std::string::npos);
  CHECK(loaded.roofs_origin() == "measured");

  // JSON round trip (used in traces and results) is exact
  CHECK(device_spec_from_json(to_json(spec), "test") == spec);
}

TEST_CASE("a device file's stated efficiency is read, checked and kept beside the datasheet", "[device_spec]") {
  const std::string good = "name: x\nsource: s\nmemory_bandwidth_tb_s: 2\npeak_tflops: {fp16: 100}\n"
                           "efficiency: {flops: 0.7, bytes: 0.85, source: \"a stated default\"}\n";
  const DeviceSpec spec = parse_device_spec(good, "good.yaml");
  REQUIRE(spec.datasheet);
  CHECK(spec.effective_roofs().default_flops_efficiency == Approx(0.7));
  CHECK(spec.effective_roofs().default_bytes_efficiency == Approx(0.85));
  CHECK(spec.effective_roofs().efficiency_source == "a stated default");
  CHECK(parse_device_spec(device_spec_to_yaml(spec), "again.yaml") == spec);
  CHECK(device_spec_from_json(to_json(spec), "x.json") == spec);
  // Without it, η is 1: the datasheet's peaks.
  const DeviceSpec plain = parse_device_spec("name: y\nsource: s\nmemory_bandwidth_tb_s: 2\n", "plain.yaml");
  CHECK(plain.datasheet->default_bytes_efficiency == 1);
  CHECK(plain.datasheet->efficiency_source.empty());

  for (const char* bad_value : {"0", "2", "fast"}) {
    const std::string bad = "name: x\nsource: s\nmemory_bandwidth_tb_s: 2\nefficiency: {flops: " + std::string(bad_value) +
                            ", bytes: 0.8, source: s}\n";
    CAPTURE(bad_value);
    CHECK_THROWS_WITH(parse_device_spec(bad, "bad.yaml"), Catch::Contains("bad.yaml") && Catch::Contains("efficiency.flops"));
  }
  const std::string bad_row = "name: x\nmeasured:\n  source: s\n  memory_bandwidth_gb_s: 20\n"
                              "  efficiency_table:\n    - {category: matmul, precision: fp8, rows_from: 1, size_log2: 3, flops: 1, bytes: 1}\n";
  CHECK_THROWS_WITH(parse_device_spec(bad_row, "bad.yaml"), Catch::Contains("measured.efficiency_table[0].precision"));
}

TEST_CASE("shipped GPU files carry fixed costs with their source", "[device_spec][prediction]") {
  for (const char* name : {"h100-sxm", "h200", "a100-80gb", "l4"}) {
    INFO(name);
    const DeviceSpec spec = find_device_spec(name);
    REQUIRE(spec.fixed_costs);
    CHECK(spec.fixed_costs->source.find("CUDA Graphs") != std::string::npos);
    CHECK(spec.fixed_costs->host_launch == Approx(3.8e-6));
    CHECK(spec.fixed_costs->op_overhead == Approx(0.9e-6));
    CHECK(spec.fixed_costs->sync_round_trip == Approx(6.7e-6));
    // The blog's experiment, re-predicted: 2.9 µs kernels with a sync after each take 9.6 µs.
    CHECK(spec.fixed_costs->host_launch + 2.9e-6 + spec.fixed_costs->op_overhead + spec.fixed_costs->return_latency() ==
          Approx(9.6e-6));
    CHECK(spec.fixed_costs->host_link_bandwidth > 0);
    CHECK(spec.effective_fixed_costs() == spec.fixed_costs);
    CHECK_FALSE(spec.effective_cache());  // no published cache bandwidth: every byte at the HBM roof
  }
}

TEST_CASE("bad fixed costs and caches: errors name the file, the line and the key", "[device_spec][prediction]") {
  auto problem = [](const std::string& costs) -> std::string {
    try {
      parse_device_spec("name: x\nsource: s\nmemory_bandwidth_tb_s: 1\n" + costs, "bad.yaml");
    } catch (const InputError& error) {
      return error.what();
    }
    return "no error";
  };
  const std::string good = "  source: blog\n  host_launch_us: 3\n  op_overhead_us: 1\n  sync_round_trip_us: 6\n";
  CHECK(problem("fixed_costs:\n" + good) == "no error");
  CHECK_THAT(problem("fixed_costs:\n  host_launch_us: 3\n  op_overhead_us: 1\n  sync_round_trip_us: 6\n"),
             Catch::Contains("bad.yaml") && Catch::Contains("fixed_costs.source: missing"));
  CHECK_THAT(problem("fixed_costs:\n  source: s\n  host_launch_us: 3\n  sync_round_trip_us: 6\n"),
             Catch::Contains("fixed_costs.op_overhead_us: missing"));
  CHECK_THAT(problem("fixed_costs:\n" + good + "  op_overhead_ms: 1\n"),
             Catch::Contains("bad.yaml:9") && Catch::Contains("fixed_costs.op_overhead_ms: unknown key"));
  CHECK_THAT(problem("fixed_costs:\n  source: s\n  host_launch_us: -3\n  op_overhead_us: 1\n  sync_round_trip_us: 6\n"),
             Catch::Contains("bad.yaml:6") && Catch::Contains("fixed_costs.host_launch_us") &&
                 Catch::Contains("expected a number >= 0"));
  CHECK_THAT(problem("fixed_costs:\n  source: s\n  host_launch_us: 3\n  op_overhead_us: 1\n  sync_round_trip_us: 2\n"),
             Catch::Contains("bad.yaml:8") && Catch::Contains("sync_round_trip_us") &&
                 Catch::Contains("at least host_launch_us + op_overhead_us"));
  CHECK_THAT(problem("fixed_costs:\n" + good + "  parallel_region_us: -2\n"),
             Catch::Contains("bad.yaml:9") && Catch::Contains("fixed_costs.parallel_region_us") &&
                 Catch::Contains("expected a number >= 0"));
  CHECK_THAT(problem("cache:\n  source: s\n  size_mib: 32\n"), Catch::Contains("cache.bandwidth_gb_s"));
  CHECK_THAT(problem("cache:\n  source: s\n  size_mib: big\n  bandwidth_gb_s: 100\n"),
             Catch::Contains("bad.yaml:6") && Catch::Contains("cache.size_mib"));
  CHECK_THAT(problem("measured:\n  source: m\n  memory_bandwidth_gb_s: 5\n  fixed_costs:\n    source: m\n"),
             Catch::Contains("measured.fixed_costs.host_launch_us: missing"));
  const std::string cache = "cache:\n  source: s\n  size_mib: 32\n  bandwidth_gb_s: 100\n";
  CHECK(problem(cache + "  beyond:\n    - {reuse_mib: 64, resident: 0.5}\n    - {reuse_mib: 512, resident: 0}\n") ==
        "no error");
  // A share that rises with the distance, a point within the capacity, a missing share.
  CHECK_THAT(problem(cache + "  beyond:\n    - {reuse_mib: 64, resident: 0.5}\n    - {reuse_mib: 128, resident: 0.6}\n"),
             Catch::Contains("bad.yaml:10") && Catch::Contains("cache.beyond[1]") && Catch::Contains("never rising"));
  CHECK_THAT(problem(cache + "  beyond:\n    - {reuse_mib: 16, resident: 0.5}\n"),
             Catch::Contains("bad.yaml:9") && Catch::Contains("cache.beyond[0]") && Catch::Contains("beyond size_mib"));
  CHECK_THAT(problem(cache + "  beyond:\n    - {reuse_mib: 64}\n"),
             Catch::Contains("cache.beyond[0]") && Catch::Contains("expected reuse_mib and resident"));
  CHECK_THAT(problem(cache + "  beyond: 3\n"), Catch::Contains("cache.beyond") && Catch::Contains("expected a list"));
}

TEST_CASE("fixed costs and a cache save and load back, measured over published", "[device_spec][prediction]") {
  DeviceSpec spec = find_device_spec("l4");
  Roofs measured;
  measured.bandwidth = 50e9;
  measured.source = "m";
  spec.measured = measured;
  spec.measured_fixed_costs = FixedCosts{0.05e-6, 1.1e-6, 2.5e-6, 0, "stream costs", 3.2e-6};
  spec.measured_cache = CacheLevel{32.0 * 1024 * 1024, 180e9, "matvec in cache",
                                   {{64.0 * 1024 * 1024, 0.5}, {512.0 * 1024 * 1024, 0.0}}};
  const DeviceSpec loaded = parse_device_spec(device_spec_to_yaml(spec), "round-trip.yaml");
  REQUIRE(loaded.measured_fixed_costs);
  CHECK(loaded.measured_fixed_costs->op_overhead == Approx(1.1e-6));
  CHECK(loaded.measured_fixed_costs->sync_round_trip == Approx(2.5e-6));
  CHECK(loaded.measured_fixed_costs->parallel_region == Approx(3.2e-6));
  REQUIRE(loaded.measured_cache);
  CHECK(loaded.measured_cache->bytes == Approx(32.0 * 1024 * 1024));
  CHECK(loaded.measured_cache->bandwidth == Approx(180e9));
  REQUIRE(loaded.measured_cache->beyond.size() == 2);
  CHECK(loaded.measured_cache->beyond[0].reuse_bytes == Approx(64.0 * 1024 * 1024));
  CHECK(loaded.measured_cache->beyond[0].resident == Approx(0.5));
  CHECK(loaded.measured_cache->beyond[1].resident == 0);
  REQUIRE(loaded.fixed_costs);
  CHECK(loaded.fixed_costs->host_link_bandwidth == Approx(32e9));
  CHECK(loaded.fixed_costs->parallel_region == 0);  // a GPU's published costs: none
  CHECK(loaded.effective_fixed_costs()->source == "stream costs");
  CHECK(loaded.effective_cache()->source == "matvec in cache");
  CHECK(device_spec_from_json(to_json(spec), "test") == spec);

  // A measured round trip clamped to launch + per-op overhead reads back, whatever the
  // rounding of the three figures; a cost below the clock's resolution may be zero.
  spec.measured_fixed_costs = FixedCosts{1.0 / 3 * 1e-6, 2.0 / 3 * 1e-6 + 1e-13, 0, 0, "clamped"};
  spec.measured_fixed_costs->sync_round_trip = spec.measured_fixed_costs->host_launch + spec.measured_fixed_costs->op_overhead;
  CHECK_NOTHROW(parse_device_spec(device_spec_to_yaml(spec), "clamped.yaml"));
  spec.measured_fixed_costs = FixedCosts{0, 0, 1e-6, 0, "zero launch"};
  CHECK(parse_device_spec(device_spec_to_yaml(spec), "zero.yaml").measured_fixed_costs->host_launch == 0);
}

TEST_CASE("measured roofs keep when, how steady and the cache size, printed with age and spread", "[device_spec]") {
  DeviceSpec spec;
  spec.name = "cpu-quality";
  spec.cache_bytes = 32.0 * 1024 * 1024;
  Roofs measured{.bandwidth = 20e9, .fp32_flops = 100e9, .fp16_flops = 100e9, .bf16_flops = 100e9, .source = "measured (test)"};
  measured.measured_at = 1764590400;  // 2025-12-01T12:00:00Z
  measured.spread = 0.38;
  measured.noisy = true;
  measured.probe_bandwidth = 18.5e9;
  measured.core_round_trip_ns = 426;
  spec.measured = measured;
  spec.machine = MachineIdentity{"host-1", "AMD EPYC", 2};
  const std::string yaml = device_spec_to_yaml(spec);
  CHECK(yaml.find("measured_at: 2025-12-01T12:00:00Z") != std::string::npos);
  CHECK(yaml.find("cache_mb: 32") != std::string::npos);
  const DeviceSpec loaded = parse_device_spec(yaml, "quality.yaml");
  REQUIRE(loaded.measured);
  CHECK(loaded.measured->measured_at == measured.measured_at);
  CHECK(loaded.measured->spread == Approx(0.38));
  CHECK(loaded.measured->noisy);
  CHECK(loaded.measured->probe_bandwidth == Approx(18.5e9));
  CHECK(loaded.measured->core_round_trip_ns == Approx(426));
  CHECK(loaded.cache_bytes == Approx(spec.cache_bytes));
  CHECK(device_spec_from_json(to_json(spec), "test") == spec);
  CHECK(measured.age_and_spread(measured.measured_at + 3 * 3600) ==
        "taken 3 h ago on a noisy or contended machine, spread 38%");
  CHECK(spec.roofs_provenance(measured.measured_at + 600) ==
        "measured (taken 10 min ago on a noisy or contended machine, spread 38%)");
  CHECK(Roofs{}.age_and_spread(0).empty());
  CHECK_THROWS_WITH(parse_device_spec(std::string(yaml).replace(yaml.find("2025-12"), 7, "Dec 1st"), "bad.yaml"),
                    Catch::Matchers::Contains("measured.measured_at"));
  // The GPU files state their last-level cache.
  CHECK(find_device_spec("h100-sxm").cache_bytes == Approx(50.0 * 1024 * 1024));
}
