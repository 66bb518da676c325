// Device specs: the shipped YAML files hold FORMATS.md's datasheet table, loading
// errors name the file, line and key, and measured figures merge over the datasheet.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "engine/errors.h"
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
  CHECK_FALSE(match_device_spec("NVIDIA L40S").has_value());
  CHECK_FALSE(match_device_spec("NVIDIA H100 PCIe").has_value());
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
  CHECK_THAT(problem("name: x\nsource: s\npeak_tflops: {fp32: 1, fp64: 2}\n"),
             Catch::Contains("peak_tflops.fp64: unknown key"));
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
  CHECK(device_spec_to_yaml(spec).find("memory_bandwidth_gb_s") != std::string::npos);
  CHECK(loaded.roofs_origin() == "measured");

  // JSON round trip (used in traces and results) is exact
  CHECK(device_spec_from_json(to_json(spec), "test") == spec);
}

TEST_CASE("measured roofs keep when, how steady and the cache size, printed with age and spread", "[device_spec]") {
  DeviceSpec spec;
  spec.name = "cpu-quality";
  spec.cache_bytes = 32.0 * 1024 * 1024;
  Roofs measured{20e9, 100e9, 0, 100e9, 100e9, "measured (test)"};
  measured.measured_at = 1764590400;  // 2025-12-01T12:00:00Z
  measured.spread = 0.38;
  measured.noisy = true;
  measured.probe_bandwidth = 18.5e9;
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
