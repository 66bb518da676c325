// The Nsight Compute CSV reader: both export forms of the seed's five kernels read to the
// same metrics in base units, columns found by name whatever the version adds, the details
// page's labels understood, and every malformed or truncated export refused with the file,
// the row and the column (one table of cases).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "engine/base/errors.h"
#include "profiling/trace/ncu_reader.h"

using namespace decodelab;

namespace {

std::filesystem::path fixture(const char* name) {
  return std::filesystem::path(DECODELAB_SOURCE_DIR) / "tests" / "fixtures" / "ncu" / name;
}

}  // namespace

TEST_CASE("ncu reader: the wide and long exports of the seed's kernels hold the same metrics", "[ncu_reader]") {
  const NcuExport wide = read_ncu_csv(fixture("seed_kernels_raw.csv"));
  const NcuExport details = read_ncu_csv(fixture("seed_kernels_details.csv"));

  CHECK(wide.form == NcuForm::Wide);
  CHECK(details.form == NcuForm::Long);
  REQUIRE(wide.launches.size() == 5);
  REQUIRE(details.launches.size() == 5);

  const NcuLaunch& gemm = wide.launches[0];
  CHECK(gemm.id == "0");
  CHECK(gemm.kernel == "gemm_bf16_8192");
  CHECK(gemm.device_name == "NVIDIA H100 80GB HBM3");
  // Units converted: 1,600.00 usecond, 500.00 Mbyte, 1,100,000,000,000 tensor ops.
  CHECK(*gemm.value(ncu_metric::kDuration) == Approx(1.6e-3));
  CHECK(*gemm.value(ncu_metric::kDramRead) == Approx(0.5e9));
  CHECK(*gemm.value(ncu_metric::kTensorBf16) == Approx(1.1e12));
  CHECK(*gemm.value(ncu_metric::kSmThroughput) == Approx(82.0));
  CHECK_FALSE(gemm.find("launch__registers_per_thread"));  // not a metric the reading uses

  // The long export (base units, thousands separators) says the same, launch by launch.
  for (size_t i = 0; i < 5; ++i) {
    const NcuLaunch& a = wide.launches[i];
    const NcuLaunch& b = details.launches[i];
    INFO("launch " << a.kernel);
    CHECK(a.kernel == b.kernel);
    CHECK(b.device_name == "NVIDIA H100 80GB HBM3");
    for (const char* metric : {ncu_metric::kDuration, ncu_metric::kDramRead, ncu_metric::kDramWrite,
                               ncu_metric::kSmThroughput, ncu_metric::kMemoryThroughput, ncu_metric::kOccupancy,
                               ncu_metric::kLoadSectors, ncu_metric::kLoadRequests}) {
      INFO("metric " << metric);
      REQUIRE(a.value(metric));
      REQUIRE(b.value(metric));
      CHECK(*a.value(metric) == Approx(*b.value(metric)));
    }
  }
  CHECK(details.launches[1].line > details.launches[0].line);
}

TEST_CASE("ncu reader: older column sets, smsp__ counters, labels and n/a", "[ncu_reader]") {
  SECTION("a long export with \"Kernel Time\" and no launch columns reads by column name") {
    const std::string text =
        "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Kernel Time\",\"Context\",\"Stream\","
        "\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
        "\"3\",\"9\",\"app\",\"h\",\"k\",\"2024-Jan-01 10:00:00\",\"1\",\"7\",\"s\",\"gpu__time_duration.sum\",\"usecond\",\"12.5\"\n"
        "\"3\",\"9\",\"app\",\"h\",\"k\",\"2024-Jan-01 10:00:00\",\"1\",\"7\",\"s\","
        "\"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum\",\"Kinst\",\"2\"\n";
    const NcuExport exported = parse_ncu_csv(text, "old.csv");
    REQUIRE(exported.launches.size() == 1);
    CHECK(*exported.launches[0].value(ncu_metric::kDuration) == Approx(12.5e-6));
    CHECK(*exported.launches[0].value(ncu_metric::sass_counter('f', "fma")) == Approx(2000.0));
  }
  SECTION("the details page's labels, told apart by unit") {
    const std::string text =
        "\"ID\",\"Kernel Name\",\"Device\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
        "\"0\",\"k\",\"0\",\"GPU Speed Of Light Throughput\",\"Duration\",\"msecond\",\"1.20\"\n"
        "\"0\",\"k\",\"0\",\"GPU Speed Of Light Throughput\",\"Memory Throughput\",\"%\",\"71.5\"\n"
        "\"0\",\"k\",\"0\",\"GPU Speed Of Light Throughput\",\"Compute (SM) Throughput\",\"%\",\"12.25\"\n"
        "\"0\",\"k\",\"0\",\"Memory Workload Analysis\",\"Memory Throughput\",\"Tbyte/second\",\"2.50\"\n"
        "\"0\",\"k\",\"0\",\"Occupancy\",\"Achieved Occupancy\",\"%\",\"48\"\n"
        "\"0\",\"k\",\"0\",\"Occupancy\",\"Block Limit Registers\",\"block\",\"8\"\n"
        "\"0\",\"k\",\"0\",\"SOL\",\"\",\"\",\"\"\n";
    const NcuLaunch launch = parse_ncu_csv(text, "labels.csv").launches.at(0);
    CHECK(*launch.value(ncu_metric::kDuration) == Approx(1.2e-3));
    CHECK(*launch.value(ncu_metric::kMemoryThroughput) == Approx(71.5));
    CHECK(*launch.value(ncu_metric::kSmThroughput) == Approx(12.25));
    CHECK(*launch.value(ncu_metric::kDramRate) == Approx(2.5e12));
    CHECK(*launch.value(ncu_metric::kOccupancy) == Approx(48.0));
    CHECK(launch.device_name.empty());  // "Device" holds an ordinal, not a name
  }
  SECTION("the profiled program's own output before the table is passed over") {
    const std::string text =
        "loading model... done\n"
        "tokens/s: 1234.5, latency 3 ms\n"
        "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"nsecond\"\n\"0\",\"k\",\"1,500\"\n";
    const NcuExport exported = parse_ncu_csv(text, "mixed.csv");
    REQUIRE(exported.launches.size() == 1);
    CHECK(*exported.launches[0].value(ncu_metric::kDuration) == Approx(1.5e-6));
  }
  SECTION("n/a is present but empty; a wide export without a units row reads base units") {
    const std::string text =
        "ID,Kernel Name,Device,gpu__time_duration.sum,dram__bytes_read.sum\n"
        "0,k,NVIDIA H200,2500,n/a\n";
    const NcuLaunch launch = parse_ncu_csv(text, "bare.csv").launches.at(0);
    CHECK(*launch.value(ncu_metric::kDuration) == Approx(2.5e-6));  // nanoseconds
    REQUIRE(launch.find(ncu_metric::kDramRead));
    CHECK_FALSE(launch.value(ncu_metric::kDramRead));
    CHECK(launch.device_name == "NVIDIA H200");
  }
}

TEST_CASE("ncu reader: malformed and truncated exports name the file, the row and the column", "[ncu_reader]") {
  const std::string wide_header =
      "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"dram__bytes_read.sum\"\n"
      "\"\",\"\",\"usecond\",\"Mbyte\"\n";
  const std::string long_header = "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";
  struct Case {
    const char* what;
    std::string text;
    int line;
    std::string key;
    const char* problem;
  };
  const Case cases[] = {
      {"a row cut short", wide_header + "\"0\",\"k\",\"12.5\"\n", 3, "column 4 \"dram__bytes_read.sum\"", "truncated"},
      {"a row with a cell too many", wide_header + "\"0\",\"k\",\"1\",\"2\",\"3\"\n", 3, "column 5", "malformed"},
      {"a file cut inside a quoted cell", wide_header + "\"0\",\"k\",\"12.5\",\"3", 3, "column 4", "never closed"},
      {"a malformed number", wide_header + "\"0\",\"k\",\"12.5\",\"1.2.3\"\n", 3, "column 4 \"dram__bytes_read.sum\"",
       "expected a number"},
      {"a decimal-comma locale", wide_header + "\"0\",\"k\",\"12,5\",\"1\"\n", 3, "column 3 \"gpu__time_duration.sum\"",
       "thousands separators"},
      {"a time in a byte unit", "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"Mbyte\"\n\"0\",\"k\",\"1\"\n", 2,
       "column 3 \"gpu__time_duration.sum\"", "expected a time"},
      {"an empty launch ID", wide_header + "\"0\",\"k\",\"1\",\"1\"\n\"\",\"k\",\"1\",\"1\"\n", 4, "column 1 \"ID\"",
       "empty launch ID"},
      {"a long row cut short", long_header + "\"0\",\"k\",\"gpu__time_duration.sum\",\"nsecond\"\n", 2,
       "column 5 \"Metric Value\"", "truncated"},
      {"a long value that is no number", long_header + "\"0\",\"k\",\"dram__bytes_write.sum\",\"byte\",\"lots\"\n", 2,
       "column 5 \"Metric Value\"", "expected a number"},
      {"a header without the launch columns", "\"Metric Name\",\"Metric Value\"\n\"x\",\"1\"\n", 1, "header",
       "no row has \"ID\" and \"Kernel Name\""},
      {"only the tool's messages", "==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n", 0, "",
       "No kernels were profiled"},
      {"a header and no launch", wide_header, 0, "", "no kernel launch"},
      {"a long row that ends before its value", long_header.substr(0, long_header.size() - 1) + ",\"Rule Name\"\n" +
                                                    "\"0\",\"k\",\"gpu__time_duration.sum\",\"nsecond\"\n",
       2, "column 5 \"Metric Value\"", "the row ends after 4 of 6 columns"},
      {"a git-LFS pointer", "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 150210\n", 1, "", "git-LFS pointer"},
      {"an nvprof metrics CSV", "==123== Profiling result:\n\"Device\",\"Kernel\",\"Invocations\",\"Metric Name\",\"Metric "
                                "Description\",\"Min\",\"Max\",\"Avg\"\n",
       2, "header", "an nvprof CSV"},
      {"an nsys report", "Processing [r.sqlite] with [cuda_gpu_kern_sum.py]...\nTime (%),Total Time (ns),Instances,Avg (ns),"
                         "Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n1,2,3,4,5,6,7,8,k\n",
       2, "header", "decodelab nsys"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    try {
      parse_ncu_csv(c.text, "bad.csv");
      FAIL("expected an InputError");
    } catch (const InputError& error) {
      CHECK(error.file() == "bad.csv");
      CHECK(error.line() == c.line);
      CHECK(error.key() == c.key);
      CHECK_THAT(error.problem(), Catch::Matchers::Contains(c.problem));
    }
  }
}

TEST_CASE("ncu reader: a missing file is an InputError naming it", "[ncu_reader]") {
  CHECK_THROWS_AS(read_ncu_csv(fixture("no_such_export.csv")), InputError);
}

TEST_CASE("ncu reader: rule cells ncu leaves off a metric row are not required", "[ncu_reader]") {
  // The details page as ncu writes it: a metric row stops after "Metric Value" (with or
  // without the trailing comma), a rule row fills every column.
  const std::string text =
      "\"ID\",\"Kernel Name\",\"Device\",\"CC\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\",\"Rule Type\","
      "\"Rule Description\",\"Estimated Speedup Type\",\"Estimated Speedup\"\n"
      "\"0\",\"k\",\"0\",\"9.0\",\"gpu__time_duration.sum\",\"usecond\",\"12.5\",\n"
      "\"0\",\"k\",\"0\",\"9.0\",\"dram__bytes_read.sum\",\"Mbyte\",\"3\"\n"
      "\"0\",\"k\",\"0\",\"9.0\",\"\",\"\",\"\",\"SOLBottleneck\",\"OPT\",\"text, with a comma\",\"global\",\"40\"\n";
  const NcuExport exported = parse_ncu_csv(text, "rules.csv");
  REQUIRE(exported.launches.size() == 1);
  const NcuLaunch& launch = exported.launches[0];
  CHECK(*launch.value("gpu__time_duration.sum") == Approx(12.5e-6));
  CHECK(*launch.value("dram__bytes_read.sum") == Approx(3e6));
  CHECK(launch.compute_capability == "9.0");
  CHECK(launch.device_ordinal == "0");
  CHECK(launch.device_name.empty());
}
