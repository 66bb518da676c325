// The pages' frame and their one stylesheet (see html_page.h). The stylesheet holds no '>'
// or '&': the pages stay well-formed XML for the tests' checker.
#include "profiling/report/html_page.h"

#include "profiling/report/report.h"

namespace decodelab {

const std::string& page_stylesheet() {
  static const std::string style = R"(
:root { color-scheme: light; }
body { margin: 0; background: #f3f4f6; color: #111827; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 20px 24px 40px; }
a { color: #1d4ed8; }
nav.links { font-size: 13px; margin: 0 0 10px; display: flex; flex-wrap: wrap; gap: 6px 18px; }
header h1 { font-size: 22px; margin: 0 0 4px; overflow-wrap: anywhere; }
header p { margin: 0; color: #4b5563; overflow-wrap: anywhere; }
section { background: #fff; border: 1px solid #e5e7eb; border-radius: 10px; padding: 16px 20px; margin-top: 18px; min-width: 0; }
h2 { font-size: 16px; margin: 0 0 10px; }
h3 { font-size: 14px; margin: 14px 0 6px; color: #374151; }
p { overflow-wrap: anywhere; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 14px; }
.card { border: 1px solid #e5e7eb; border-left: 5px solid var(--run); border-radius: 8px; padding: 12px 14px; min-width: 0; }
.card .label { font-weight: 700; color: var(--run); text-transform: uppercase; letter-spacing: .04em; font-size: 12px; }
.card .sentence { font-size: 15px; margin: 6px 0 10px; }
.figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 8px 12px; }
.figures div { font-size: 12px; color: #6b7280; min-width: 0; overflow-wrap: anywhere; }
.figures b { display: block; font-size: 16px; color: #111827; font-variant-numeric: tabular-nums; }
.figures small { font-size: 12px; color: #6b7280; font-weight: 500; }
.figure.noisy b { color: #92400e; }
.table-scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 12.5px; font-variant-numeric: tabular-nums; }
.table-scroll table { width: 100%; }
th, td { padding: 4px 7px; border-bottom: 1px solid #f0f1f3; text-align: right; white-space: nowrap; vertical-align: top; }
th { color: #4b5563; font-weight: 600; border-bottom: 1px solid #d1d5db; background: #fafafa; }
th:first-child, td:first-child { text-align: left; }
td.text, th.text { text-align: left; white-space: normal; min-width: 16em; }
td.left, th.left { text-align: left; }
tr:hover td { background: #f9fafb; }
.pill { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 11.5px; font-weight: 600; }
.compute { background: #dbeafe; color: #1e40af; } .memory { background: #ccfbf1; color: #115e59; }
.latency { background: #fef3c7; color: #92400e; } .overhead { background: #fee2e2; color: #991b1b; }
.share { display: inline-block; height: 8px; background: var(--bar); border-radius: 2px; vertical-align: middle; margin-right: 6px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.chart { overflow-x: auto; } .chart svg { width: 100%; max-width: 1000px; height: auto; display: block; }
.caveat { background: #fffbeb; border: 1px solid #fcd34d; color: #78350f; border-radius: 6px; padding: 6px 10px; font-size: 12.5px; margin: 0 0 10px; }
.note { color: #6b7280; font-size: 12.5px; margin: 8px 0 0; }
footer { color: #6b7280; font-size: 12px; margin-top: 18px; }
.lesson h3 { font-size: 15px; color: #111827; margin: 0 0 6px; }
.lesson p { margin: 4px 0; }
.lesson b { color: #374151; }
.slowdown { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 12px 20px; }
.slowdown .figure { border: 1px solid #e5e7eb; border-radius: 8px; padding: 10px 12px; font-size: 12.5px; color: #4b5563; }
.slowdown .figure b { display: block; font-size: 24px; color: #111827; font-variant-numeric: tabular-nums; }
.slowdown .figure.judged { border: 2px solid #111827; }
.slowdown .figure small { font-size: 13px; color: #4b5563; font-weight: 500; }
.slowdown .predicted { margin-top: 6px; color: #374151; }
.verdict { display: inline-block; padding: 1px 9px; border-radius: 999px; font-weight: 700; font-size: 12.5px; border: 1px solid currentColor; }
.verdict.in-range, .verdict.as-predicted { color: #166534; background: #dcfce7; }
/* outside the course's range: a finding about this device, not a failure (the sentence says why) */
.verdict.below, .verdict.above { color: #1e40af; background: #dbeafe; }
.verdict.above-prediction, .verdict.below-prediction { color: #991b1b; background: #fee2e2; }
.verdict.within-noise, .verdict.workload-changed, .verdict.none { color: #92400e; background: #fef3c7; }
.reading p { margin: 6px 0; }
.bars td { vertical-align: middle; }
.bars td.part { font-weight: 600; }
.bars td.value { min-width: 7em; }
.bars td.track-cell { width: 26%; min-width: 160px; }
.track { position: relative; height: 18px; }
.track .zero { position: absolute; top: -3px; bottom: -3px; width: 0; margin-left: -1px; border-left: 2px solid #111827; }
.track .bar { position: absolute; top: 3px; height: 12px; box-sizing: border-box; }
.track .bar.slower { background: #b91c1c; }
.track .bar.faster { background: repeating-linear-gradient(135deg, #15803d 0 3px, #ffffff 3px 6px); border: 1.5px dashed #15803d; }
.track .bar.residual { background: #9ca3af; }
.track .bar.noise { background: #ffffff; border: 1.5px dotted #6b7280; }
.bars .scale th { font-weight: 500; color: #6b7280; }
.bars tr.total td { border-top: 1px solid #d1d5db; font-weight: 600; }
.sign { font-weight: 700; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 12px; color: #374151; margin: 6px 0 0; }
.verdict-cell.in { color: #166534; font-weight: 600; } .verdict-cell.out { color: #991b1b; font-weight: 600; }
)";
  return style;
}

std::string html_page(const std::string& title, const std::string& body, const std::vector<PageLink>& links) {
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
                     xml_escape(title) + "</title>\n<style>" + page_stylesheet() + "</style>\n</head>\n<body>\n<main>\n";
  if (!links.empty()) {
    page += "<nav class=\"links\">";
    for (const PageLink& link : links) {
      page += "<a href=\"" + xml_escape(link.href) + "\">" + xml_escape(link.text) + "</a>";
    }
    page += "</nav>\n";
  }
  return page + body + "</main>\n</body>\n</html>\n";
}

std::string scrolling_table(const std::string& table) { return "<div class=\"table-scroll\">" + table + "</div>"; }

}  // namespace decodelab
