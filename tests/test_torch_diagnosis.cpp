// Diagnosing torch.profiler traces of real PyTorch programs. tests/data/torch holds traces
// made by examples/pytorch/make_test_traces.py — the course example (every bug alone, the
// fixed path, combinations, two model shapes, with and without record_function ranges), a
// different decoder (other names and cache layouts), torch's legacy export without shapes,
// and GPU-shaped traces made by hand from the Kineto format's events — each listed in
// manifest.json with the findings it must show. Every one must be diagnosed exactly: the
// expected names and variants, evidence in PyTorch terms, and, where the trace cannot show a
// bug, a `limits` line saying why. Small hand-written Kineto traces cover the readers' rules.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "engine/base/errors.h"
#include "profiling/diagnosis/diagnosis.h"
#include "profiling/diagnosis/pass_reading.h"
#include "profiling/diagnosis/torch_pass_reading.h"
#include "profiling/trace/torch_trace.h"
#include "profiling/trace/torch_trace_stream.h"
#include "profiling/trace/trace_text.h"
#include "profiling/trace/trace_file.h"
#include "tests/support/temp_dir.h"

using namespace decodelab;
using decodelab::testing::TempDir;
using nlohmann::json;

namespace {

std::filesystem::path data_dir() { return std::filesystem::path(DECODELAB_SOURCE_DIR) / "tests" / "data" / "torch"; }

json manifest() {
  std::ifstream file(data_dir() / "manifest.json");
  REQUIRE(file);
  return json::parse(file);
}

std::vector<std::string> names_of(const Diagnosis& diagnosis) {
  std::vector<std::string> names;
  for (const Finding& finding : diagnosis.bugs) names.push_back(finding.name);
  return names;
}

bool any_line_contains(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) { return line.find(part) != std::string::npos; });
}

// What a limits line says for each reason make_test_traces.py gives.
const std::map<std::string, std::string> kLimitFor = {{"no strides", "records no strides"},
                                                       {"nothing to batch", "nothing to batch"},
                                                       {"no tensor shapes", "no tensor shapes"},
                                                       {"no cache", "no cache to copy"}};

void check_case(const json& entry) {
  const std::string file = entry["file"];
  const Diagnosis diagnosis = diagnose(read_trace_file(data_dir() / file));
  INFO(file << " (" << entry["program"].get<std::string>() << ", bugs " << entry["bugs"].dump() << ")");
  INFO(format_diagnosis(diagnosis));
  CHECK(diagnosis.shape.source == "torch.profiler");
  CHECK(diagnosis.diagnosed);  // every program here runs a generate loop
  CHECK(diagnosis.shape.backend == (entry.value("gpu", false) ? "cuda" : "cpu"));
  CHECK(names_of(diagnosis) == entry["expected"].get<std::vector<std::string>>());
  for (const Finding& finding : diagnosis.bugs) {
    if (entry["variants"].contains(finding.name)) CHECK(finding.variant == entry["variants"][finding.name].get<std::string>());
    CHECK(finding.confidence > 0.5);
    CHECK(finding.confidence <= 1.0);
    // Evidence in PyTorch terms: the op (aten::..., or the CUDA call) and, where shapes were recorded, a shape.
    const bool names_an_op = finding.evidence.find("aten::") != std::string::npos ||
                             finding.evidence.find("cuda") != std::string::npos ||
                             finding.name == "sequential_generation";
    CHECK(names_an_op);
    if (entry["layout"] != "torch-export" && finding.name != "host_sync" && finding.name != "sequential_generation") {
      CHECK(finding.evidence.find(" [") != std::string::npos);
    }
  }
  if (diagnosis.bugs.empty()) CHECK(format_diagnosis(diagnosis).find("no bugs found") != std::string::npos);
  for (const auto& [bug, reason] : entry["unseen"].items()) {
    INFO("unseen " << bug << ": " << reason.get<std::string>());
    const std::string& says = kLimitFor.at(reason.get<std::string>());
    CHECK((any_line_contains(diagnosis.limits, says) || any_line_contains(diagnosis.checked, says)));
  }
}

}  // namespace

// [sanitizer_skip] (CI's ASan pass leaves it to the Release pass): 3 s in Release, 45-60 s under
// ASan, reading 4 MB of gzipped JSON sixty times over; the readers and the diagnosis it drives run
// under ASan in the cases below (real and hand-written traces) and in the fuzz_torch_trace target.
TEST_CASE("torch diagnosis: every trace of the PyTorch programs shows exactly its bugs",
          "[torch][diagnosis][sanitizer_skip]") {
  const json cases = manifest()["cases"];
  REQUIRE(cases.size() >= 60);
  for (const json& entry : cases) check_case(entry);
}

TEST_CASE("torch diagnosis: the traces cover every bug alone, the fixed path and combinations, in both programs",
          "[torch][diagnosis]") {
  // So that a thinner manifest cannot pass the test above: what the issue asks of the data.
  std::map<std::string, std::set<std::string>> alone;  // program/shape → bugs seen alone
  std::map<std::string, int> combinations, fixed;
  std::set<std::string> ranged, unranged;
  const json cases = manifest()["cases"];
  for (const json& entry : cases) {
    if (entry["program"] == "gpu_shaped_trace.py" || entry["layout"] != "kineto") continue;
    const auto& arguments = entry["arguments"];
    std::string program = entry["program"];
    for (size_t i = 0; i + 1 < arguments.size(); ++i)
      if (arguments[i] == "--model") program.append("/").append(arguments[i + 1].get<std::string>());
    const auto expected = entry["expected"].get<std::vector<std::string>>();
    const bool ranges = std::find(arguments.begin(), arguments.end(), "--ranges") != arguments.end();
    (ranges ? ranged : unranged).insert(program);
    if (entry["bugs"].empty()) ++fixed[program];
    if (expected.size() == 1 && entry["bugs"].size() == 1) alone[program].insert(expected.front());
    if (expected.size() >= 2) ++combinations[program];
  }
  for (const std::string program : {"generate.py/tiny", "generate.py/small"}) {
    INFO(program);
    CHECK(alone[program].size() == 5);
    CHECK(fixed[program] >= 1);
    CHECK(combinations[program] >= 8);
    CHECK(ranged.count(program) == 1);
    CHECK(unranged.count(program) == 1);
  }
  CHECK(alone["other_decoder.py"].size() == 5);
  CHECK(fixed["other_decoder.py"] >= 2);
  CHECK(combinations["other_decoder.py"] >= 3);
}

TEST_CASE("torch diagnosis: a legacy export without shapes is read as far as it goes", "[torch][diagnosis]") {
  const Diagnosis diagnosis = diagnose(read_trace_file(data_dir() / "example-tiny-legacy-cache+layer.json.gz"));
  INFO(format_diagnosis(diagnosis));
  REQUIRE(names_of(diagnosis) == std::vector<std::string>{"host_sync"});
  CHECK(diagnosis.bugs.front().variant == "layer");
  CHECK(any_line_contains(diagnosis.limits, "legacy torch.profiler export"));
  const bool says_what_was_not_checked =
      any_line_contains(diagnosis.limits, "no_kv_cache (rows per sequence), non_contiguous (what a copy copies), "
                                          "fp32_ops (dtypes) and sequential_generation (sequences per pass) were not checked");
  CHECK(says_what_was_not_checked);
  CHECK(diagnosis.shape.requests_per_run == 0);  // not recorded: the printer says "?"
  CHECK(format_diagnosis(diagnosis).find("? requests") != std::string::npos);
}

namespace {

// What a hand-written forward pass holds beside its projections and attention.
struct KinetoPassOptions {
  bool copy_keys = false;       // a .contiguous() of K before attention, every layer
  bool read_in_layers = false;  // `if tensor:` (with a stream sync) after every layer
  bool head = true;             // an lm_head and a choice of the next token
  bool encoder_tables = false;  // word, token type and position embeddings, as an encoder has
};

// A hand-written Kineto trace: cpu_ops on one thread, one after another, each lasting `dur`.
class KinetoBuilder {
 public:
  struct Arg {
    Arg(std::vector<int64_t> dims_, std::string type_ = "c10::BFloat16", std::vector<int64_t> strides_ = {})
        : dims(std::move(dims_)), type(std::move(type_)), strides(std::move(strides_)) {}
    std::vector<int64_t> dims;
    std::string type;
    std::vector<int64_t> strides;  // empty: dense row-major
  };

  KinetoBuilder& op(const std::string& name, std::vector<Arg> args, double dur = 2.0) {
    json dims = json::array(), types = json::array(), strides = json::array();
    for (Arg& arg : args) {
      if (arg.strides.empty()) {
        arg.strides.assign(arg.dims.size(), 1);
        for (size_t axis = arg.dims.size(); axis-- > 1;) arg.strides[axis - 1] = arg.strides[axis] * arg.dims[axis];
      }
      dims.push_back(arg.dims);
      types.push_back(arg.type);
      strides.push_back(arg.strides);
    }
    json args_json = {{"External id", ++external_}, {"Input Dims", dims}, {"Input type", types}};
    if (strides_) args_json["Input Strides"] = strides;
    events_.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", name}, {"pid", 7}, {"tid", 7}, {"ts", now_}, {"dur", dur},
                       {"args", args_json}});
    now_ += dur + 1.0;
    return *this;
  }
  KinetoBuilder& annotation(const std::string& name, double begin, double end) {
    events_.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", name}, {"pid", 7}, {"tid", 7}, {"ts", begin},
                       {"dur", end - begin}, {"args", json::object()}});
    return *this;
  }
  KinetoBuilder& runtime(const std::string& name, double dur = 1.0) {
    events_.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", name}, {"pid", 7}, {"tid", 7}, {"ts", now_},
                       {"dur", dur}, {"args", json::object()}});
    now_ += dur + 1.0;
    return *this;
  }
  // A read the way torch records `if tensor:` — aten::is_nonzero → aten::item →
  // aten::_local_scalar_dense — and, with `synchronize`, the cudaStreamSynchronize under it.
  KinetoBuilder& read(bool synchronize = false) {
    const double begin = now_;
    const double dur = synchronize ? 9.0 : 5.0;
    events_.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::is_nonzero"}, {"pid", 7}, {"tid", 7}, {"ts", begin},
                       {"dur", dur}, {"args", {{"Input Dims", {json::array()}}, {"Input type", {"bool"}}}}});
    events_.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::item"}, {"pid", 7}, {"tid", 7}, {"ts", begin + 0.5},
                       {"dur", dur - 1}, {"args", {{"Input Dims", {json::array()}}, {"Input type", {"bool"}}}}});
    events_.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::_local_scalar_dense"}, {"pid", 7}, {"tid", 7},
                       {"ts", begin + 1}, {"dur", dur - 2}, {"args", {{"Input Dims", {json::array()}}, {"Input type", {"bool"}}}}});
    if (synchronize) {
      events_.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaStreamSynchronize"}, {"pid", 7}, {"tid", 7},
                         {"ts", begin + 2}, {"dur", 4}, {"args", json::object()}});
    }
    now_ += dur + 1.0;
    return *this;
  }
  double now() const { return now_; }
  void without_strides() { strides_ = false; }
  std::string text() const { return json{{"schemaVersion", 1}, {"traceEvents", events_}}.dump(); }

  // One forward of a 2-layer decoder with fused attention (scaled_dot_product_attention):
  // `tokens` new tokens per sequence of `batch`, attention over `positions`.
  // `embedding_range`: a record_function range around the embedding alone (not a pass).
  using PassOptions = KinetoPassOptions;
  void pass(int64_t batch, int64_t tokens, int64_t positions, const std::vector<int64_t>& key_strides = {},
            bool embedding_range = false, PassOptions options = {}) {
    const int64_t hidden = 32, heads = 2, head = 16, vocab = 50;
    if (embedding_range) annotation("embed", now_ - 0.1, now_ + 2.1);
    op("aten::embedding", {{{vocab, hidden}}, {{batch, tokens}, "long int"}});
    if (options.encoder_tables) {
      op("aten::embedding", {{{2, hidden}}, {{batch, tokens}, "long int"}});
      op("aten::embedding", {{{64, hidden}}, {{batch, tokens}, "long int"}});
    }
    for (int layer = 0; layer < 2; ++layer) {
      op("aten::rsqrt", {{{batch, tokens, 1}}});
      for (int projection = 0; projection < 3; ++projection) op("aten::linear", {{{batch, tokens, hidden}}, {{hidden, hidden}}});
      if (options.copy_keys) {  // K as [batch, positions, heads, head] transposed, made dense
        op("aten::contiguous", {{{batch, heads, positions, head}, "c10::BFloat16", {positions * heads * head, head, heads * head, 1}}});
      }
      op("aten::scaled_dot_product_attention", {{{batch, heads, tokens, head}},
                                                {{batch, heads, positions, head}, "c10::BFloat16", key_strides},
                                                {{batch, heads, positions, head}}});
      op("aten::linear", {{{batch, tokens, hidden}}, {{hidden, hidden}}});
      if (options.read_in_layers) read(true);
    }
    if (!options.head) return;
    op("aten::linear", {{{batch, hidden}}, {{vocab, hidden}}});
    op("aten::argmax", {{{batch, vocab}, "float"}, {{}, "Scalar"}});
  }

 private:
  json events_ = json::array();
  double now_ = 10.0;
  int external_ = 0;
  bool strides_ = true;
};

Diagnosis diagnose_text(const TempDir& dir, const std::string& text) {
  return diagnose(read_trace_file(dir.write("trace.json", text)));
}

}  // namespace

TEST_CASE("torch diagnosis: scaled_dot_product_attention and recorded strides (torch 2.x)", "[torch][diagnosis]") {
  const TempDir dir;
  const int64_t prompt = 6, steps = 5, capacity = 32;
  // A position-major cache [batch, capacity, heads, head] read as [batch, heads, positions, head]:
  // a head's positions sit heads * head elements apart, not head.
  const std::vector<int64_t> position_major = {capacity * 2 * 16, 16, 2 * 16, 1};
  for (const bool strided : {false, true}) {
    KinetoBuilder trace;
    trace.pass(2, prompt, prompt);
    for (int step = 0; step < steps; ++step) trace.pass(2, 1, prompt + 1 + step, strided ? position_major : std::vector<int64_t>{});
    const Diagnosis diagnosis = diagnose_text(dir, trace.text());
    INFO(format_diagnosis(diagnosis));
    CHECK(diagnosis.shape.layers == 2);
    CHECK(diagnosis.shape.decode_steps == steps);
    CHECK(diagnosis.shape.requests_per_run == 2);
    if (!strided) {
      CHECK(diagnosis.bugs.empty());
    } else {
      REQUIRE(names_of(diagnosis) == std::vector<std::string>{"non_contiguous"});
      CHECK(diagnosis.bugs.front().variant == "strided");
      CHECK(diagnosis.bugs.front().evidence.find("strides [1024, 16, 32, 1]") != std::string::npos);
    }
  }
}

TEST_CASE("torch diagnosis: without ranges, groups are cut where the key length stops growing", "[torch][diagnosis]") {
  const TempDir dir;
  KinetoBuilder trace;
  for (int request = 0; request < 3; ++request) {  // three requests of one sequence, one after another
    trace.pass(1, 4, 4);
    for (int step = 0; step < 4; ++step) trace.pass(1, 1, 5 + step);
  }
  const Diagnosis diagnosis = diagnose_text(dir, trace.text());
  INFO(format_diagnosis(diagnosis));
  CHECK(diagnosis.shape.groups_per_run == 3);
  CHECK(diagnosis.shape.decode_steps == 12);
  CHECK(names_of(diagnosis) == std::vector<std::string>{"sequential_generation"});
}

TEST_CASE("torch diagnosis: ranges bound passes and groups whatever their names, ProfilerStep ranges split runs",
          "[torch][diagnosis]") {
  const TempDir dir;
  KinetoBuilder trace;
  for (int run = 0; run < 2; ++run) {
    const double run_begin = trace.now() - 0.5;
    for (int request = 0; request < 2; ++request) {
      const double group_begin = trace.now() - 0.4;
      trace.pass(1, 4, 4, {}, true);
      for (int step = 0; step < 3; ++step) {
        const double begin = trace.now() - 0.3;
        trace.pass(1, 1, 5 + step, {}, true);
        trace.op("aten::_local_scalar_dense", {{{}, "long int"}});  // an .item()
        trace.annotation("tick " + std::to_string(step), begin, trace.now() - 0.2);
      }
      trace.annotation("request", group_begin, trace.now() - 0.1);
    }
    trace.annotation("ProfilerStep#" + std::to_string(run), run_begin, trace.now());
  }
  const Diagnosis diagnosis = diagnose_text(dir, trace.text());
  INFO(format_diagnosis(diagnosis));
  CHECK(diagnosis.shape.runs == 2);
  CHECK(diagnosis.shape.groups_per_run == 2);
  CHECK(diagnosis.shape.decode_steps == 12);
  CHECK(names_of(diagnosis) == std::vector<std::string>{"host_sync", "sequential_generation"});
  CHECK_FALSE(any_line_contains(diagnosis.limits, "no record_function ranges"));
}

TEST_CASE("torch diagnosis: bad input is refused with the file and the event", "[torch][diagnosis]") {
  const TempDir dir;
  auto problem = [&](const std::string& text) -> std::string {
    try {
      diagnose(read_trace_file(dir.write("bad.json", text)));
    } catch (const InputError& error) {
      return error.what();
    }
    return "";
  };
  CHECK_THAT(problem(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": "1", "dur": 2}]})"),
             Catch::Contains("bad.json:1: traceEvents[0].ts: expected a number"));
  CHECK_THAT(problem("{\"traceEvents\": [\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"ts\": 1, \"dur\": 2},\n"
                     "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"ts\": 1}\n]}"),
             Catch::Contains("bad.json:3: traceEvents[1].dur: missing"));  // the line of the bad event
  CHECK_THAT(problem(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2, "args": {"Input Dims": 3}}]})"),
             Catch::Contains("traceEvents[0].args.Input Dims: expected a list"));
  CHECK_THAT(problem(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}, )"),
             Catch::Contains("not valid JSON"));
  CHECK_THAT(problem(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": -2}]})"),
             Catch::Contains("traceEvents[0].dur: expected a duration >= 0"));
  CHECK_THAT(problem(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2, "args": []}]})"),
             Catch::Contains("traceEvents[0].args: expected an object"));
  CHECK_THAT(problem(R"({"traceEvents": [{"ph": "X", "cat": "gpu_op", "name": "k", "ts": 1, "dur": 2}]})"),
             Catch::Contains("or by torch.profiler"));
  // A gzip stream cut short.
  KinetoBuilder one_op;
  one_op.op("aten::mm", {{{4, 4}}, {{4, 4}}});
  const std::string text = one_op.text();
  std::string compressed(compressBound(static_cast<uLong>(text.size())) + 64, '\0');
  z_stream stream{};
  REQUIRE(deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(compressed.data());
  stream.avail_out = static_cast<uInt>(compressed.size());
  REQUIRE(deflate(&stream, Z_FINISH) == Z_STREAM_END);
  compressed.resize(stream.total_out);
  deflateEnd(&stream);
  CHECK(problem(compressed).empty());  // the whole stream reads (and holds no passes)
  CHECK_THAT(problem(compressed.substr(0, compressed.size() / 2)), Catch::Contains("not a valid gzip file"));
}

TEST_CASE("torch diagnosis: a trace with no forward pass says so", "[torch][diagnosis]") {
  const TempDir dir;
  KinetoBuilder trace;
  trace.op("aten::mm", {{{4, 4}}, {{4, 4}}});
  const Diagnosis diagnosis = diagnose_text(dir, trace.text());
  CHECK(diagnosis.bugs.empty());
  CHECK_FALSE(diagnosis.diagnosed);
  CHECK(diagnosis.not_diagnosed.find("no forward pass found") != std::string::npos);
  CHECK(to_json(diagnosis)["diagnosed"] == false);
  CHECK(format_diagnosis(diagnosis).find("no bugs found") == std::string::npos);
  CHECK(any_line_contains(diagnosis.limits, "no top-level aten::embedding"));
}

TEST_CASE("torch diagnosis: no generate loop, no diagnosis — and the reason", "[torch][diagnosis]") {
  const TempDir dir;
  using Options = KinetoBuilder::PassOptions;
  SECTION("an encoder: three embedding tables before the first projection are one pass, no lm_head") {
    KinetoBuilder trace;
    trace.pass(1, 141, 141, {}, false, Options{false, false, false, true});
    const Diagnosis diagnosis = diagnose_text(dir, trace.text());
    INFO(format_diagnosis(diagnosis));
    CHECK_FALSE(diagnosis.diagnosed);
    CHECK(diagnosis.not_diagnosed.find("no lm_head") != std::string::npos);
    CHECK(diagnosis.bugs.empty());
    CHECK(diagnosis.checked.empty());
    CHECK(format_diagnosis(diagnosis).find("not diagnosed: ") != std::string::npos);
    CHECK(format_diagnosis(diagnosis).find("no bugs found") == std::string::npos);
    CHECK(format_diagnosis(diagnosis).find("captured graph") == std::string::npos);
    const json document = to_json(diagnosis);
    CHECK(document["diagnosed"] == false);
    CHECK(document["not_diagnosed"].get<std::string>().find("no lm_head") != std::string::npos);
  }
  SECTION("one forward with a head: a single pass is not a loop; syncs inside its layers are a note") {
    KinetoBuilder trace;
    trace.runtime("cudaLaunchKernel");
    trace.pass(16, 559, 559, {}, false, Options{true, true, true, false});
    const Diagnosis diagnosis = diagnose_text(dir, trace.text());
    INFO(format_diagnosis(diagnosis));
    CHECK_FALSE(diagnosis.diagnosed);
    CHECK(diagnosis.not_diagnosed.find("a single forward pass") != std::string::npos);
    CHECK(diagnosis.bugs.empty());
    CHECK(diagnosis.shape.backend == "cuda");  // runtime calls without kernel events: still a GPU trace
    CHECK(any_line_contains(diagnosis.limits, "2 of them inside the layers"));
    CHECK(any_line_contains(diagnosis.limits, "aten::is_nonzero"));
  }
  SECTION("repeated forwards that do not continue a sequence are not a loop") {
    KinetoBuilder trace;
    for (int repeat = 0; repeat < 3; ++repeat) trace.pass(4, 32, 32);
    const Diagnosis diagnosis = diagnose_text(dir, trace.text());
    INFO(format_diagnosis(diagnosis));
    CHECK_FALSE(diagnosis.diagnosed);
    CHECK(diagnosis.not_diagnosed.find("none continuing") != std::string::npos);
  }
}

TEST_CASE("torch diagnosis: one bug never implies another", "[torch][diagnosis]") {
  const TempDir dir;
  using Options = KinetoBuilder::PassOptions;
  SECTION("copies of fresh projections in a loop without a cache are no_kv_cache alone") {
    KinetoBuilder trace;
    for (int64_t tokens = 6; tokens < 11; ++tokens) trace.pass(2, tokens, tokens, {}, false, Options{true});
    const Diagnosis diagnosis = diagnose_text(dir, trace.text());
    INFO(format_diagnosis(diagnosis));
    CHECK(names_of(diagnosis) == std::vector<std::string>{"no_kv_cache"});
    CHECK(any_line_contains(diagnosis.checked, "no cache to copy"));
  }
  SECTION("the same copies of a cache are non_contiguous, growing with it") {
    KinetoBuilder trace;
    trace.pass(2, 6, 6, {}, false, Options{true});
    for (int step = 0; step < 4; ++step) trace.pass(2, 1, 7 + step, {}, false, Options{true});
    const Diagnosis diagnosis = diagnose_text(dir, trace.text());
    INFO(format_diagnosis(diagnosis));
    REQUIRE(names_of(diagnosis) == std::vector<std::string>{"non_contiguous"});
    CHECK(diagnosis.bugs.front().evidence.find("1 copy per layer") != std::string::npos);
    CHECK(diagnosis.bugs.front().evidence.find("growing with the cache") != std::string::npos);
  }
  SECTION("one request at batch 1 is not sequential generation, with or without ranges") {
    KinetoBuilder trace;
    trace.pass(1, 4, 4);
    for (int step = 0; step < 4; ++step) trace.pass(1, 1, 5 + step);
    const Diagnosis diagnosis = diagnose_text(dir, trace.text());
    INFO(format_diagnosis(diagnosis));
    CHECK(diagnosis.diagnosed);
    CHECK(diagnosis.bugs.empty());
  }
}

TEST_CASE("torch diagnosis: a decode step replayed as a graph is read as one, and only then", "[torch][diagnosis]") {
  const TempDir dir;
  KinetoBuilder trace;
  const double begin = trace.now() - 0.5;
  trace.runtime("hipGraphLaunch");
  trace.annotation("step[DECODE bs=4]", begin, trace.now());
  trace.op("aten::argmax", {{{4, 151936}, "float"}, {{}, "Scalar"}});
  const Diagnosis diagnosis = diagnose_text(dir, trace.text());
  INFO(format_diagnosis(diagnosis));
  CHECK(diagnosis.diagnosed);
  CHECK(diagnosis.bugs.empty());
  CHECK(diagnosis.shape.backend == "rocm");
  CHECK(diagnosis.shape.decode_steps == 1);
  CHECK(any_line_contains(diagnosis.checked, "replay a captured graph"));
  CHECK(any_line_contains(diagnosis.not_checked, "non_contiguous"));
  CHECK(any_line_contains(diagnosis.not_checked, "fp32_ops"));
  CHECK(format_diagnosis(diagnosis).find("no bugs found by the") != std::string::npos);
}

TEST_CASE("torch diagnosis: a host sync read the way torch records it, per layer, on a GPU", "[torch][diagnosis]") {
  const TempDir dir;
  using Options = KinetoBuilder::PassOptions;
  KinetoBuilder trace;
  trace.pass(2, 4, 4, {}, false, Options{false, true});
  for (int step = 0; step < 4; ++step) trace.pass(2, 1, 5 + step, {}, false, Options{false, true});
  const Diagnosis diagnosis = diagnose_text(dir, trace.text());
  INFO(format_diagnosis(diagnosis));
  REQUIRE(names_of(diagnosis) == std::vector<std::string>{"host_sync"});
  CHECK(diagnosis.bugs.front().variant == "layer");
}

TEST_CASE("torch diagnosis: real traces recorded by others — no false alarm, and the reason where no loop",
          "[torch][diagnosis][real]") {
  const std::filesystem::path folder = std::filesystem::path(DECODELAB_SOURCE_DIR) / "tests" / "data" / "real" / "torch";
  std::ifstream file(folder / "expected.json");
  REQUIRE(file);
  const json cases = json::parse(file)["cases"];
  REQUIRE(cases.size() >= 6);
  for (const json& entry : cases) {
    const Diagnosis diagnosis = diagnose(read_trace_file(folder / entry["file"].get<std::string>()));
    INFO(entry["file"].get<std::string>() << "\n" << format_diagnosis(diagnosis));
    CHECK(diagnosis.diagnosed == entry["diagnosed"].get<bool>());
    CHECK(diagnosis.bugs.empty());
    CHECK(format_diagnosis(diagnosis).find("no bugs found\n") == std::string::npos);  // never a clean bill unexamined
    if (entry.contains("reason")) CHECK(diagnosis.not_diagnosed.find(entry["reason"].get<std::string>()) != std::string::npos);
    if (entry.contains("backend")) CHECK(diagnosis.shape.backend == entry["backend"].get<std::string>());
  }
}

TEST_CASE("torch diagnosis: the streaming reader reads what the document reader reads", "[torch][diagnosis]") {
  const std::filesystem::path trace_file = data_dir() / "example-tiny-copy+fp32.json.gz";
  const std::optional<TorchTrace> streamed = stream_torch_trace(trace_file);
  REQUIRE(streamed);
  const TorchTrace parsed = parse_torch_trace(parse_trace_json(read_trace_text(trace_file), trace_file.string()),
                                              trace_file.string());
  REQUIRE(streamed->host_events.size() == parsed.host_events.size());
  CHECK(streamed->device_events.size() == parsed.device_events.size());
  CHECK(streamed->shapes == parsed.shapes);
  CHECK(streamed->strides == parsed.strides);
  for (size_t i = 0; i < parsed.host_events.size(); ++i) {
    const TorchEvent &a = streamed->host_events[i], &b = parsed.host_events[i];
    REQUIRE(a.name == b.name);
    CHECK(a.begin_ns == b.begin_ns);
    CHECK(a.parent == b.parent);
    REQUIRE(a.inputs.size() == b.inputs.size());
    for (size_t k = 0; k < a.inputs.size(); ++k) {
      CHECK(a.inputs[k].describe() == b.inputs[k].describe());
      CHECK(a.inputs[k].strides == b.inputs[k].strides);
    }
  }
  // decodelab's own trace is not a torch trace: the streaming reader says so and leaves it.
  const TempDir dir;
  const auto own = dir.write("own.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}],
                                           "otherData": {"schema": "decodelab-trace"}})");
  CHECK_FALSE(stream_torch_trace(own));
}
