// The pages' frame and what they quote: every page embeds the one stylesheet and scrolls
// wide tables inside their card; the lab's index links each bug's pages; chart labels are
// placed without overlap; the lesson a comparison page opens with is the opening comment
// of the bug's own file, parsed into its parts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "lab/bug_lessons.h"
#include "lab/report/lab_table.h"
#include "lab/report/sweep_report.h"
#include "profiling/report/html_page.h"
#include "profiling/report/svg_labels.h"
#include "tests/support/cli_runner.h"
#include "tests/support/profiling_fixtures.h"
#include "tests/support/temp_dir.h"
#include "tests/support/xml_check.h"

using namespace decodelab;
using decodelab::testing::TempDir;
using decodelab::testing::xml_problem;
using Catch::Matchers::Contains;

namespace {

size_t count(const std::string& text, const std::string& needle) { return decodelab::testing::occurrences(text, needle); }

// The words of a text, whitespace collapsed: how a lesson compares with its file.
std::string words(const std::string& text) {
  std::istringstream stream(text);
  std::string word, joined;
  while (stream >> word) joined += (joined.empty() ? "" : " ") + word;
  return joined;
}

// The opening comment of a source file, "// " taken off each line.
std::string opening_comment(const std::filesystem::path& file) {
  std::ifstream stream(file);
  std::string line, text;
  while (std::getline(stream, line) && line.rfind("//", 0) == 0) text += line.substr(line.size() > 2 ? 3 : 2) + "\n";
  return text;
}

}  // namespace

TEST_CASE("bug lessons: each bug file's opening comment, parsed into title, what code does, what a profiler sees, the fix",
          "[pages]") {
  const std::vector<std::string> bugs = {"fp32_ops", "host_sync", "no_kv_cache", "non_contiguous", "sequential_generation"};
  REQUIRE(bug_lessons().size() == bugs.size());
  for (size_t i = 0; i < bugs.size(); ++i) {
    const BugLesson& lesson = bug_lessons()[i];
    INFO(bugs[i]);
    CHECK(lesson.bug == bugs[i]);
    CHECK_FALSE(lesson.title.empty());
    std::vector<std::string> leads;
    std::string text = "Bug: " + lesson.title + ".";
    for (const auto& [lead, part] : lesson.parts) {
      leads.push_back(lead);
      text += " " + lead + ": " + part;
    }
    CHECK(leads == std::vector<std::string>{"What real code does", "What a profiler sees", "The fix"});
    // Word for word what the file says (the build copies it; nothing is written twice).
    CHECK(words(text) == words(opening_comment(std::filesystem::path(DECODELAB_SOURCE_DIR) / "bugs" / (bugs[i] + ".cpp"))));
  }
}

TEST_CASE("bug lessons: the switched-on bugs in BugSet order, and the parser keeps unknown text", "[pages]") {
  BugSet bugs;
  CHECK(lessons_of(bugs).empty());
  bugs.fp32_ops = bugs.host_sync = true;
  const std::vector<const BugLesson*> lessons = lessons_of(bugs);
  REQUIRE(lessons.size() == 2);
  CHECK(lessons[0]->bug == "host_sync");
  CHECK(lessons[1]->bug == "fp32_ops");

  const BugLesson parsed = parse_bug_lesson("x", "Bug: a thing.\n\nsome words first\nWhat it is: a\ncontinued (scope: b)\nThe fix: c");
  CHECK(parsed.title == "a thing");
  REQUIRE(parsed.parts.size() == 3);
  CHECK(parsed.parts[0] == std::pair<std::string, std::string>{"", "some words first"});
  CHECK(parsed.parts[1] == std::pair<std::string, std::string>{"What it is", "a continued (scope: b)"});
  CHECK(parsed.parts[2] == std::pair<std::string, std::string>{"The fix", "c"});
}

TEST_CASE("page frame: the one stylesheet, links escaped, tables in a box that scrolls", "[pages]") {
  const std::string page = html_page("a <title>", "<p>body</p>", {{"../index.html", "← the lab"}, {"a&b.html", "x"}});
  CHECK(xml_problem(page, /*html=*/true) == "");
  CHECK(count(page, "<style>") == 1);
  CHECK_THAT(page, Contains(page_stylesheet()) && Contains("<title>a &lt;title&gt;</title>"));
  CHECK_THAT(page, Contains("<nav class=\"links\"><a href=\"../index.html\">← the lab</a><a href=\"a&amp;b.html\">"));
  CHECK(scrolling_table("<table></table>") == "<div class=\"table-scroll\"><table></table></div>");
  // The stylesheet has what the pages rely on: scrolling tables, signed bars told apart by more than colour.
  CHECK_THAT(page_stylesheet(), Contains(".table-scroll { overflow-x: auto;") && Contains(".track .bar.faster") &&
                                    Contains("repeating-linear-gradient") && Contains(".track .zero"));
}

TEST_CASE("lab index: the stylesheet, each bug linked to its pages, verdicts marked, the table scrolls", "[pages]") {
  const TempDir dir;
  std::vector<LabRow> rows(2);
  rows[0].bug = "host_sync";
  rows[0].bugs = "host_sync(per=sequence)";
  rows[0].headline.verdict = {VerdictKind::InRange, "in range"};
  rows[1].bug = "no_kv_cache";
  rows[1].headline.verdict = {VerdictKind::WithinNoise, "within noise"};
  std::filesystem::create_directories(dir.path() / "host_sync");
  std::ofstream(dir.path() / "host_sync" / "report.html") << "x";
  std::ofstream(dir.path() / "host_sync" / "attribution.html") << "x";

  write_lab_index(dir.path(), rows);

  const std::string page = decodelab::testing::read_text_file(dir.path() / "index.html");
  CHECK(xml_problem(page, /*html=*/true) == "");
  CHECK_THAT(page, Contains(page_stylesheet()));
  CHECK_THAT(page, Contains("<div class=\"table-scroll\"><table>"));
  CHECK_THAT(page, Contains("<a href=\"host_sync/report.html\">host_sync</a>") &&
                       Contains("<a href=\"host_sync/attribution.html\">why slower</a>"));
  CHECK_THAT(page, !Contains("no_kv_cache/report.html"));  // no pages written for it: named, not linked
  CHECK_THAT(page, Contains("<span class=\"verdict in-range\">in range</span>") &&
                       Contains("<span class=\"verdict within-noise\">within noise</span>"));
  // Two bugs ran: the title says so, not "the five-bug lab".
  CHECK_THAT(page, Contains("<h1>decodelab: the lab, 2 bugs</h1>") && !Contains("five-bug"));
}

TEST_CASE("lab index: one chart of the slowdowns, the busy machine said once, the prediction in its own table",
          "[pages]") {
  const TempDir dir;
  std::vector<LabRow> rows(2);
  rows[0].bug = "host_sync";
  rows[0].headline.expected = ExpectedSlowdown{100, 1000, SlowdownMetric::Decode};
  rows[0].headline.measured.median = 1.5;
  rows[0].headline.measured.low = 1.4;
  rows[0].headline.measured.high = 1.6;
  rows[0].headline.measured.samples = 12;
  rows[0].headline.verdict = {VerdictKind::Below, "below"};
  rows[0].contended = true;
  rows[1].bug = "no_kv_cache";
  rows[1].headline.measured = rows[0].headline.measured;
  rows[1].headline.measured.median = 3;
  rows[1].headline.measured.high = 3.2;
  write_lab_index(dir.path(), rows);
  const std::string page = decodelab::testing::read_text_file(dir.path() / "index.html");
  CHECK(xml_problem(page, /*html=*/true) == "");
  CHECK_THAT(page, Contains("<h2>Each bug's slowdown</h2><svg class=\"lab-chart\""));
  CHECK(decodelab::testing::occurrences(page, "<rect class=\"range\"") == 1);  // only host_sync has a range
  CHECK(decodelab::testing::occurrences(page, "<title>measured ") == 2);
  // The chart's scale reaches the range: 1000x is a tick.
  CHECK_THAT(page, Contains(">1000x</text>"));
  CHECK(decodelab::testing::occurrences(page, "class=\"caveat\"") == 1);
  CHECK_THAT(page, Contains("The machine was busy while host_sync was measured"));
  CHECK_THAT(page, Contains("<h3>Against the prediction</h3>"));
  // Words in the headers, the JSON names in their tooltips.
  CHECK_THAT(page, Contains("<th title=\"decode_slowdown\">decode slowdown</th>") &&
                       Contains("<th title=\"end_to_end_slowdown\">end-to-end slowdown</th>"));
  CHECK_THAT(page, !Contains("<th>decode_slowdown</th>"));
}

TEST_CASE("lab index chart: over many decades the tick labels keep clear of each other, every decade labelled",
          "[pages]") {
  // A busy machine's interval reaching 0.0008x beside a range of 100-1000x: seven decades, where
  // "0.001x" and "0.002x" were drawn over each other.
  const TempDir dir;
  std::vector<LabRow> rows(1);
  rows[0].bug = "host_sync";
  rows[0].headline.expected = ExpectedSlowdown{100, 1000, SlowdownMetric::Decode};
  rows[0].headline.measured.median = 1.5;
  rows[0].headline.measured.low = 0.0008;
  rows[0].headline.measured.high = 40;
  rows[0].headline.measured.samples = 6;
  rows[0].headline.verdict = {VerdictKind::Below, "below"};
  write_lab_index(dir.path(), rows);
  const std::string page = decodelab::testing::read_text_file(dir.path() / "index.html");
  const std::regex tick(R"re(<text x="([0-9.]+)" y="[0-9.]+" text-anchor="middle"( fill="#6b7280" font-size="10")?>([0-9.]+x)</text>)re");
  std::vector<std::pair<double, double>> boxes;
  std::vector<std::string> labels;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), tick); it != std::sregex_iterator(); ++it) {
    const double x = std::stod((*it)[1]);
    const double half = text_width((*it)[3].str(), (*it)[2].matched ? 10 : 12) / 2;
    boxes.emplace_back(x - half, x + half);
    labels.push_back((*it)[3]);
  }
  for (const char* decade : {"0.0001x", "0.001x", "0.01x", "0.1x", "1x", "10x", "100x", "1000x"})
    CHECK(std::find(labels.begin(), labels.end(), decade) != labels.end());
  for (size_t a = 0; a < boxes.size(); ++a)
    for (size_t b = a + 1; b < boxes.size(); ++b) {
      INFO(labels[a] << " and " << labels[b]);
      CHECK((boxes[a].second <= boxes[b].first || boxes[b].second <= boxes[a].first));
    }
}

TEST_CASE("sweep page: the stylesheet, the rows in a table that scrolls", "[pages]") {
  const TempDir dir;
  write_sweep_report(dir.path(), "sweep <x>", "| a | b |\n| --- | --- |\n| 1 | 2 |\n", "batch_size", {},
                     decodelab::testing::synthetic_cpu_device());
  const std::string page = decodelab::testing::read_text_file(dir.path() / "index.html");
  CHECK(xml_problem(page, /*html=*/true) == "");
  CHECK_THAT(page, Contains(page_stylesheet()) && Contains("<h1>sweep &lt;x&gt;</h1>") &&
                       Contains("<div class=\"table-scroll\"><table><tr><th>a</th>"));
}

TEST_CASE("label placer: labels never overlap or leave the plot, and one with no room is refused", "[pages]") {
  const LabelBox bounds{0, 0, 300, 120};
  LabelPlacer placer(bounds);
  placer.block(LabelBox{140, 50, 160, 70});  // a marker
  std::vector<LabelBox> placed;
  int refused = 0;
  for (int i = 0; i < 40; ++i) {  // far more labels around one point than fit
    const std::string text = "decode matmul " + std::to_string(i);
    if (const auto origin = placer.place(150, 60, text)) {
      placed.push_back(text_box(origin->first, origin->second, text, 11));
    } else {
      ++refused;
    }
  }
  CHECK(placed.size() >= 4);
  CHECK(refused > 0);
  for (size_t a = 0; a < placed.size(); ++a) {
    CHECK(placed[a].inside(bounds));
    CHECK_FALSE(placed[a].overlaps(LabelBox{140, 50, 160, 70}));
    for (size_t b = a + 1; b < placed.size(); ++b) CHECK_FALSE(placed[a].overlaps(placed[b]));
  }
  // Widths count characters, not bytes, and wide letters more than narrow ones.
  CHECK(text_width("·", 11) < text_width("mm", 11));
  CHECK(text_width("mmmm", 11) > text_width("iiii", 11) * 2);
  CHECK(text_width("decode matmul", 11) > 60);  // an upper bound: a wide sans-serif's width
}

TEST_CASE("chart titles: a long title shrinks, then is cut at a character and keeps its whole text on hover", "[pages]") {
  const FittedText short_title = fit_text("Roofline · lab CPU", 650, 15, 11, true);
  CHECK_FALSE(short_title.cut);
  CHECK(short_title.font_px == 15);
  CHECK(short_title.text == "Roofline · lab CPU");

  const std::string longer = "Roofline · Intel(R) Xeon(R) Processor (1 threads, AVX-512, hardware weight stream)";
  const FittedText shrunk = fit_text(longer, 650, 15, 11, true);
  CHECK_FALSE(shrunk.cut);
  CHECK(shrunk.font_px < 15);
  CHECK(text_width(shrunk.text, shrunk.font_px) * 1.1 <= 650);

  const std::string very_long = longer + " · " + longer + " · naïve ×";
  const FittedText cut = fit_text(very_long, 650, 15, 11, true);
  CHECK(cut.cut);
  CHECK(cut.font_px == 11);
  CHECK(text_width(cut.text, 11) * 1.1 <= 650);
  REQUIRE(cut.text.size() > 3);
  CHECK(cut.text.substr(cut.text.size() - 3) == "\u2026");
  // Cut at a code point: no stray continuation byte before the ellipsis.
  const std::string before = cut.text.substr(0, cut.text.size() - 3);
  CHECK(very_long.compare(0, before.size(), before) == 0);
  const auto next = static_cast<unsigned char>(very_long[before.size()]);
  CHECK((next & 0xC0) != 0x80);
}
