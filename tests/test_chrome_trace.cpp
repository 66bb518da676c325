// Chrome trace: the written JSON has what Perfetto needs (named tracks, X slices, flow
// arrows), a write -> read round trip gives back an equal Trace, and malformed files
// fail with the file and the event index.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include <unistd.h>

#include "engine/base/errors.h"
#include "profiling/trace/chrome_trace.h"
#include "tests/support/profiling_fixtures.h"

using namespace decodelab;
using decodelab::testing::op;
using decodelab::testing::tensor;

namespace {

// A trace with everything a recording can hold: metadata with roofs, nested ranges (one
// left open), ops with and without device times, an id restart, an attention extent, a
// strided view, host calls. Times are seeded random ns on a large clock value.
Trace rich_trace() {
  std::mt19937_64 random(42);
  int64_t clock = 7'000'000'000'123;
  auto tick = [&] { return clock += 1 + static_cast<int64_t>(random() % 50'000); };

  Trace trace;
  TraceMetadata& meta = trace.metadata();
  meta.backend = "cpu";
  meta.device = "AMD EPYC (2 threads)";
  meta.dtype = "fp16";
  meta.model = ModelShape{"lab-small", 512, 1376, 4, 8, 4, 64, 32000};
  DeviceSpec spec;
  spec.name = "cpu-test";
  spec.measured = Roofs{.bandwidth = 21.7e9, .fp32_flops = 95.3e9, .fp16_flops = 30.1e9, .bf16_flops = 29.9e9, .source = "measured"};
  spec.machine = MachineIdentity{"host", "AMD EPYC", 2};
  meta.device_spec = spec;

  trace.range_begin(RangeKind::Run, -1, tick());
  trace.range_begin(RangeKind::Prefill, -1, tick());
  OpId id = 1;
  for (int i = 0; i < 5; ++i) {
    const int64_t host_begin = tick();
    trace.op_enqueued(decodelab::testing::matmul(id++, 16, 512, 512, DType::F16), host_begin, tick());
  }
  OpDesc attention = op(id++, "attention", "self_attn", OpCategory::Attention,
                        {tensor(DType::F16, {16, 512}), tensor(DType::F16, {1, 4, 64, 64})}, {tensor(DType::F16, {16, 512})});
  attention.inputs[1].strides = {16384, 64, 256, 1};  // a transposed cache view
  attention.attention = AttentionExtent{136, 16, 8, 4, 64};
  const int64_t attention_begin = tick();
  trace.op_enqueued(attention, attention_begin, tick());
  trace.range_end(RangeKind::Prefill, -1, tick());
  std::vector<OpTiming> timings;
  for (OpId done = 1; done < id; ++done) {
    const int64_t begin = tick();
    timings.push_back({done, begin, tick()});
  }
  trace.ops_executed(timings);
  trace.host_call(HostCall{HostCallKind::Synchronize, "synchronize", tick(), tick(), 0});

  trace.range_begin(RangeKind::Step, 0, tick());
  trace.range_begin(RangeKind::Layer, 0, tick());
  id = 1;  // a new front layer: ids restart
  for (const OpDesc& desc : {decodelab::testing::elementwise_add(id, 512, DType::F16), decodelab::testing::marker(id + 1)}) {
    const int64_t host_begin = tick();  // (argument evaluation order is unspecified)
    trace.op_enqueued(desc, host_begin, tick());
  }
  trace.range_end(RangeKind::Layer, 0, tick());
  const int64_t begin = tick();
  trace.ops_executed({{1, begin, tick()}});  // the marker never reports
  trace.host_call(HostCall{HostCallKind::DeviceToHost, "memcpy_dtoh", tick(), tick(), 64});
  trace.range_end(RangeKind::Step, 0, tick());
  trace.range_begin(RangeKind::Step, 1, tick());  // left open
  return trace;
}

std::filesystem::path temp_file(const char* name) {
  return std::filesystem::temp_directory_path() / (std::string("decodelab-") + std::to_string(::getpid()) + "-" + name);
}

std::string read_problem(const std::string& text) {
  try {
    parse_chrome_trace(text, "broken.json");
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("chrome trace: write -> read gives back an equal trace", "[chrome_trace]") {
  const Trace original = rich_trace();
  const std::filesystem::path file = temp_file("roundtrip.json");

  write_chrome_trace(original, file);
  const Trace loaded = read_chrome_trace(file);
  std::filesystem::remove(file);

  CHECK(loaded.ops().size() == original.ops().size());
  CHECK(loaded.ranges().size() == original.ranges().size());
  CHECK(loaded.host_calls().size() == original.host_calls().size());
  CHECK(loaded.metadata() == original.metadata());
  CHECK(loaded == original);
  // and the round trip is stable: writing the loaded trace gives the same JSON
  CHECK(chrome_trace_json(loaded) == chrome_trace_json(original));
}

TEST_CASE("chrome trace: tracks, slices and flow arrows Perfetto can show", "[chrome_trace]") {
  const Trace trace = rich_trace();
  const nlohmann::json json = chrome_trace_json(trace);

  REQUIRE(json["traceEvents"].is_array());
  CHECK(json["displayTimeUnit"] == "ms");
  std::set<std::string> track_names;
  std::map<uint64_t, std::string> flows;
  int device_slices = 0;
  double last_ts = -1;
  for (const nlohmann::json& event : json["traceEvents"]) {
    if (event["ph"] == "M") {
      if (event["name"] == "thread_name") track_names.insert(event["args"]["name"].get<std::string>());
      continue;
    }
    CHECK(event["ts"].get<double>() >= last_ts);  // time-ordered
    last_ts = event["ts"].get<double>();
    if (event["ph"] == "s") flows[event["id"].get<uint64_t>()] += "s";
    if (event["ph"] == "f") {
      flows[event["id"].get<uint64_t>()] += "f";
      CHECK(event["bp"] == "e");
    }
    if (event["ph"] == "X" && event["tid"] == 2 && event["cat"] != "device_range") {
      ++device_slices;
      CHECK(event["args"].contains("inputs"));
      CHECK(event["args"].contains("flops"));
      CHECK(event["args"].contains("bytes"));
      CHECK(event["args"]["inputs"][0].contains("strides"));
    }
  }
  CHECK(track_names == std::set<std::string>{"host", "device stream"});
  CHECK(device_slices == 7);  // 6 prefill ops + the add; the marker never ran
  CHECK(flows.size() == 7);
  for (const auto& [id, phases] : flows) CHECK(phases == "sf");
}

TEST_CASE("chrome trace: ranges also sit on the device track, from their first to their last device op",
          "[chrome_trace]") {
  // prepare: the rich trace's prefill ran on the device after the prefill range closed
  const Trace trace = rich_trace();
  const nlohmann::json json = chrome_trace_json(trace);
  // run: collect the device track's ranges and ops
  std::map<std::string, std::pair<double, double>> device_ranges;  // name -> [begin, end] µs
  std::vector<std::pair<double, double>> device_ops;
  for (const nlohmann::json& event : json["traceEvents"]) {
    if (event["ph"] != "X" || event["tid"] != 2) continue;
    const double begin = event["ts"].get<double>(), end = begin + event["dur"].get<double>();
    if (event["cat"] == "device_range") {
      CHECK(device_ranges.emplace(event["name"].get<std::string>(), std::make_pair(begin, end)).second);
      CHECK_FALSE(event["args"].contains("op_index"));  // never read as an op
    } else {
      device_ops.emplace_back(begin, end);
    }
  }
  // verify: prefill spans the 6 prefill ops; step 0 and layer 0 span the add; the ranges
  // left open (run, step 1) have none; the host track keeps every range
  REQUIRE(device_ops.size() == 7);
  CHECK(device_ranges.size() == 3);
  REQUIRE(device_ranges.count("prefill") == 1);
  const auto same_time = [](double micros) { return Approx(micros).margin(1e-3); };  // ns resolution
  CHECK(device_ranges["prefill"].first == same_time(device_ops[0].first));
  CHECK(device_ranges["prefill"].second == same_time(device_ops[5].second));
  for (const char* name : {"step 0", "layer 0"}) {
    REQUIRE(device_ranges.count(name) == 1);
    CHECK(device_ranges[name].first == same_time(device_ops[6].first));
    CHECK(device_ranges[name].second == same_time(device_ops[6].second));
  }
  CHECK(device_ranges.count("step 1") == 0);
  CHECK(device_ranges.count("run") == 0);
  // the host track still has every range (the open one as a B event)
  size_t host_ranges = 0;
  for (const nlohmann::json& event : json["traceEvents"])
    if (event.value("cat", "") == "range" && event["tid"] == 1) ++host_ranges;
  CHECK(host_ranges == trace.ranges().size());
}

TEST_CASE("chrome trace: malformed files name the file and the event", "[chrome_trace]") {
  const nlohmann::json valid = chrome_trace_json(rich_trace());

  CHECK_THAT(read_problem("{\n\"traceEvents\": [\n  {\"ph\": \"X\",,}\n]}"),
             Catch::Contains("broken.json:3") && Catch::Contains("not valid JSON"));
  CHECK_THAT(read_problem("[]"), Catch::Contains("broken.json") && Catch::Contains("expected a JSON object"));
  CHECK_THAT(read_problem(R"({"traceEvents": []})"), Catch::Contains("otherData"));

  // find the first op's device slice and break it in several ways
  size_t device_event = 0;
  for (size_t i = 0; i < valid["traceEvents"].size(); ++i) {
    if (valid["traceEvents"][i]["ph"] == "X" && valid["traceEvents"][i]["tid"] == 2 &&
        valid["traceEvents"][i]["cat"] != "device_range") {
      device_event = i;
      break;
    }
  }
  const std::string where = "traceEvents[" + std::to_string(device_event) + "]";
  nlohmann::json broken = valid;
  broken["traceEvents"][device_event]["args"]["inputs"][0]["dtype"] = "fp8";
  CHECK_THAT(read_problem(broken.dump()), Catch::Contains(where + ".args.inputs[0].dtype") && Catch::Contains("fp8"));
  broken = valid;
  broken["traceEvents"][device_event]["dur"] = -3;
  CHECK_THAT(read_problem(broken.dump()), Catch::Contains(where + ".dur"));
  broken = valid;
  broken["traceEvents"][device_event].erase("ts");
  CHECK_THAT(read_problem(broken.dump()), Catch::Contains(where + ".ts: missing"));
  broken = valid;
  broken["traceEvents"][device_event]["args"]["category"] = "teleport";
  CHECK_THAT(read_problem(broken.dump()), Catch::Contains("unknown op category 'teleport'"));
  broken = valid;
  broken["traceEvents"][3] = 17;
  CHECK_THAT(read_problem(broken.dump()), Catch::Contains("traceEvents[3]: expected an event object"));
  broken = valid;
  broken["otherData"]["schema_version"] = 99;
  CHECK_THAT(read_problem(broken.dump()), Catch::Contains("newer than this reader"));
  CHECK_THROWS_AS(read_chrome_trace("/nonexistent/trace.json"), InputError);
}

TEST_CASE("chrome trace: an empty trace round-trips", "[chrome_trace]") {
  const Trace empty;
  const Trace loaded = parse_chrome_trace(chrome_trace_json(empty).dump(), "empty.json");
  CHECK(loaded == empty);
}

TEST_CASE("chrome trace: events in any order read back as the same trace", "[chrome_trace]") {
  // prepare: a trace's JSON with its events reversed (the format does not order them)
  const Trace original = rich_trace();
  nlohmann::json json = chrome_trace_json(original);
  std::reverse(json["traceEvents"].begin(), json["traceEvents"].end());
  // run
  const Trace loaded = parse_chrome_trace(json.dump(), "reversed.json");
  // verify: host calls, ranges and ops in the recording's order again
  CHECK(loaded == original);
}
