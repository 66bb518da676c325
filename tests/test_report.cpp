// Printers: the SVGs and the HTML page are well-formed and self-contained, show what
// they should (roofs, one point per category and phase, two colours for two runs), the
// CSV has one row per run × category × phase, and the report directory is complete.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <unistd.h>

#include "profiling/model/analysis.h"
#include "profiling/model/decode_reading.h"
#include "profiling/measure/machine_check.h"
#include "profiling/report/printers.h"
#include "profiling/report/report.h"
#include "profiling/report/svg_labels.h"
#include "profiling/units.h"
#include "tests/support/profiling_fixtures.h"
#include "tests/support/xml_check.h"

using namespace decodelab;
using decodelab::testing::SyntheticRun;
using decodelab::testing::xml_problem;
using Catch::Matchers::Contains;

namespace {

size_t count(const std::string& text, const std::string& needle) { return decodelab::testing::occurrences(text, needle); }

struct TwoRuns {
  Trace fixed_trace, buggy_trace;
  RunAnalysis fixed, buggy;
  TwoRuns() {
    DeviceSpec device = decodelab::testing::synthetic_cpu_device();
    device.datasheet = Roofs{.bandwidth = 40e9, .fp32_flops = 200e9, .fp16_flops = 120e9, .bf16_flops = 120e9, .source = "synthetic datasheet"};
    // A measured account is one clause per roof, "; "-joined, as roof_measure writes it.
    if (device.measured) device.measured->source = "copy 40 GB/s; FMA probe 200 GFLOP/s; fp16 matmul 120 GFLOP/s";
    SyntheticRun fixed_run;
    SyntheticRun buggy_run;
    buggy_run.sync_each_step = true;
    buggy_run.host_gap_us = 2000;  // the host makes the device wait
    buggy_run.fp32_matmuls = true;
    fixed_trace = decodelab::testing::synthetic_run_trace(fixed_run, device);
    buggy_trace = decodelab::testing::synthetic_run_trace(buggy_run, device);
    fixed = analyze(fixed_trace);
    buggy = analyze(buggy_trace);
  }
  std::vector<LabelledRun> labelled() const { return {{"fixed", &fixed, {}, nullptr}, {"buggy", &buggy, {}, nullptr}}; }
};

std::string slurp(const std::filesystem::path& file) {
  std::ifstream stream(file);
  std::stringstream text;
  text << stream.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("roofline SVG: well-formed, both roof sets, one point per category and phase per run", "[report]") {
  const TwoRuns runs;
  const std::string svg = roofline_svg(runs.labelled());

  CHECK(xml_problem(svg) == "");
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  // datasheet and measured: an fp32 roof and one half roof each (fp16 = bf16 drawn once)
  CHECK(count(svg, "<polyline") == 4);
  CHECK(count(svg, "stroke-dasharray") == 2);
  CHECK(svg.find("(datasheet)") != std::string::npos);
  CHECK(svg.find("(measured)") != std::string::npos);
  size_t expected_points = 0;
  for (const RunAnalysis* analysis : {&runs.fixed, &runs.buggy}) {
    for (const OpGroup& group : analysis->categories) expected_points += group.point.flops > 0 ? 1 : 0;
  }
  CHECK(count(svg, "<title>") == expected_points);
  CHECK(count(svg, run_colour(0)) > 1);  // fixed points and legend
  CHECK(count(svg, run_colour(1)) > 1);  // buggy points and legend
  CHECK(svg.find("no FLOPs, so not on the chart") != std::string::npos);  // kv_store copies
}

TEST_CASE("step timeline SVG: a bar per step, idle and syncs shown when present", "[report]") {
  const TwoRuns runs;
  const std::string fixed = step_timeline_svg(runs.fixed, "fixed");
  const std::string buggy = step_timeline_svg(runs.buggy, "buggy");
  CHECK(xml_problem(fixed) == "");
  CHECK(xml_problem(buggy) == "");
  CHECK(count(fixed, "<title>decode step ") == runs.fixed.steps.size());
  CHECK(buggy.find("host sync") != std::string::npos);
  CHECK(fixed.find("host sync") == std::string::npos);
  CHECK(buggy.find("overhead-bound step") != std::string::npos);

  RunAnalysis no_steps = runs.fixed;
  no_steps.steps.clear();
  const std::string empty = step_timeline_svg(no_steps, "empty");
  CHECK(xml_problem(empty) == "");
  CHECK(empty.find("no decode steps") != std::string::npos);
}

TEST_CASE("HTML report: well-formed, self-contained, every section present", "[report]") {
  const TwoRuns runs;
  const std::string html = report_html(runs.labelled(), "fixed vs buggy <test>");

  CHECK(xml_problem(html, /*html=*/true) == "");
  CHECK(html.find("fixed vs buggy &lt;test&gt;") != std::string::npos);
  // nothing to fetch: no scripts, no external references (the SVG namespace is a name, not a fetch)
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
  CHECK(html.find(" src=") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  const std::regex external(R"((https?:)?//(?!www\.w3\.org/2000/svg))");
  CHECK_FALSE(std::regex_search(html, external));
  for (const char* section : {"Summary", "Roofline", "Decode step timeline", "Phases", "Where the device time went",
                              "Top ops", "Device roofs"}) {
    CHECK(html.find(std::string("<h2>") + section) != std::string::npos);
  }
  CHECK(count(html, "<svg ") == 3);  // the roofline and one timeline per run
  CHECK(html.find(xml_escape(runs.buggy.summary)) != std::string::npos);
  // The roofs' source as a list of clauses, not one long sentence.
  if (runs.buggy.device_spec.measured) {
    CHECK(html.find("<li>copy 40 GB/s</li><li>FMA probe 200 GFLOP/s</li>") != std::string::npos);
  }
}

TEST_CASE("HTML report: a busy machine's summary and a far-cores note are shown on the run", "[report]") {
  const TwoRuns runs;
  MachineState far;
  far.cores_available = far.kernel_threads = 2;
  far.cpu_share = 1.0;
  far.core_round_trip_ns = 426;
  judge_machine(far);
  REQUIRE_FALSE(far.contended);
  std::vector<LabelledRun> labelled = runs.labelled();
  labelled[1].machine = &far;
  const std::string html = report_html(labelled, "fixed vs buggy");
  CHECK(xml_problem(html, /*html=*/true) == "");
  CHECK(count(html, "cores are far apart") == 1);
  CHECK(html.find("426 ns") != std::string::npos);
  CHECK(html.find("The machine was busy") == std::string::npos);
}

TEST_CASE("ops.csv: one row per run × category × phase, numbers parse", "[report]") {
  const TwoRuns runs;
  const std::string csv = ops_csv(runs.labelled());
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  CHECK(line.rfind("run,phase,category,precision,count,seconds", 0) == 0);
  const size_t columns = static_cast<size_t>(std::count(line.begin(), line.end(), ',')) + 1;
  size_t rows = 0;
  while (std::getline(lines, line)) {
    ++rows;
    CHECK(static_cast<size_t>(std::count(line.begin(), line.end(), ',')) + 1 == columns);
  }
  CHECK(rows == runs.fixed.categories.size() + runs.buggy.categories.size());
}

TEST_CASE("console table: summary, phases and the categories", "[report]") {
  const TwoRuns runs;
  const std::string text = format_console(runs.buggy, 5);
  CHECK(text.find(runs.buggy.summary) != std::string::npos);
  CHECK(text.find("phase · category") != std::string::npos);
  CHECK(text.find("decode · matmul") != std::string::npos);
  CHECK(text.find("more rows in ops.csv") != std::string::npos);
}

TEST_CASE("report directory: four files, written whole, no temporaries left", "[report]") {
  const TwoRuns runs;
  const std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("decodelab-report-" + std::to_string(::getpid()));
  write_report_directory(directory, runs.labelled());

  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) files.insert(entry.path().filename().string());
  CHECK(files == std::set<std::string>{"report.html", "roofline.svg", "ops.csv", "result.json"});
  const nlohmann::json result = nlohmann::json::parse(slurp(directory / "result.json"));
  CHECK(result["schema"] == "decodelab-report");
  CHECK(result["runs"].size() == 2);
  CHECK(result["runs"][1]["label"] == "buggy");
  CHECK(result["runs"][1]["result"]["schema_version"] == RunAnalysis::kSchemaVersion);
  CHECK(xml_problem(slurp(directory / "roofline.svg")) == "");

  // Hidden sample: DECODELAB_SAMPLE_REPORT=DIR keeps a copy to look at (tests/browser/check_pages.py opens it).
  if (const char* keep = std::getenv("DECODELAB_SAMPLE_REPORT")) write_report_directory(keep, runs.labelled(), "sample report");
  std::filesystem::remove_all(directory);
}

namespace {

// The left-aligned labels of an SVG (x, y, no anchor, no rotation) as the placer sized them.
std::vector<std::pair<std::string, LabelBox>> placed_labels(const std::string& svg) {
  std::vector<std::pair<std::string, LabelBox>> labels;
  const std::regex text(R"re(<text class="halo" x="([0-9.]+)" y="([0-9.]+)" font-size="11" fill="#[0-9a-f]+">([^<]+)</text>)re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[3];
    labels.emplace_back(name, text_box(std::stod((*it)[1]), std::stod((*it)[2]), name, 11));
  }
  return labels;
}

}  // namespace

TEST_CASE("roofline SVG: a point the bug moved has an arrow and a label at each end, and no two labels overlap", "[report]") {
  const TwoRuns runs;  // the buggy run's matmuls read fp32 weights: the decode matmul point moves
  const std::string svg = roofline_svg(runs.labelled());
  CHECK(xml_problem(svg) == "");
  CHECK(count(svg, "marker-end=\"url(#moved-arrow)\"") >= 2);  // the legend's and at least one point's
  CHECK_THAT(svg, Contains("moved by the bug: fixed → buggy"));
  const auto labels = placed_labels(svg);
  auto labelled = [&](const std::string& name) {
    return std::any_of(labels.begin(), labels.end(), [&](const auto& label) { return label.first == name; });
  };
  const bool listed = svg.find("points not labelled on the chart") != std::string::npos;
  CHECK((labelled("matmul (buggy)") || (listed && svg.find("matmul (buggy)") != std::string::npos)));
  CHECK((labelled("matmul (fixed)") || (listed && svg.find("matmul (fixed)") != std::string::npos)));
  for (size_t a = 0; a < labels.size(); ++a) {
    for (size_t b = a + 1; b < labels.size(); ++b) {
      INFO(labels[a].first << " and " << labels[b].first);
      CHECK_FALSE(labels[a].second.overlaps(labels[b].second));
    }
  }
  // One run: no arrows, no run names in the labels.
  const std::string single = roofline_svg({{"run", &runs.fixed, {}, nullptr}});
  CHECK(count(single, "marker-end=") == 0);
  CHECK_THAT(single, !Contains("(run)"));
}

TEST_CASE("Phases table: device wall is busy + idle on the device, host time the host's clock, shown apart", "[report]") {
  const TwoRuns runs;
  const std::string html = report_html(runs.labelled(), "phases");
  CHECK_THAT(html, Contains("<th>device wall</th><th>device busy</th>"));
  const PhaseStats* decode = runs.buggy.phase(Phase::Decode);
  REQUIRE(decode);
  CHECK(decode->timeline.device_seconds() >= decode->timeline.busy_seconds);
  CHECK_THAT(html, Contains("<tr><td>decode</td><td>" + std::to_string(decode->steps) + "</td><td>" +
                            format_seconds(decode->timeline.device_seconds()) + "</td><td>" +
                            format_seconds(decode->timeline.busy_seconds) + "</td>"));
  CHECK(count(html, "<div class=\"table-scroll\"><table>") >= 7);  // phases, categories and top ops per run, roofs
  CHECK_THAT(html, Contains(page_stylesheet()));
}

TEST_CASE("HTML report: a run card's headline reads decode from the medians the card shows", "[report]") {
  const TwoRuns runs;
  Estimate gbps, wall, busy, tokens;
  gbps.median = 7.69;
  wall.median = 2.0;
  busy.median = 1.9;
  tokens.median = 500;  // one token per step at 2 ms
  for (Estimate* estimate : {&gbps, &wall, &busy, &tokens}) estimate->samples = 6;
  LabelledRun run{"fixed", &runs.fixed,
                  {{"decode_bandwidth_gbps", "decode GB/s", "7.69", gbps},
                   {"decode_wall_ms_per_step", "wall ms/step", "2.000", wall},
                   {"decode_busy_ms_per_step", "busy ms/step", "1.900", busy},
                   {"decode_tokens_per_s", "decode tok/s", "500", tokens}},
                  nullptr};
  const std::string html = report_html({run}, "one run");
  const DecodeReading expected = read_decode(7.69e9, 2.0, 1.9, 1.0, parse_precision(runs.fixed.dtype).value(),
                                             runs.fixed.device_spec, runs.fixed.thresholds);
  CHECK(html.find("<p class=\"sentence\">" + xml_escape(expected.sentence)) != std::string::npos);
  CHECK(html.find(format_percent(expected.roof_fraction())) != std::string::npos);
}

TEST_CASE("report page: one machine note for the page, not one per card", "[report]") {
  // A comparison's two runs share their machine: the issue saw each card under the same
  // warnings again.
  const TwoRuns runs;
  MachineState machine;
  machine.contended = true;
  machine.advice = "rerun when the machine is quiet";
  machine.notes = {"the kernel threads sit on cores far apart"};
  std::vector<LabelledRun> labelled = runs.labelled();
  for (LabelledRun& run : labelled) run.machine = &machine;
  const std::string html = report_html(labelled, "fixed vs buggy");
  CHECK(xml_problem(html, /*html=*/true) == "");
  CHECK(count(html, "The machine was busy while these ran") == 1);
  CHECK(count(html, "the kernel threads sit on cores far apart") == 1);
  // The note sits above the cards, not inside one.
  const size_t note = html.find("The machine was busy while these ran");
  const size_t first_card = html.find("<div class=\"card\"");
  REQUIRE(first_card != std::string::npos);
  CHECK(note < first_card);
}
