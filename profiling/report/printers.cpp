// Console tables (profiling/report/text_table.h) and CSV.
#include "profiling/report/printers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "profiling/report/text_table.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

std::string roofs_line(const RunAnalysis& analysis) {
  const Roofs& roofs = analysis.roofs;
  std::string line = analysis.device_spec.roofs_provenance(std::time(nullptr)) + " roofs: " + format_bandwidth(roofs.bandwidth) + ", fp32 " +
                     format_flop_rate(roofs.flops(Precision::Fp32));
  if (roofs.flops(Precision::Fp16) != roofs.flops(Precision::Fp32)) line += ", fp16 " + format_flop_rate(roofs.flops(Precision::Fp16));
  if (roofs.flops(Precision::Bf16) != roofs.flops(Precision::Fp16)) line += ", bf16 " + format_flop_rate(roofs.flops(Precision::Bf16));
  return line;
}

std::vector<std::string> work_cells(const OpGroup& group) {
  const RooflinePoint& point = group.point;
  const bool has_flops = point.flops > 0;  // data movement: no FLOP figures to show
  return {std::to_string(point.count),
          format_seconds(point.seconds),
          format_percent(group.share_of_device_time),
          has_flops ? format_flops(point.flops) : "-",
          format_bytes(point.bytes),
          has_flops ? format_number(point.intensity(), 2) : "-",
          has_flops ? format_flop_rate(point.achieved_flops()) : "-",
          format_bandwidth(point.achieved_bandwidth()),
          format_percent(point.roof_fraction()),
          limiter_cell(group.limiter, group.near)};
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

}  // namespace

std::string format_device_roofs(const DeviceSpec& spec) {
  std::ostringstream out;
  out << "device  " << (spec.description.empty() ? spec.name : spec.description);
  if (!spec.description.empty() && !spec.name.empty()) out << " (" << spec.name << ")";
  if (spec.sm_count > 0) out << ", " << spec.sm_count << " SMs";
  out << "\n\n";
  const std::vector<std::pair<const char*, const std::optional<Roofs>*>> sets = {{"datasheet", &spec.datasheet},
                                                                                  {"measured", &spec.measured}};
  std::vector<std::string> header = {"roof"};
  for (const auto& [name, roofs] : sets) {
    if (*roofs) header.push_back(name);
  }
  TextTable table(header);
  auto row = [&](const std::string& name, auto figure) {
    std::vector<std::string> cells = {name};
    for (const auto& [set_name, roofs] : sets) {
      if (*roofs) cells.push_back(figure(**roofs));
    }
    table.add(cells);
  };
  row("memory bandwidth", [](const Roofs& r) { return r.bandwidth > 0 ? format_bandwidth(r.bandwidth) : "-"; });
  for (Precision precision : {Precision::Fp32, Precision::Tf32, Precision::Fp16, Precision::Bf16}) {
    // GPU figures above fp32 are tensor-core peaks; a CPU has no such units.
    const bool tensor = spec.sm_count > 0 && precision != Precision::Fp32;
    row(std::string(precision_name(precision)) + (tensor ? " tensor" : ""), [&](const Roofs& r) {
      double own = 0;
      switch (precision) {
        case Precision::Fp32: own = r.fp32_flops; break;
        case Precision::Tf32: own = r.tf32_flops; break;
        case Precision::Fp16: own = r.fp16_flops; break;
        case Precision::Bf16: own = r.bf16_flops; break;
      }
      return own > 0 ? format_flop_rate(own) : std::string("-");
    });
  }
  for (Precision precision : {Precision::Fp32, Precision::Fp16, Precision::Bf16}) {
    row(std::string("ridge point, ") + precision_name(precision), [&](const Roofs& r) {
      return r.bandwidth > 0 && r.flops(precision) > 0 ? format_number(r.ridge_point(precision)) + " FLOP/B" : std::string("-");
    });
  }
  out << table.str() << "\n";
  for (const auto& [name, roofs] : sets) {
    if (*roofs) out << "  " << name << ": " << (*roofs)->source << "\n";
  }
  if (spec.machine) {
    out << "  machine: " << spec.machine->hostname << ", " << spec.machine->cpu_model << ", " << spec.machine->threads
        << " threads\n";
  }
  if (spec.measured && spec.measured->measured_at > 0) {
    out << "  measured roofs: " << spec.measured->age_and_spread(std::time(nullptr)) << "\n";
  }
  if (spec.cache_bytes > 0) out << "  last-level cache: " << format_bytes(spec.cache_bytes) << "\n";
  out << "  An op whose FLOP/B is below the ridge point is held to the bandwidth roof; above it, to the compute roof.\n";
  // What the prediction model adds to the roofs (decodelab predict).
  auto costs = [&](const char* origin, const std::optional<FixedCosts>& fixed, const std::optional<CacheLevel>& cache) {
    if (fixed) out << "\n  fixed costs (" << origin << "): " << format_fixed_costs(*fixed) << "\n    " << fixed->source << "\n";
    if (cache) out << "  cache (" << origin << "): " << format_cache(*cache) << "\n    " << cache->source << "\n";
  };
  costs("published", spec.fixed_costs, spec.cache);
  costs("measured", spec.measured_fixed_costs, spec.measured_cache);
  return out.str();
}

std::string format_fixed_costs(const FixedCosts& costs) {
  std::string text = format_seconds(costs.op_overhead) + " per op on the device, " + format_seconds(costs.host_launch) +
                     " per launch on the host, " + format_seconds(costs.sync_round_trip) +
                     " per device-to-host read round trip";
  if (costs.parallel_region > 0) text += ", " + format_seconds(costs.parallel_region) + " per parallel region";
  if (costs.host_link_bandwidth > 0) text += ", host link " + format_bandwidth(costs.host_link_bandwidth);
  return text;
}

std::string format_cache(const CacheLevel& cache) {
  std::string text = format_number(cache.bytes / (1024.0 * 1024.0)) + " MiB at " + format_bandwidth(cache.bandwidth);
  if (cache.beyond.empty()) return text;
  text += "; beyond it, of the bytes reused after";
  for (size_t i = 0; i < cache.beyond.size(); ++i) {
    text += (i ? ", " : " ") + format_bytes(cache.beyond[i].reuse_bytes) + " " +
            format_number(std::round(100 * cache.beyond[i].resident)) + "% resident";
  }
  return text;
}

std::string format_console(const RunAnalysis& analysis, size_t max_rows) {
  std::ostringstream out;
  out << "device  " << analysis.device << " (" << analysis.backend << ")";
  if (!analysis.model.name.empty()) out << " · " << analysis.model.name;
  if (!analysis.dtype.empty()) out << " " << analysis.dtype;
  out << "\n        " << roofs_line(analysis) << "\n\n";
  out << analysis.summary << "\n";
  for (const std::string& note : analysis.notes) out << "note: " << note << "\n";
  out << "\n";

  // Device wall (busy + idle) is what a phase took; host time, the host's clock inside its
  // ranges, is only the enqueue time when the device runs behind the host.
  TextTable phases({"phase", "steps", "device wall", "device busy", "idle", "gaps", "syncs", "ops", "host time", "% roof",
                    "limiter"});
  for (const PhaseStats& phase : analysis.phases) {
    const TimelineStats& timeline = phase.timeline;
    phases.add({phase_name(phase.phase), std::to_string(phase.steps), format_seconds(timeline.device_seconds()),
                format_seconds(timeline.busy_seconds), format_percent(timeline.idle_fraction()), std::to_string(timeline.gaps),
                std::to_string(timeline.syncs), std::to_string(timeline.ops), format_seconds(timeline.span_seconds),
                format_percent(phase.point.roof_fraction()), limiter_cell(phase.limiter, phase.near)});
  }
  out << phases.str() << "\n";

  const std::vector<std::string> work_header = {"count", "time", "share", "FLOPs", "bytes", "FLOP/B", "achieved",
                                                "bandwidth", "% roof", "limiter"};
  std::vector<std::string> header = {"phase · category", "roof"};
  header.insert(header.end(), work_header.begin(), work_header.end());
  TextTable categories(header);
  for (size_t i = 0; i < analysis.categories.size() && i < max_rows; ++i) {
    const OpGroup& group = analysis.categories[i];
    std::vector<std::string> row = {std::string(phase_name(group.phase)) + " · " + op_category_name(group.category),
                                    group.precision};
    const std::vector<std::string> cells = work_cells(group);
    row.insert(row.end(), cells.begin(), cells.end());
    categories.add(row);
  }
  out << categories.str();
  if (analysis.categories.size() > max_rows) out << "  (" << analysis.categories.size() - max_rows << " more rows in ops.csv)\n";
  out << "\n";

  header[0] = "top ops";
  TextTable top(header);
  for (size_t i = 0; i < analysis.top_ops.size() && i < max_rows; ++i) {
    const OpGroup& group = analysis.top_ops[i];
    std::string name = std::string(phase_name(group.phase)) + " · " + group.name;
    if (!group.label.empty()) name += " " + group.label;
    std::vector<std::string> row = {name, group.precision};
    const std::vector<std::string> cells = work_cells(group);
    row.insert(row.end(), cells.begin(), cells.end());
    top.add(row);
  }
  out << top.str();
  return out.str();
}

std::string ops_csv(const std::vector<LabelledRun>& runs) {
  std::string out =
      "run,phase,category,precision,count,seconds,share_of_device_time,flops,bytes,intensity,achieved_flops_per_s,"
      "achieved_bytes_per_s,compute_fraction,memory_fraction,roof_fraction,limiter,near_limiter\n";
  for (const LabelledRun& run : runs) {
    for (const OpGroup& group : run.analysis->categories) {
      const RooflinePoint& point = group.point;
      const std::vector<std::string> fields = {
          csv_field(run.label), phase_name(group.phase), op_category_name(group.category), group.precision,
          std::to_string(point.count), csv_number(point.seconds), csv_number(group.share_of_device_time),
          csv_number(point.flops), csv_number(point.bytes), csv_number(point.intensity()),
          csv_number(point.achieved_flops()), csv_number(point.achieved_bandwidth()),
          csv_number(point.compute_fraction()), csv_number(point.memory_fraction()), csv_number(point.roof_fraction()),
          limiter_name(group.limiter), group.near ? limiter_name(*group.near) : ""};
      for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
      out += "\n";
    }
  }
  return out;
}

nlohmann::json report_json(const std::vector<LabelledRun>& runs) {
  nlohmann::json json = {{"schema", "decodelab-report"}, {"schema_version", RunAnalysis::kSchemaVersion}};
  json["runs"] = nlohmann::json::array();
  for (const LabelledRun& run : runs) {
    nlohmann::json entry = {{"label", run.label}, {"result", to_json(*run.analysis)}};
    if (!run.headline.empty()) {
      nlohmann::json medians = nlohmann::json::object(), intervals = nlohmann::json::object();
      for (const HeadlineFigure& figure : run.headline) {
        medians[figure.key] = figure.estimate.median;
        intervals[figure.key] = to_json(figure.estimate);
      }
      entry["metrics"] = medians;
      entry["intervals"] = intervals;
    }
    if (run.machine) entry["machine"] = to_json(*run.machine);
    json["runs"].push_back(entry);
  }
  return json;
}

}  // namespace decodelab
