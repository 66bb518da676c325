// The CLI as people coming from llama-bench, nsys and torch.profiler use it, run as the
// built binary: "did you mean" for subcommands, scenario names and --only values; --only
// a,b and --only a b; integer ranges in errors; --resume with another selection merging
// (and refusing what it would have to replace); list's wording; progress lines on a
// stderr that is not a terminal; -o csv|json|jsonl rows; --top; threads, dtype and
// backend swept as lists; prefill tok/s. Runs use lab-tiny with a few tokens.
#include <catch2/catch.hpp>
#include <chrono>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "profiling/trace/csv_table.h"
#include "support/cli_runner.h"
#include "support/temp_dir.h"

using namespace decodelab::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const std::vector<std::string> kTiny = {
    "--backend", "cpu", "--threads", "1", "--set", "model=lab-tiny", "--set", "run={warmup: 0, repeats: 1}", "--set",
    "workload={requests: 2, batch_size: 2, prompt_tokens: 4, new_tokens: 4}"};

std::vector<std::string> with_tiny(std::vector<std::string> arguments) {
  arguments.insert(arguments.end(), kTiny.begin(), kTiny.end());
  return arguments;
}

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> rows;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

}  // namespace

TEST_CASE("cli: a mistyped subcommand, scenario or --only value gets a did-you-mean, exit 2", "[cli][usability]") {
  const CommandResult command = run_decodelab({"rn", "quickstart"});
  CHECK(command.exit_code == 2);
  CHECK_THAT(command.err, StartsWith("decodelab: error: unknown command 'rn' (did you mean 'run'?)") &&
                              Contains("run, list, compare, lab, sweep") && !Contains("run-point"));
  CHECK(command.out.empty());

  const CommandResult scenario = run_decodelab({"run", "quickstrat"});
  CHECK(scenario.exit_code == 2);
  CHECK_THAT(scenario.err, Contains("quickstrat") && Contains("no such scenario file") &&
                               Contains("(did you mean 'quickstart'?)"));
  const CommandResult nested = run_decodelab({"compare", "bugs/host_sinc"});
  CHECK(nested.exit_code == 2);
  CHECK_THAT(nested.err, Contains("(did you mean 'bugs/host_sync'?)"));

  const CommandResult only = run_decodelab({"lab", "--only", "host_sinc"});
  CHECK(only.exit_code == 2);
  CHECK_THAT(only.err, Contains("--only") && Contains("host_sinc") && Contains("(did you mean 'host_sync'?)") &&
                           Contains("fp32_ops, host_sync, no_kv_cache, non_contiguous, sequential_generation"));
}

TEST_CASE("cli: a mistyped option or device name gets a did-you-mean, exit 2", "[cli][usability]") {
  const CommandResult option = run_decodelab({"run", "quickstart", "--thread", "1"});
  CHECK(option.exit_code == 2);
  CHECK_THAT(option.err, StartsWith("decodelab: error: --thread is unknown (did you mean '--threads'?); see --help"));
  CHECK_THAT(option.err, !Contains("not expected"));  // CLI11's leftover words ("1 --thread") are not repeated
  CHECK(option.out.empty());
  const CommandResult device = run_decodelab({"roofline", "--device", "h20"});
  CHECK(device.exit_code == 2);
  CHECK_THAT(device.err, Contains("--device") && Contains("h20") && Contains("did you mean 'h200'?"));
  const CommandResult predict_on = run_decodelab({"lab", "--predict-on", "h20"});
  CHECK(predict_on.exit_code == 2);
  CHECK_THAT(predict_on.err, Contains("did you mean 'h200'?"));
  // The help says what 0 threads means.
  CHECK_THAT(run_decodelab({"run", "--help"}).out, Contains("0 = every core"));
}

TEST_CASE("cli: --only takes a,b and a b alike", "[cli][usability]") {
  // Both spellings reach the name check with both names (an unknown second name proves it).
  for (const std::vector<std::string>& arguments :
       {std::vector<std::string>{"lab", "--only", "fp32_ops", "no_such_bug"},
        std::vector<std::string>{"lab", "--only", "fp32_ops,no_such_bug"}}) {
    const CommandResult result = run_decodelab(arguments);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Contains("no_such_bug") && Contains("no lab scenario of that name"));
    CHECK_THAT(result.err, !Contains("was not expected"));
  }
}

TEST_CASE("cli: number options print their ranges in words", "[cli][usability]") {
  for (const char* command : {"run", "compare", "sweep", "predict"}) {
    const CommandResult result = run_decodelab({command, "quickstart", "--threads", "-1"});
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Contains("--threads") && Contains("expected an integer from 0 to 1024, got '-1'"));
    CHECK(result.err.size() < 200);  // no 300-digit double
    CHECK_THAT(result.err, StartsWith("decodelab: error: --threads: "));  // one line, like every input error
    CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  }
  const CommandResult fraction = run_decodelab({"lab", "--threads", "1.5"});
  CHECK(fraction.exit_code == 2);
  CHECK_THAT(fraction.err, Contains("expected an integer from 0 to 1024, got '1.5'"));
  const CommandResult top = run_decodelab({"run", "quickstart", "--top", "0"});
  CHECK(top.exit_code == 2);
  CHECK_THAT(top.err, Contains("expected an integer from 1 to 1000, got '0'"));
  const CommandResult repeats = run_decodelab({"roofline", "--repeats", "0"});
  CHECK(repeats.exit_code == 2);
  CHECK_THAT(repeats.err, Contains("expected an integer ≥ 1, got '0'"));
  // A number option says its range in words too, not CLI11's 300-digit double.
  const CommandResult tolerance = run_decodelab({"diff-logits", "a.npy", "b.npy", "--dtype", "fp16", "--tolerance", "-1"});
  CHECK(tolerance.exit_code == 2);
  CHECK_THAT(tolerance.err, Contains("--tolerance: expected a number > 0, got '-1'"));
  CHECK(tolerance.err.size() < 200);
  const CommandResult format = run_decodelab({"run", "quickstart", "-o", "xml"});
  CHECK(format.exit_code == 2);
  CHECK_THAT(format.err, Contains("xml"));
}

TEST_CASE("cli: list names the expected slowdown as the course text's, not a seed", "[cli][usability]") {
  const CommandResult result = run_decodelab({"list"});
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("expected slowdown (from the course text): 2-4x") &&
                             Contains("expected slowdown (from the course text): 100-1000x"));
  CHECK_THAT(result.out, !Contains("seed:"));
}

TEST_CASE("cli: run -o csv|json|jsonl prints its row on stdout, --top the ops, progress one line per repeat",
          "[cli][usability]") {
  const TempDir dir;
  const auto saved = dir.path() / "r.json";
  // run: json, with the row also saved by --json to compare with
  std::vector<std::string> arguments = with_tiny({"run", "quickstart", "-o", "json", "--json", saved.string()});
  arguments.insert(arguments.end(), {"--set", "run={warmup: 1, repeats: 2}"});  // after with_tiny's: it wins
  const CommandResult json = run_decodelab(arguments);
  INFO(json.err);
  REQUIRE(json.exit_code == 0);
  const nlohmann::json rows = nlohmann::json::parse(json.out);  // stdout holds the rows and nothing else
  REQUIRE(rows.is_array());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0] == read_json(saved));
  CHECK(rows[0]["metrics"]["prefill_tokens_per_s"].get<double>() > 0);
  CHECK(rows[0]["intervals"]["prefill_tokens_per_s"]["samples"] == 2);  // the row carries the intervals
  // progress: stderr is a file here, so one plain line per finished repeat, no carriage return
  CHECK_THAT(json.err, Contains("quickstart: warm-up 1/1 done\n") && Contains("quickstart: repeat 1/2 done (") &&
                           Contains("quickstart: repeat 2/2 done ("));
  CHECK(json.err.find('\r') == std::string::npos);
  CHECK(json.err.find('\x1b') == std::string::npos);

  // adaptive repeats: a line per repeat that ran, with the range and the interval so far
  std::vector<std::string> adaptive_arguments = with_tiny({"run", "quickstart", "-o", "json"});
  adaptive_arguments.insert(adaptive_arguments.end(),
                            {"--set", "run={warmup: 0, min_repeats: 2, max_repeats: 3, target_ci: 0.5}"});
  const CommandResult adaptive = run_decodelab(adaptive_arguments);
  INFO(adaptive.err);
  REQUIRE(adaptive.exit_code == 0);
  const int repeats_run = nlohmann::json::parse(adaptive.out)[0]["run"]["repeats_run"].get<int>();
  CHECK((repeats_run == 2 || repeats_run == 3));
  for (int i = 1; i <= 3; ++i) {
    const std::string line = "quickstart: repeat " + std::to_string(i) + " (2-3) done (";
    CHECK((adaptive.err.find(line) != std::string::npos) == (i <= repeats_run));
  }
  CHECK_THAT(adaptive.err, Contains(" so far)\n"));

  // --quiet silences progress, never an output asked for: -o jsonl still prints its row.
  const CommandResult jsonl = run_decodelab(with_tiny({"run", "quickstart", "-o", "jsonl", "--quiet"}));
  CHECK(json_lines(jsonl.out).size() == 1);
  CHECK(jsonl.err.empty());
  const CommandResult quiet_csv = run_decodelab(with_tiny({"run", "quickstart", "-o", "csv", "-q"}));
  CHECK(quiet_csv.out.find("decode_tokens_per_s") != std::string::npos);
  CHECK(quiet_csv.err.empty());
  const CommandResult quiet_table = run_decodelab(with_tiny({"run", "quickstart", "-q"}));
  CHECK(quiet_table.out.empty());  // the table is for people: -q drops it
  CHECK(quiet_table.err.empty());
  const CommandResult lines = run_decodelab(with_tiny({"run", "quickstart", "--output", "jsonl"}));
  REQUIRE(lines.exit_code == 0);
  const std::vector<nlohmann::json> parsed = json_lines(lines.out);
  REQUIRE(parsed.size() == 1);
  CHECK(parsed[0]["workload"]["new_tokens"] == 4);

  const CommandResult csv = run_decodelab(with_tiny({"run", "quickstart", "-o", "csv"}));
  REQUIRE(csv.exit_code == 0);
  std::vector<decodelab::CsvRecord> records = decodelab::parse_csv(csv.out, "stdout");
  std::erase_if(records, [](const decodelab::CsvRecord& record) { return record.blank(); });
  REQUIRE(records.size() == 2);
  const auto& header = records[0].fields;
  REQUIRE(records[1].fields.size() == header.size());
  for (const char* column : {"backend", "metrics.decode_tokens_per_s", "metrics.prefill_tokens_per_s",
                             "intervals.decode_tokens_per_s.low", "intervals.prefill_tokens_per_s.noisy",
                             "intervals.decode_tokens_per_s.samples", "run.repeats_run", "workload.batch_size",
                             "model.name"}) {
    INFO(column);
    CHECK(std::find(header.begin(), header.end(), column) != header.end());
  }
  const auto column = [&](const std::string& name) {
    return records[1].fields[static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin())];
  };
  CHECK(column("backend") == "cpu");
  CHECK(column("model.name") == "lab-tiny");
  CHECK(column("intervals.decode_tokens_per_s.samples") == "1");  // with_tiny: one repeat
  CHECK(column("intervals.decode_tokens_per_s.noisy") == "true");  // below 95%: noisy

  // --top: the table of ops by device time, on stdout beside the markdown row
  const CommandResult top = run_decodelab(with_tiny({"run", "quickstart", "--top", "3"}));
  INFO(top.err);
  REQUIRE(top.exit_code == 0);
  CHECK_THAT(top.out, Contains("| backend |") && Contains("prefill tok/s") && Contains("top ops by device time") &&
                          Contains("device total") && Contains("matmul"));
  const std::string table = top.out.substr(top.out.find("top ops by device time"));
  CHECK(std::count(table.begin(), table.end(), '\n') == 1 + 1 + 3);  // title, header, 3 ops
}

TEST_CASE("cli: lab --resume with another selection keeps every finished row and says what it reused",
          "[cli][usability]") {
  const TempDir dir;
  const auto json = dir.path() / "lab.json";
  // prepare: one bug's row saved
  const CommandResult first = run_decodelab(with_tiny({"lab", "--only", "host_sync", "--json", json.string()}));
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK_THAT(first.err, Contains("[1/1] host_sync: done, ") && Contains(" slowdown ") && Contains(" pairs"));
  const nlohmann::json saved = read_json(json);
  REQUIRE(saved.size() == 1);
  CHECK(saved[0].contains("intervals"));  // issue 14's fields, which a merge must keep as they are
  CHECK(saved[0].contains("headline"));

  // run: another bug resumed into the same file -> merged, the saved row kept as it was
  const CommandResult other = run_decodelab(
      with_tiny({"lab", "--only", "no_kv_cache", "--json", json.string(), "--resume", "-o", "jsonl"}));
  INFO(other.err);
  REQUIRE(other.exit_code == 0);
  CHECK_THAT(other.err, Contains("0 of 1 rows reused from " + json.string()) &&
                            Contains("1 other row in it kept (not part of this selection)"));
  REQUIRE(json_lines(other.out).size() == 1);  // -o jsonl: the selection's rows
  CHECK(json_lines(other.out)[0]["bug"] == "no_kv_cache");
  nlohmann::json merged = read_json(json);
  REQUIRE(merged.size() == 2);
  CHECK(merged[0]["bug"] == "no_kv_cache");
  CHECK(merged[1] == saved[0]);

  // both, resumed: nothing runs, both rows reused
  const CommandResult both = run_decodelab(
      with_tiny({"lab", "--only", "host_sync,no_kv_cache", "--json", json.string(), "--resume"}));
  REQUIRE(both.exit_code == 0);
  CHECK_THAT(both.err, Contains("2 of 2 rows reused") && Contains("reused from"));
  CHECK_THAT(both.err, !Contains("repeat"));
  CHECK(read_json(json).size() == 2);

  // a saved bug under other settings: refused before any work, the file untouched
  const std::string before = read_text_file(json);
  std::vector<std::string> changed = with_tiny({"lab", "--only", "host_sync", "--json", json.string(), "--resume"});
  changed.insert(changed.end(), {"--set", "workload.new_tokens=5"});
  const CommandResult refused = run_decodelab(changed);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Contains(json.string()) && Contains("finished row for host_sync") &&
                              Contains("another --json file"));
  CHECK(read_text_file(json) == before);
}

TEST_CASE("cli: lab shares its time budget among the bugs still to run", "[cli][usability]") {
  const TempDir dir;
  const auto json = dir.path() / "lab.json";
  std::vector<std::string> arguments =
      with_tiny({"lab", "--only", "host_sync,no_kv_cache", "--json", json.string(), "--max-seconds", "40"});
  arguments.insert(arguments.end(), {"--set", "run={warmup: 0, repeats: 2}"});
  const CommandResult lab = run_decodelab(arguments);
  INFO(lab.err);
  REQUIRE(lab.exit_code == 0);
  const nlohmann::json rows = read_json(json);
  REQUIRE(rows.size() == 2);
  REQUIRE(rows[0]["bug"] == "host_sync");
  // the first bug's pairs get half the time left when they start; two tiny pairs leave most of it,
  // which goes to the second bug
  const double first = rows[0]["budget_seconds"].get<double>(), second = rows[1]["budget_seconds"].get<double>();
  CHECK(first <= 20.0);
  CHECK(rows[0]["timed_seconds"].get<double>() < first);
  CHECK(second > first + 5.0);
  CHECK(second <= 40.0);
  CHECK_THAT(lab.err, Contains("[2/2] no_kv_cache: done, ") && Contains(" pairs in "));

  // a budget is a positive number of seconds
  const CommandResult zero = run_decodelab(with_tiny({"lab", "--only", "host_sync", "--max-seconds", "0"}));
  CHECK(zero.exit_code == 2);
  CHECK_THAT(zero.err, Contains("--max-seconds"));
}

TEST_CASE("cli: a budget is a ceiling: lab --max-seconds N ends within N plus a few seconds", "[cli][usability]") {
  const TempDir dir;
  const auto json = dir.path() / "lab.json";
  // Pairs far beyond what the budget allows (min_repeats used to run whatever the time), each
  // slowed by the emulated dispatch cost: only the budget can end them.
  std::vector<std::string> arguments =
      with_tiny({"lab", "--only", "host_sync,no_kv_cache", "--json", json.string(), "--max-seconds", "8"});
  arguments.insert(arguments.end(), {"--set", "run={warmup: 1, min_repeats: 400, max_repeats: 400}", "--set",
                                     "workload.host_overhead_us=50"});
  const auto begin = std::chrono::steady_clock::now();
  const CommandResult lab = run_decodelab(arguments);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  INFO(lab.err);
  REQUIRE(lab.exit_code == 0);
  // The process's own start and end (loading every scenario, writing the file) sit outside the
  // budget's clock: a few seconds on a busy machine.
  CHECK(seconds < 8 + 5);
  CHECK_THAT(lab.err, Contains("lab: 2 bugs within 8 s") && Contains("of the lab's budget left"));
  const nlohmann::json rows = read_json(json);
  REQUIRE(rows.size() == 2);
  for (const nlohmann::json& row : rows) {
    CHECK(row["stopped_because"] == "max_seconds reached");
    CHECK(row["pairs"].get<int>() < 400);
    CHECK(row["timed_seconds"].get<double>() <= row["budget_seconds"].get<double>() + 0.5);
  }

  // compare alone: run.max_seconds covers its warm-ups and pairs, min_repeats included.
  const auto compare_json = dir.path() / "compare.json";
  std::vector<std::string> compare_arguments = with_tiny({"compare", "host_sync", "--json", compare_json.string()});
  compare_arguments.insert(compare_arguments.end(),
                           {"--set", "run={warmup: 1, min_repeats: 400, max_repeats: 400, max_seconds: 3}", "--set",
                            "workload.host_overhead_us=50"});
  const CommandResult compare = run_decodelab(compare_arguments);
  INFO(compare.err);
  REQUIRE(compare.exit_code == 0);
  const nlohmann::json compared = read_json(compare_json);
  CHECK(compared["pairs"].get<int>() < 400);
  CHECK(compared["timed_seconds"].get<double>() <= 3.0 + 0.5);
}

TEST_CASE("cli: sweep takes threads and dtype lists, and --threads 1,2 on the command line", "[cli][usability]") {
  const TempDir dir;
  const auto scenario = dir.write("settings.yaml",
                                  "model: lab-tiny\n"
                                  "dtype: [fp32, bf16]\n"
                                  "backend: cpu\n"
                                  "workload: {requests: 2, batch_size: 2, prompt_tokens: 4, new_tokens: 3}\n"
                                  "run: {warmup: 0, repeats: 1}\n");
  const auto json = dir.path() / "sweep.json";
  const CommandResult result =
      run_decodelab({"sweep", scenario.string(), "--threads", "1,2", "--json", json.string(), "-o", "jsonl"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const std::vector<nlohmann::json> rows = json_lines(result.out);
  REQUIRE(rows.size() == 4);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"1", "fp32"}, {"1", "bf16"}, {"2", "fp32"}, {"2", "bf16"}};
  for (size_t i = 0; i < rows.size(); ++i) {
    CHECK(rows[i]["swept"]["threads"] == expected[i].first);
    CHECK(rows[i]["swept"]["dtype"] == expected[i].second);
    CHECK(rows[i]["scenario"]["threads"] == std::stoi(expected[i].first));
    CHECK(rows[i]["model"]["dtype"] == expected[i].second);
    CHECK(rows[i]["metrics"]["prefill_tokens_per_s"].get<double>() > 0);
  }
  CHECK(read_json(json) == nlohmann::json(rows));
  // one progress line per point, no carriage return
  CHECK_THAT(result.err, Contains("[1/4] threads=1 dtype=fp32: done, decode ") &&
                             Contains("[4/4] threads=2 dtype=bf16: done, decode "));
  CHECK(result.err.find('\r') == std::string::npos);

  // the markdown table has the swept settings' columns and the prefill figure
  const CommandResult table =
      run_decodelab({"sweep", scenario.string(), "--json", json.string(), "--resume", "--threads", "1,2"});
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.out, StartsWith("| threads | dtype | backend |") && Contains("prefill tok/s"));
  CHECK_THAT(table.err, Contains("4 of 4 rows reused"));

  const CommandResult absent = run_decodelab({"sweep", scenario.string(), "--backend", "cpu,tpu"});
  CHECK(absent.exit_code == 2);
  CHECK_THAT(absent.err, Contains("tpu"));
}

TEST_CASE("cli: compare -o json is the comparison, parseable, with both sides", "[cli][usability]") {
  const CommandResult result = run_decodelab(with_tiny({"compare", "bugs/host_sync", "-o", "json", "--top", "2"}));
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const nlohmann::json rows = nlohmann::json::parse(result.out);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].contains("decode_slowdown"));
  CHECK(rows[0].contains("end_to_end_slowdown"));
  CHECK(rows[0].contains("headline"));
  // --top beside machine-readable rows goes to stderr, one table per side
  CHECK_THAT(result.err, Contains("fixed: top ops by device time") && Contains("buggy: top ops by device time"));
}
