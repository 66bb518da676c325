// The --top table (see top_ops_table.h).
#include "lab/report/top_ops_table.h"

#include "profiling/report/text_table.h"
#include "profiling/units.h"

namespace decodelab {

std::string top_ops_table(const RunAnalysis& analysis, size_t rows, const std::string& title) {
  TextTable table({"op", "phase", "calls", "device total", "device %", "device avg", "FLOP/s", "bandwidth",
                   "limiter"});
  for (size_t i = 0; i < analysis.top_ops.size() && i < rows; ++i) {
    const OpGroup& group = analysis.top_ops[i];
    const RooflinePoint& point = group.point;
    table.add({group.label.empty() ? group.name : group.name + " " + group.label, phase_name(group.phase),
               std::to_string(point.count), format_seconds(point.seconds), format_percent(group.share_of_device_time),
               format_seconds(point.mean_seconds()), point.flops > 0 ? format_flop_rate(point.achieved_flops()) : "-",
               format_bandwidth(point.achieved_bandwidth()), limiter_name(group.limiter)});
  }
  std::string out = title + " (device busy " + format_seconds(analysis.timeline.busy_seconds) + ")\n";
  if (table.rows() == 0) return out + "  no op has a device time in this trace\n";
  return out + table.str();
}

RunAnalysis analysis_with_top_ops(const Trace& trace, const DeviceSpec& spec, size_t rows) {
  AnalysisOptions options;
  options.top_ops = rows;
  return analyze(trace, &spec, options);
}

}  // namespace decodelab
