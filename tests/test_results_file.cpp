// Row-by-row results files: each added row is on disk at once, marked incomplete until
// finish(); --resume loads only a results file of the same command and matches rows on
// every field of a key; a lab row survives the JSON round trip a resumed lab relies on.
#include <catch2/catch.hpp>

#include "engine/base/errors.h"
#include "lab/report/lab_table.h"
#include "lab/run/results_file.h"
#include "support/cli_runner.h"
#include "support/temp_dir.h"

using namespace decodelab;
using Catch::Matchers::Contains;
using decodelab::testing::TempDir;

namespace {

nlohmann::json on_disk(const std::filesystem::path& file) {
  return nlohmann::json::parse(decodelab::testing::read_text_file(file));
}

}  // namespace

TEST_CASE("every added row is on disk at once, complete only after finish", "[results_file]") {
  const TempDir dir;
  const auto path = dir.path() / "results.json";
  ResultsFile results(path, "sweep");
  CHECK_FALSE(std::filesystem::exists(path));  // nothing completed, nothing written
  results.add({{"swept", {{"batch_size", "1"}}}, {"value", 1.5}});
  nlohmann::json document = on_disk(path);
  CHECK(document["schema_version"] == kResultsFileSchemaVersion);
  CHECK(document["command"] == "sweep");
  CHECK(document["complete"] == false);
  CHECK(document["rows"].size() == 1);
  results.add({{"swept", {{"batch_size", "2"}}}, {"value", 2.5}});
  CHECK(on_disk(path)["rows"].size() == 2);
  results.finish();
  document = on_disk(path);
  REQUIRE(document.is_array());  // finished: the plain list of rows
  CHECK(document[1]["value"] == 2.5);
  CHECK(dir.entry_count() == 1);  // no temporaries left beside it
}

TEST_CASE("resume matches a row on every field of the key", "[results_file]") {
  const TempDir dir;
  const auto path = dir.path() / "results.json";
  {
    ResultsFile first(path, "sweep");
    first.add({{"scenario", {{"name", "a"}}}, {"swept", {{"batch_size", "1"}}}, {"backend", "cpu"}, {"value", 1}});
    first.add({{"scenario", {{"name", "a"}}}, {"swept", {{"batch_size", "2"}}}, {"backend", "cpu"}, {"value", 2}});
  }
  ResultsFile resumed(path, "sweep");
  CHECK(resumed.load_existing() == 2);
  CHECK(resumed.rows().empty());  // loaded rows are candidates until reused
  const auto match = resumed.previous({{"scenario", {{"name", "a"}}}, {"swept", {{"batch_size", "2"}}}, {"backend", "cpu"}});
  REQUIRE(match);
  CHECK((*match)["value"] == 2);
  CHECK_FALSE(resumed.previous({{"scenario", {{"name", "a"}}}, {"swept", {{"batch_size", "2"}}}, {"backend", "cuda"}}));
  CHECK_FALSE(resumed.previous({{"scenario", {{"name", "b"}}}, {"swept", {{"batch_size", "1"}}}, {"backend", "cpu"}}));
  CHECK_FALSE(resumed.previous({{"missing_field", 1}}));

  ResultsFile absent(dir.path() / "absent.json", "sweep");
  CHECK(absent.load_existing() == 0);
}

TEST_CASE("resume with another selection merges: rows it does not reuse are kept, never dropped", "[results_file]") {
  // prepare: a finished file of three rows
  const TempDir dir;
  const auto path = dir.path() / "lab.json";
  {
    ResultsFile first(path, "lab");
    for (const char* bug : {"a", "b", "c"}) first.add({{"bug", bug}, {"value", std::string(bug) + "1"}});
    first.finish();
  }
  // run: a resumed selection of b (reused) and d (new)
  ResultsFile resumed(path, "lab");
  REQUIRE(resumed.load_existing() == 3);
  const auto reused = resumed.take({{"bug", "b"}});
  REQUIRE(reused);
  CHECK_FALSE(resumed.take({{"bug", "b"}}));  // a row is reused once
  resumed.add(*reused);
  // verify: while running, the file already holds every saved row
  nlohmann::json document = on_disk(path);
  REQUIRE(document["rows"].size() == 3);
  CHECK(document["rows"][0]["bug"] == "b");
  CHECK(document["rows"][1]["bug"] == "a");
  CHECK(document["rows"][2]["bug"] == "c");
  resumed.add({{"bug", "d"}, {"value", "d2"}});
  resumed.finish();
  document = on_disk(path);
  REQUIRE(document.is_array());
  REQUIRE(document.size() == 4);  // the selection's rows in work order, then the kept ones
  CHECK(document[0]["bug"] == "b");
  CHECK(document[1]["bug"] == "d");
  CHECK(document[2] == nlohmann::json{{"bug", "a"}, {"value", "a1"}});
  CHECK(document[3]["bug"] == "c");
  CHECK(resumed.rows().size() == 2);  // the command's own rows
  CHECK(resumed.reused() == 1);
  CHECK(resumed.kept() == 2);
  CHECK(resumed.resume_note(2) ==
        "1 of 2 rows reused from " + path.string() + "; 2 other rows in it kept (not part of this selection)");
}

TEST_CASE("resume refuses files that are not this command's results", "[results_file]") {
  const TempDir dir;
  struct Case {
    const char* contents;
    const char* problem;
  };
  const std::vector<Case> cases = {
      {"{\"rows\": [", "not valid JSON"},
      {"[{\"swept\": {}}]", "expected the results of `decodelab lab --json`"},
      {"{\"schema_version\": 1, \"command\": \"sweep\", \"complete\": true, \"rows\": []}",
       "expected the results of `decodelab lab --json`"},
      {"{\"schema_version\": 99, \"command\": \"lab\", \"complete\": true, \"rows\": []}", "schema_version"},
      {"{\"schema_version\": 1, \"command\": \"lab\", \"complete\": true, \"rows\": [3]}", "expected a list of objects"},
  };
  for (const Case& test_case : cases) {
    INFO(test_case.contents);
    const auto path = dir.write("lab.json", test_case.contents);
    ResultsFile results(path, "lab");
    CHECK_THROWS_AS(results.load_existing(), InputError);
    CHECK_THROWS_WITH(results.load_existing(), Contains(path.string()) && Contains(test_case.problem));
  }
}

TEST_CASE("a lab row survives its JSON round trip, a damaged one is an input error", "[results_file]") {
  auto estimate = [](double median) {
    Estimate e;
    e.median = median;
    e.low = 0.98 * median;
    e.high = 1.03 * median;
    e.samples = 8;
    e.confidence = 0.96;
    return e;
  };
  LabRow row;
  row.bug = "host_sync";
  row.bugs = "host_sync(per=layer)";
  row.fixed = {{"metrics", {{"decode_tokens_per_s", 812.5}}}, {"intervals", nlohmann::json::object()}};
  row.buggy = {{"metrics", {{"decode_tokens_per_s", 101.25}}}, {"intervals", nlohmann::json::object()}};
  row.fixed_tokens_per_s = estimate(812.5);
  row.buggy_tokens_per_s = estimate(101.25);
  row.end_to_end_slowdown = estimate(7.9);
  row.decode_slowdown = estimate(8.02);
  row.headline.metric = SlowdownMetric::Decode;
  row.headline.measured = row.decode_slowdown;
  row.headline.expected = ExpectedSlowdown{2, 1000, SlowdownMetric::Decode};
  row.headline.verdict = {VerdictKind::InRange, "the decode slowdown 8.02x lies within the expected 2-1000x"};
  row.pairs = 8;
  row.same_tokens = true;
  row.backend = "cpu";
  row.device = "a CPU";
  row.scenario = {{"name", "host_sync"}};
  const nlohmann::json json = lab_row_json(row);
  const LabRow back = lab_row_from_json(json, "lab.json");
  CHECK(lab_row_json(back) == json);
  CHECK(lab_table({back}) == lab_table({row}));

  nlohmann::json damaged = json;
  damaged["end_to_end_slowdown"] = "fast";
  CHECK_THROWS_WITH(lab_row_from_json(damaged, "lab.json"),
                    Contains("lab.json") && Contains("rows[].end_to_end_slowdown"));
}
