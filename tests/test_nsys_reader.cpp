// The `nsys stats` CSV reader: each report recognised by its header, columns by name and
// units from the header, several reports in one stream with the tool's messages between
// them, and every broken row refused with the file, the row and the column.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "engine/base/errors.h"
#include "profiling/trace/nsys_reader.h"

using namespace decodelab;

namespace {

std::filesystem::path fixture(const char* name) {
  return std::filesystem::path(DECODELAB_SOURCE_DIR) / "tests" / "fixtures" / "nsys" / name;
}

const char* kGpuHeader =
    "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),Bytes (MB),"
    "Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name\n";

}  // namespace

TEST_CASE("nsys reader: the decode fixtures, one report per file", "[nsys_reader]") {
  NsysTables tables;
  read_nsys_csv(fixture("decode_cuda_gpu_trace.csv"), tables);
  read_nsys_csv(fixture("decode_cuda_api_trace.csv"), tables);
  read_nsys_csv(fixture("decode_nvtx_pushpop_trace.csv"), tables);

  CHECK(tables.has(NsysReport::GpuTrace));
  CHECK(tables.has(NsysReport::ApiTrace));
  CHECK(tables.has(NsysReport::NvtxTrace));
  CHECK_FALSE(tables.has(NsysReport::KernelSummary));
  REQUIRE(tables.gpu_ops.size() == 18);
  REQUIRE(tables.api_calls.size() == 23);
  REQUIRE(tables.ranges.size() == 9);

  const NsysGpuOp& upload = tables.gpu_ops[0];
  CHECK(upload.name == "[CUDA memcpy Host-to-Device]");
  CHECK(upload.start_ns == 1001000.0);
  CHECK(upload.duration_ns == 1000.0);
  CHECK(*upload.bytes == Approx(4096.0));  // 0.004096 MB
  CHECK(upload.source_kind == "Pinned");
  CHECK(upload.device == "NVIDIA H100 80GB HBM3 (0)");
  CHECK(upload.stream == "7");
  // A quoted kernel name keeps its commas; kernels carry no bytes.
  CHECK(tables.gpu_ops[2].name.find("const T1 *, long, const T1 *") != std::string::npos);
  CHECK_FALSE(tables.gpu_ops[2].bytes);

  const NsysApiCall& launch = tables.api_calls[2];
  CHECK(launch.name == "cudaLaunchKernel");
  CHECK(*launch.correlation == 103);  // the "CorrID" column, matched whatever its case
  CHECK(*tables.gpu_ops[1].correlation == 103);
  CHECK(launch.thread == "51234");

  CHECK(tables.ranges[3].name == "step 1");
  CHECK(tables.ranges[3].end_ns - tables.ranges[3].start_ns == 70000.0);
}

TEST_CASE("nsys reader: several reports in one stream, between the tool's messages", "[nsys_reader]") {
  NsysTables tables;
  read_nsys_csv(fixture("decode_summaries.csv"), tables);

  CHECK(tables.reports == std::vector<NsysReport>{NsysReport::KernelSummary, NsysReport::ApiSummary});
  REQUIRE(tables.kernel_summary.size() == 5);
  REQUIRE(tables.api_summary.size() == 5);
  CHECK(tables.kernel_summary[0].total_ns == 120000.0);
  CHECK(tables.kernel_summary[0].count == 3);
  CHECK(tables.api_summary[1].name == "cudaLaunchKernel");
  CHECK(tables.api_summary[1].count == 13);
}

TEST_CASE("nsys reader: units in the header scale the values", "[nsys_reader]") {
  const std::string text =
      "Start (us),Duration (us),CorrId,Bytes (KiB),Device,Strm,Name\n"
      "1.5,2.25,7,2,GPU 0,7,[CUDA memcpy DtoH]\n"
      "4,1,8,,GPU 0,7,kernel\n";
  NsysTables tables;
  parse_nsys_csv(text, "us.csv", tables);
  REQUIRE(tables.gpu_ops.size() == 2);
  CHECK(tables.gpu_ops[0].start_ns == Approx(1500.0));
  CHECK(tables.gpu_ops[0].duration_ns == Approx(2250.0));
  CHECK(*tables.gpu_ops[0].bytes == Approx(2048.0));
  CHECK(tables.gpu_ops[1].end_ns() == Approx(5000.0));
}

TEST_CASE("nsys reader: malformed and truncated reports name the file, the row and the column", "[nsys_reader]") {
  const std::string api_header = "Start (ns),Duration (ns),Name,Result,CorrID,Pid,Tid,T-Pri,Thread Name\n";
  struct Case {
    const char* what;
    std::string text;
    int line;
    std::string key;
    const char* problem;
  };
  const Case cases[] = {
      {"a row cut short", std::string(kGpuHeader) + "1000,500,1,1,1,1,32,1,1,16,0,0,,,,,GPU,1,,7\n", 2, "column 21 \"Name\"",
       "truncated"},
      {"a row with a cell too many", api_header + "10,5,cudaLaunchKernel,0,1,9,9,20,main,extra\n", 2, "column 10",
       "malformed"},
      {"a start that is no number", api_header + "1O,5,cudaLaunchKernel,0,1,9,9,20,main\n", 2, "column 1 \"Start (ns)\"",
       "expected a number"},
      {"an empty duration", api_header + "10,,cudaLaunchKernel,0,1,9,9,20,main\n", 2, "column 2 \"Duration (ns)\"",
       "expected a number"},
      {"a negative duration", api_header + "10,-5,cudaLaunchKernel,0,1,9,9,20,main\n", 2, "column 2 \"Duration (ns)\"",
       "duration ≥ 0"},
      {"a fractional correlation id", api_header + "10,5,cudaLaunchKernel,0,1.5,9,9,20,main\n", 2, "column 5 \"CorrID\"",
       "whole number"},
      {"an unknown time unit", "Start (ticks),Duration (ns),CorrId,Name\n1,2,3,k\n", 1, "column 1 \"Start (ticks)\"",
       "unknown time unit"},
      {"a range that ends before it starts",
       "Start (ns),End (ns),Duration (ns),Name,Lvl,RangeId\n100,50,-50,step 1,0,1\n", 2, "column 2 \"End (ns)\"",
       "at or after the start"},
      {"a file cut inside a quoted name", std::string(kGpuHeader) + "1000,500,1,1,1,1,32,1,1,16,0,0,,,,,GPU,1,,7,\"void k(int,",
       2, "column 21", "never closed"},
      {"no table this reader knows", "Time (%),Total Time (ns),Count,Avg (ns),Operation\n50,10,1,10,[CUDA memset]\n", 0, "",
       "no nsys stats table"},
      {"the tool skipped the report", "SKIPPED: decode.sqlite does not contain CUDA trace data.\n", 0, "",
       "does not contain CUDA trace data"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    NsysTables tables;
    try {
      parse_nsys_csv(c.text, "bad.csv", tables);
      FAIL("expected an InputError");
    } catch (const InputError& error) {
      CHECK(error.file() == "bad.csv");
      CHECK(error.line() == c.line);
      CHECK(error.key() == c.key);
      CHECK_THAT(error.problem(), Catch::Matchers::Contains(c.problem));
    }
  }
}
