// Figures agree across surfaces, run as a user would: in the JSON of `run`, `compare`, `lab`
// and `sweep`, decode tok/s is the batch over the wall time per step and prefill tok/s the
// prompt tokens over the median prefill time; the HTML report's
// headline figures are the JSON's; a comparison's slowdowns are the medians of its pairs'
// ratios, recomputed from the repeats its JSON holds, and its attribution explains the
// difference of the medians its rows print; and every key and label
// those surfaces print, the predictions beside the measurements included, is defined in
// docs/metrics.md.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "profiling/report/report.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

using namespace decodelab::testing;
using Catch::Matchers::Contains;

namespace {

// Small workloads: these tests check consistency, not speed.
const std::vector<std::string> kTiny = {"--backend", "cpu", "--threads", "1", "--set", "run={warmup: 0, repeats: 6}"};

std::vector<std::string> with(std::vector<std::string> arguments, const std::vector<std::string>& more) {
  arguments.insert(arguments.end(), more.begin(), more.end());
  return arguments;
}

// tok/s = decode tokens per step × 1000 / wall ms per step, within 3%, and the tokens per
// step are the batch the run was given.
void check_tokens_per_s(const nlohmann::json& metrics, double batch) {
  INFO(metrics.dump());
  const double tokens_per_s = metrics.at("decode_tokens_per_s").get<double>();
  const double wall_ms = metrics.at("decode_wall_ms_per_step").get<double>();
  const double per_step = metrics.at("decode_tokens_per_step").get<double>();
  CHECK(per_step == Approx(batch));
  CHECK(tokens_per_s == Approx(per_step * 1000.0 / wall_ms).epsilon(0.03));
  CHECK(metrics.at("decode_busy_ms_per_step").get<double>() <= wall_ms * 1.0001);
}

// The median over the pairs of buggy / fixed time per token, recomputed from the repeats in
// pair order: {decode, end_to_end}.
std::pair<double, double> paired_slowdowns(const nlohmann::json& fixed_repeats, const nlohmann::json& buggy_repeats) {
  REQUIRE(fixed_repeats.size() == buggy_repeats.size());
  REQUIRE(!fixed_repeats.empty());
  std::vector<double> decode, end_to_end;
  auto per_token = [](const nlohmann::json& repeat) {
    return repeat.at("decode_ms").get<double>() / repeat.at("decode_tokens").get<double>();
  };
  for (size_t i = 0; i < fixed_repeats.size(); ++i) {
    decode.push_back(per_token(buggy_repeats[i]) / per_token(fixed_repeats[i]));
    end_to_end.push_back(buggy_repeats[i].at("end_to_end_s").get<double>() / fixed_repeats[i].at("end_to_end_s").get<double>());
  }
  auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t middle = values.size() / 2;
    return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
  };
  return {median(decode), median(end_to_end)};
}

// prefill tok/s = every request's prompt tokens × 1000 / the median of the repeats' prefill
// ms (an even count: the middle two averaged), its interval within the repeats' rates, and
// each repeat's own rate its prompt tokens over its own prefill time.
void check_prefill_tokens_per_s(const nlohmann::json& result) {
  INFO(result["metrics"].dump());
  const nlohmann::json& workload = result.at("workload");
  const double prompt_tokens =
      workload.at("requests").get<double>() * workload.at("prompt_tokens").get<double>();
  std::vector<double> prefill_ms;
  for (const nlohmann::json& repeat : result.at("repeats")) {
    prefill_ms.push_back(repeat.at("prefill_ms").get<double>());
    CHECK(repeat.at("prefill_tokens_per_s").get<double>() ==
          Approx(prompt_tokens * 1000.0 / prefill_ms.back()).epsilon(1e-9));
  }
  REQUIRE(!prefill_ms.empty());
  std::sort(prefill_ms.begin(), prefill_ms.end());
  const size_t n = prefill_ms.size();
  const double median_ms = n % 2 == 1 ? prefill_ms[n / 2] : (prefill_ms[n / 2 - 1] + prefill_ms[n / 2]) / 2;
  const double tokens_per_s = result.at("metrics").at("prefill_tokens_per_s").get<double>();
  CHECK(tokens_per_s == Approx(prompt_tokens * 1000.0 / median_ms).epsilon(1e-9));
  const nlohmann::json& interval = result.at("intervals").at("prefill_tokens_per_s");
  CHECK(interval.at("samples").get<size_t>() == n);
  CHECK(interval.at("median").get<double>() == tokens_per_s);
  CHECK(interval.at("low").get<double>() >= prompt_tokens * 1000.0 / prefill_ms.back() * (1 - 1e-9));
  CHECK(interval.at("high").get<double>() <= prompt_tokens * 1000.0 / prefill_ms.front() * (1 + 1e-9));
  CHECK(interval.at("low").get<double>() <= tokens_per_s);
  CHECK(tokens_per_s <= interval.at("high").get<double>());
}

const std::string& metrics_doc() {
  static const std::string text = read_text_file(std::filesystem::path(DECODELAB_SOURCE_DIR) / "docs" / "metrics.md");
  return text;
}

// A JSON key is documented as `key`; a printed label as plain text.
void check_documented_keys(const nlohmann::json& object, const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    INFO(where << "." << key);
    CHECK(metrics_doc().find("`" + key + "`") != std::string::npos);
  }
}

void check_documented_label(const std::string& label) {
  INFO(label);
  CHECK(metrics_doc().find(label) != std::string::npos);
}

// The cells of a markdown table's first line.
std::vector<std::string> header_cells(const std::string& output, const std::string& first_cell) {
  const size_t at = output.find("| " + first_cell + " |");
  REQUIRE(at != std::string::npos);
  std::string line = output.substr(at, output.find('\n', at) - at);
  std::vector<std::string> cells;
  std::stringstream stream(line);
  for (std::string cell; std::getline(stream, cell, '|');) {
    const size_t begin = cell.find_first_not_of(' '), end = cell.find_last_not_of(' ');
    if (begin != std::string::npos) cells.push_back(cell.substr(begin, end - begin + 1));
  }
  return cells;
}

// data-metric / data-median pairs and the printed value of each headline figure.
struct HtmlFigure {
  double median;
  std::string printed;
};
std::map<std::string, HtmlFigure> html_figures(const std::string& html) {
  std::map<std::string, HtmlFigure> figures;
  const std::regex pattern("data-metric=\"([a-z_]+)\" data-median=\"([^\"]+)\"><b>([^ <]+)");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), pattern); it != std::sregex_iterator(); ++it) {
    figures[(*it)[1]] = {std::stod((*it)[2]), (*it)[3]};
  }
  return figures;
}

}  // namespace

TEST_CASE("run: tok/s agrees with batch and wall time per step, and the report's figures are the JSON's", "[figures][cli]") {
  const TempDir dir;
  const auto json_file = dir.path() / "run.json";
  const auto report = dir.path() / "report";
  const CommandResult run = run_decodelab(with({"run", "quickstart"}, with(kTiny, {"--set", "workload.new_tokens=6",
                                                                                 "--json", json_file.string(), "--report",
                                                                                 report.string()})));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const nlohmann::json result = read_json(json_file);
  check_tokens_per_s(result["metrics"], 4);  // quickstart: 4 requests in one batch
  check_prefill_tokens_per_s(result);
  CHECK(result["run"]["repeats_run"] == 6);
  CHECK(result["intervals"]["decode_tokens_per_s"]["samples"] == 6);
  CHECK(result["machine"].contains("contended"));

  // The headline figures of report.html: the same medians, printed as the CLI row prints them.
  const auto figures = html_figures(read_text_file(report / "report.html"));
  REQUIRE(figures.size() == result["intervals"].size());
  for (const auto& [key, interval] : result["intervals"].items()) {
    INFO(key);
    REQUIRE(figures.count(key));
    CHECK(figures.at(key).median == Approx(result["metrics"][key].get<double>()).epsilon(1e-12));
    CHECK(std::stod(figures.at(key).printed) == Approx(interval["median"].get<double>()).epsilon(0.01).margin(0.006));
    CHECK_THAT(run.out, Contains("| " + figures.at(key).printed + " ±"));
  }
  const nlohmann::json stored = read_json(report / "result.json");
  for (const auto& [key, value] : stored["runs"][0]["metrics"].items()) CHECK(value == result["metrics"][key]);

  // Every figure of the JSON and every column of the row are in docs/metrics.md.
  check_documented_keys(result["metrics"], "metrics");
  check_documented_keys(result["intervals"]["decode_tokens_per_s"], "intervals.*");
  check_documented_keys(result["machine"], "machine");
  check_documented_keys(result["repeats"][0], "repeats[]");
  for (const std::string& label : header_cells(run.out, "backend")) check_documented_label(label);
  for (const nlohmann::json& group : stored["runs"][0]["result"]["categories"]) check_documented_keys(group, "categories[]");
  check_documented_keys(stored["runs"][0]["result"]["phases"][0]["timeline"], "timeline");
  const std::string csv_header = read_text_file(report / "ops.csv").substr(0, read_text_file(report / "ops.csv").find('\n'));
  std::stringstream columns(csv_header);
  for (std::string column; std::getline(columns, column, ',');) {
    if (column != "run" && column != "phase" && column != "category" && column != "precision") {
      INFO("ops.csv " << column);
      CHECK((metrics_doc().find("`" + column + "`") != std::string::npos ||
             metrics_doc().find("`" + column + "_") != std::string::npos));
    }
  }
}

TEST_CASE("compare: slowdowns are the pairs' medians, the attribution explains the rows' difference", "[figures][cli]") {
  const TempDir dir;
  const auto json_file = dir.path() / "compare.json";
  const auto report = dir.path() / "report";
  const CommandResult compare = run_decodelab(
      with({"compare", "fp32_ops"}, with(kTiny, {"--set", "model=lab-tiny", "--set", "workload.new_tokens=8", "--json",
                                                 json_file.string(), "--report", report.string()})));
  INFO(compare.err);
  REQUIRE(compare.exit_code == 0);
  const nlohmann::json result = read_json(json_file);
  const nlohmann::json& fixed = result["fixed"]["metrics"];
  const nlohmann::json& buggy = result["buggy"]["metrics"];
  check_tokens_per_s(fixed, 1);
  check_tokens_per_s(buggy, 1);
  CHECK(result["pairs"] == 6);

  // decode_slowdown = the median over the pairs of buggy / fixed decode time per token, from
  // the repeats the JSON holds (in pair order); end-to-end likewise.
  const double decode_slowdown = result["decode_slowdown"]["median"].get<double>();
  const auto [decode_paired, end_to_end_paired] = paired_slowdowns(result["fixed"]["repeats"], result["buggy"]["repeats"]);
  CHECK(decode_slowdown == Approx(decode_paired));
  CHECK(result["end_to_end_slowdown"]["median"].get<double>() == Approx(end_to_end_paired));
  // The scenario names decode: the headline and verdict are about decode_slowdown; the
  // --set on the workload takes the range away.
  CHECK(result["headline"]["metric"] == "decode");
  CHECK(result["headline"]["measured"]["median"].get<double>() == decode_slowdown);
  CHECK(result["headline"]["verdict"] == "workload changed");
  CHECK_THAT(result["headline"]["why"].get<std::string>(), Contains("workload.new_tokens"));

  // The attribution's delta is the difference of the reported medians, per decode token.
  const nlohmann::json& attribution = result["attribution"];
  const double delta = 1000.0 / buggy["decode_tokens_per_s"].get<double>() - 1000.0 / fixed["decode_tokens_per_s"].get<double>();
  CHECK(attribution["scope"] == "decode");
  CHECK(attribution["delta_ms_per_token"].get<double>() == Approx(delta).epsilon(0.01));
  double sum = attribution["residual_ms_per_token"].get<double>();
  for (const nlohmann::json& part : attribution["parts"]) {
    sum += part["ms_per_token"].get<double>();
    const std::string text = part["explanation"].get<std::string>();
    CHECK_THAT(text, !Contains("()"));
    CHECK_FALSE(std::regex_search(text, std::regex("[0-9]e[-+][0-9]")));
    // A negative part says what it means, or that it is within the noise (then it means nothing yet).
    if (part["ms_per_token"].get<double>() < 0) CHECK((part.contains("sign_note") || part.value("within_noise", false)));
    if (part.value("within_noise", false)) CHECK_THAT(part["note"].get<std::string>(), Contains("within the noise"));
  }
  CHECK(sum == Approx(attribution["delta_ms_per_token"].get<double>()).epsilon(1e-9).margin(1e-12));
  CHECK_FALSE(std::regex_search(compare.out, std::regex("[0-9]e[-+][0-9]")));
  // Text for people names the figures in words; --json keeps their names.
  CHECK_THAT(compare.out, Contains("decode slowdown:") && Contains("end-to-end slowdown:") && Contains("verdict: "));
  CHECK_THAT(compare.out, !Contains("decode_slowdown") && !Contains("end_to_end_slowdown"));

  // The report's slowdowns and each side's figures are the JSON's.
  const auto figures = html_figures(read_text_file(report / "report.html"));
  REQUIRE(figures.count("decode_slowdown"));
  CHECK(figures.at("decode_slowdown").median == Approx(decode_slowdown).epsilon(1e-12));
  CHECK(figures.at("end_to_end_slowdown").median ==
        Approx(result["end_to_end_slowdown"]["median"].get<double>()).epsilon(1e-12));
  // The page tells the story top to bottom: the bug's lesson (from bugs/fp32_ops.cpp), the
  // slowdown with the verdict the JSON holds and the prediction beside it, the attribution's
  // bars, then the runs; it links to attribution.html, which links back.
  const std::string page = read_text_file(report / "report.html");
  const std::vector<std::string> order = {"<h2>The bug</h2>", "fp32 ops in a half-precision model",
                                          "What a profiler sees:", "<h2>Slowdown</h2>", "<h2>Why slower</h2>",
                                          "<h2>Summary</h2>", "<h2>Roofline</h2>", "<h2>Decode step timeline</h2>",
                                          "<h2>Phases</h2>", "<h2>Top ops</h2>"};
  size_t at = 0;
  for (const std::string& part : order) {
    INFO(part);
    const size_t found = page.find(part, at);
    CHECK(found != std::string::npos);
    if (found != std::string::npos) at = found;
  }
  CHECK_THAT(page, Contains("class=\"verdict workload-changed\">workload changed</span>"));
  CHECK_THAT(page, Contains(decodelab::xml_escape(result["headline"]["why"].get<std::string>())));
  const std::regex predicted(R"re(data-predicted="predicted_decode_slowdown" data-value="([^"]+)")re");
  std::smatch match;
  REQUIRE(std::regex_search(page, match, predicted));
  CHECK(std::stod(match[1]) == Approx(result["predicted_decode_slowdown"].get<double>()).epsilon(1e-12));
  CHECK_THAT(page, Contains("<a href=\"attribution.html\">") && Contains("class=\"track\""));
  CHECK_THAT(page, !Contains("../index.html"));  // alone, not in a lab
  const std::string attribution_page = read_text_file(report / "attribution.html");
  CHECK_THAT(attribution_page, Contains("<a href=\"report.html\">") && Contains("<h2>Predicted</h2>") &&
                                   Contains("class=\"track\""));

  check_documented_keys(result, "compare");
  check_documented_keys(result["headline"], "headline");
  check_documented_keys(attribution, "attribution");
  // The table beside the bars: the decode phase per token, over the same pairs.
  REQUIRE_FALSE(result["categories"].empty());
  for (const nlohmann::json& bucket : result["categories"]) {
    check_documented_keys(bucket, "categories[]");
    CHECK(bucket["delta_ms_per_token"]["samples"] == result["pairs"]);
  }
  CHECK_THAT(compare.out, Contains("device time per token (decode, medians over 6 pairs"));
  CHECK_THAT(page, Contains("<span title=\"decode_slowdown\">decode slowdown</span> (n="));
  check_documented_keys(result["prediction"], "prediction");
  // The prediction's verdict judges the slowdown the range verdict judges.
  CHECK(result["prediction"]["of"] == result["headline"]["metric"]);
  CHECK_THAT(compare.out, Contains("verdict against the prediction (decode slowdown"));
}

TEST_CASE("lab and sweep rows: tok/s agrees with batch and wall time per step", "[figures][cli]") {
  const TempDir dir;
  const auto lab_file = dir.path() / "lab.json";
  const CommandResult lab = run_decodelab(with(
      {"lab", "--only", "sequential_generation"},
      with(kTiny, {"--set", "model=lab-tiny", "--set", "workload.new_tokens=6", "--set", "workload.requests=4",
                   "--set", "workload.batch_size=4", "--json", lab_file.string()})));
  INFO(lab.err);
  REQUIRE(lab.exit_code == 0);
  const nlohmann::json rows = read_json(lab_file);
  REQUIRE(rows.size() == 1);
  const nlohmann::json& row = rows[0];
  check_tokens_per_s(row["fixed"]["metrics"], 4);  // the fixed twin batches the 4 requests
  check_tokens_per_s(row["buggy"]["metrics"], 1);  // sequential generation: one at a time
  CHECK(row["fixed_tokens_per_s"] == row["fixed"]["metrics"]["decode_tokens_per_s"]);
  const auto [decode_paired, end_to_end_paired] = paired_slowdowns(row["fixed"]["repeats"], row["buggy"]["repeats"]);
  CHECK(row["decode_slowdown"].get<double>() == Approx(decode_paired));
  CHECK(row["end_to_end_slowdown"].get<double>() == Approx(end_to_end_paired));
  CHECK(row["headline"]["metric"] == "decode");
  CHECK(row["verdict"] == "workload changed");
  check_documented_keys(row, "lab row");
  check_documented_keys(row["prediction"], "lab row.prediction");
  REQUIRE_FALSE(row["prediction"]["elsewhere"].empty());
  check_documented_keys(row["prediction"]["elsewhere"][0], "lab row.prediction.elsewhere[]");
  for (const std::string& label : header_cells(lab.out, "bug")) check_documented_label(label);

  const auto sweep_file = dir.path() / "sweep.json";
  const CommandResult sweep = run_decodelab(with(
      {"sweep", "decode-batch"},
      with(kTiny, {"--set", "model=lab-tiny", "--set", "workload.requests=[1, 3]", "--set", "workload.batch_size=[1, 3]",
                   "--set", "workload.new_tokens=5", "--set", "workload.prompt_tokens=4", "--json", sweep_file.string()})));
  INFO(sweep.err);
  REQUIRE(sweep.exit_code == 0);
  const nlohmann::json points = read_json(sweep_file);
  REQUIRE(points.size() == 2);
  check_tokens_per_s(points[0]["metrics"], 1);
  check_tokens_per_s(points[1]["metrics"], 3);
  for (const nlohmann::json& point : points) check_prefill_tokens_per_s(point);
  check_documented_keys(points[1]["decode_roofline"], "decode_roofline");
  for (const char* key : {"predicted_decode_tokens_per_s", "decode_tokens_per_s_prediction_error"}) {
    REQUIRE(points[1].contains(key));
    check_documented_label(std::string("`") + key + "`");
  }
  check_documented_keys(points[1]["prediction"], "sweep row.prediction");
  // The table's columns after the swept keys (requests, batch_size) are documented labels.
  const std::vector<std::string> columns = header_cells(sweep.out, "requests");
  REQUIRE(columns.size() > 2);
  for (size_t i = 2; i < columns.size(); ++i) check_documented_label(columns[i]);
  CHECK_THAT(sweep.out, Contains("± is the 95% confidence interval"));
}
