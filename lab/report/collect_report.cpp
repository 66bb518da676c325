// collect's tables (see collect_report.h). Figures are read back from the rows through
// the readers the local commands use for resumed rows (run_summary_from_json,
// lab_row_from_json), so a figure has one name and one reading everywhere.
#include "lab/report/collect_report.h"

#include <cstdio>
#include <set>
#include <stdexcept>
#include <system_error>

#include "lab/report/lab_table.h"
#include "lab/report/run_report.h"
#include "lab/run/sweep_row.h"
#include "profiling/atomic_file.h"
#include "profiling/report/html_page.h"
#include "profiling/report/report.h"

namespace decodelab {

namespace fs = std::filesystem;

namespace {

std::string joined(const std::set<std::string>& values) {
  std::string text;
  for (const std::string& value : values) text += (text.empty() ? "" : ", ") + value;
  return text;
}

std::string set_title(const RunSet& set) {
  return set.partition.empty() ? "the default partition" : "partition " + set.partition;
}

std::string number(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace

std::string markdown_table_html(const std::string& markdown) {
  std::string html = "<table>";
  size_t start = 0;
  for (int line_number = 0; start < markdown.size(); ++line_number) {
    size_t end = markdown.find('\n', start);
    if (end == std::string::npos) end = markdown.size();
    const std::string line = markdown.substr(start, end - start);
    start = end + 1;
    if (line_number == 1) continue;  // the rule under the header
    const char* cell = line_number == 0 ? "th" : "td";
    html += "<tr>";
    size_t cell_start = line.find('|');
    while (cell_start != std::string::npos) {
      const size_t cell_end = line.find('|', cell_start + 1);
      if (cell_end == std::string::npos) break;
      std::string text = line.substr(cell_start + 1, cell_end - cell_start - 1);
      while (!text.empty() && text.front() == ' ') text.erase(text.begin());
      while (!text.empty() && text.back() == ' ') text.pop_back();
      html += std::string("<") + cell + ">" + xml_escape(text) + "</" + cell + ">";
      cell_start = cell_end;
    }
    html += "</tr>";
  }
  return html + "</table>";
}

CollectedPoints collected_points(const RunManifest& manifest) {
  std::vector<ScenarioOverride> overrides;
  for (const std::string& assignment : manifest.overrides) overrides.push_back(parse_override(assignment));
  CollectedPoints collected;
  for (const RunPoint& point : manifest.points) {
    fs::path file = point.file;
    if (file.is_relative()) file = fs::path(manifest.working_directory) / file;
    const YAML::Node document = parse_scenario_text(point.scenario_yaml, file);
    collected.scenarios.push_back(parse_scenario(document, file, overrides));
    collected.points.push_back({point.label, point.swept, document});
  }
  return collected;
}

namespace {

// A device as a set tells devices apart: a CPU's description without its thread count
// ("EPYC (2 threads, AVX2)" and "EPYC (1 threads, AVX2)" are one device in a threads sweep).
std::string device_identity(const std::string& description) {
  const size_t open = description.rfind(" (");
  const size_t threads = description.find(" threads", open == std::string::npos ? 0 : open);
  if (open == std::string::npos || threads == std::string::npos) return description;
  const size_t comma = description.find(", ", threads);
  return description.substr(0, open) + (comma == std::string::npos ? "" : " (" + description.substr(comma + 2));
}

}  // namespace

std::string set_heading(const CollectedSet& set) {
  std::set<std::string> devices, nodes;
  for (const nlohmann::json* row : set.rows) {
    if (!row) continue;
    devices.insert(device_identity(row->value("device", "?")));
    if (row->contains("placement") && (*row)["placement"].is_object())
      nodes.insert((*row)["placement"].value("node", "?"));
  }
  std::string heading = set_title(set.set) + ": ";
  if (devices.empty()) return heading + "no rows yet";
  heading += joined(devices);
  if (!nodes.empty()) heading += " on " + joined(nodes);
  if (devices.size() > 1) heading += " (" + std::to_string(devices.size()) + " different devices in one set)";
  return heading;
}

std::string set_table(const RunManifest& manifest, const CollectedPoints& points, const CollectedSet& set) {
  if (manifest.command == "lab") {
    std::vector<LabRow> rows;
    for (const nlohmann::json* row : set.rows)
      if (row) rows.push_back(lab_row_from_json(*row, "row of " + set.set.name));
    return lab_table(rows);
  }
  std::string table = sweep_table_header(points.points.front());
  for (size_t i = 0; i < set.rows.size(); ++i)
    if (set.rows[i]) table += sweep_table_row(points.points[i], points.scenarios[i], *set.rows[i]);
  return table + run_table_legend(points.scenarios.front().repeats.target_ci);
}

std::string side_by_side_table(const RunManifest& manifest, const CollectedPoints& points,
                               const std::vector<CollectedSet>& sets) {
  const bool lab = manifest.command == "lab";
  std::string header, rule;
  if (lab) {
    header = "| bug ";
    rule = "| --- ";
  } else {
    for (const auto& [key, value] : points.points.front().values) {
      header += "| " + key + " ";
      rule += "| ---: ";
    }
    if (points.points.front().values.empty()) {
      header = "| point ";
      rule = "| ---: ";
    }
  }
  for (const CollectedSet& set : sets) {
    if (lab) {
      header += "| " + set.set.name + " slowdown | " + set.set.name + " verdict ";  // the headline's
      rule += "| ---: | --- ";
    } else {
      header += "| " + set.set.name + " decode tok/s | " + set.set.name + " limiter ";
      rule += "| ---: | --- ";
    }
  }
  if (!lab) {
    for (size_t s = 1; s < sets.size(); ++s) {
      header += "| " + sets[s].set.name + " / " + sets.front().set.name + " ";
      rule += "| ---: ";
    }
  }
  std::string table = header + "|\n" + rule + "|\n";
  for (size_t i = 0; i < manifest.points.size(); ++i) {
    std::string line;
    if (lab) {
      line = "| " + manifest.points[i].label + " ";
    } else if (points.points[i].values.empty()) {
      line = "| " + std::to_string(i) + " ";
    } else {
      for (const auto& [key, value] : points.points[i].values) line += "| " + value + " ";
    }
    std::vector<double> tokens_per_s;
    for (const CollectedSet& set : sets) {
      const nlohmann::json* row = i < set.rows.size() ? set.rows[i] : nullptr;
      if (!row) {
        line += "| - | - ";
        tokens_per_s.push_back(0);
        continue;
      }
      if (lab) {
        const LabRow lab_row = lab_row_from_json(*row, "row of " + set.set.name);
        line += "| " + format_slowdown(lab_row.headline.measured) + " " +
                (lab_row.headline.metric == SlowdownMetric::EndToEnd ? "end-to-end" : "decode") + " | " +
                to_string(lab_row.headline.verdict.kind) + " ";
        continue;
      }
      const RunResult summary = run_summary_from_json(*row);
      tokens_per_s.push_back(summary.metrics.decode_tokens_per_s.median);
      std::string limiter = "-";
      if (row->contains("decode_roofline") && (*row)["decode_roofline"].is_object()) {
        const nlohmann::json& reading = (*row)["decode_roofline"];
        limiter = decode_limiter_cell(reading) + " " + decode_roof_fraction_cell(reading);
      }
      line += "| " + format_figure(summary.metrics.decode_tokens_per_s, 1) + " | " + limiter + " ";
    }
    if (!lab) {
      for (size_t s = 1; s < sets.size(); ++s) {
        const bool both = tokens_per_s[0] > 0 && tokens_per_s[s] > 0;
        line += "| " + (both ? number("%.2fx", tokens_per_s[s] / tokens_per_s[0]) : std::string("-")) + " ";
      }
    }
    table += line + "|\n";
  }
  return table;
}

void write_collected_lab_report(const fs::path& directory, const RunFolder& folder,
                                const std::vector<CollectedSet>& sets, const std::string& side_by_side) {
  for (const CollectedSet& set : sets) {
    const fs::path target = sets.size() == 1 ? directory : directory / set.set.name;
    std::vector<LabRow> rows;
    for (const nlohmann::json* row : set.rows) {
      if (!row) continue;
      rows.push_back(lab_row_from_json(*row, "row of " + set.set.name));
      const fs::path source = folder.report_directory(set.set.name) / rows.back().bug;
      std::error_code error;
      if (!fs::is_directory(source, error)) continue;
      fs::create_directories(target / rows.back().bug);
      fs::copy(source, target / rows.back().bug, fs::copy_options::recursive | fs::copy_options::overwrite_existing,
               error);
      if (error) throw std::runtime_error("cannot copy " + source.string() + ": " + error.message());
    }
    write_lab_index(target, rows);
  }
  if (sets.size() == 1) return;
  std::string links;
  for (const CollectedSet& set : sets) {
    links +=
        "<li><a href=\"" + xml_escape(set.set.name) + "/index.html\">" + xml_escape(set_heading(set)) + "</a></li>";
  }
  save_file_atomically(directory / "index.html",
                       html_page("decodelab lab: devices side by side",
                                 "<header><h1>The five-bug lab, device by device</h1></header>\n<section><h2>Each "
                                 "device's lab</h2><ul>" +
                                     links + "</ul>" + scrolling_table(markdown_table_html(side_by_side)) +
                                     "</section>\n"));
}

}  // namespace decodelab
