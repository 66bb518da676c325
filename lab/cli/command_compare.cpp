// `decodelab compare SCENARIO`: the scenario as written and its fixed twin, alternated on
// one backend; both rows, the slowdown, and where the device time went per category
// (-o csv|json|jsonl: the comparison's JSON as one row; --top N: each side's top ops).
#include <cstdio>
#include <string>
#include <vector>

#include "engine/base/errors.h"
#include "lab/scenario/byte_size.h"
#include "lab/cli/commands.h"
#include "lab/run/compare.h"
#include "lab/report/compare_page.h"
#include "lab/output_files.h"
#include "lab/paths.h"
#include "lab/report/row_output.h"
#include "lab/report/top_ops_table.h"
#include "profiling/trace/chrome_trace.h"
#include "profiling/report/report.h"

namespace decodelab {

void execute_compare(const CompareArguments& arguments) {
  const Scenario scenario = load_scenario(resolve_scenario_argument(arguments.scenario), arguments.assignments);
  if (!scenario.bugs.any())
    throw InputError(scenario.file.string(), 0, "bugs", "compare needs at least one bug switched on");
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");
  if (!arguments.report_dir.empty()) check_output_directory(arguments.report_dir, "--report");
  const std::string fixed_trace = arguments.trace_prefix + "fixed.trace.json";
  const std::string buggy_trace = arguments.trace_prefix + "buggy.trace.json";
  if (!arguments.trace_prefix.empty()) {
    check_output_path(fixed_trace, "--trace");
    check_output_path(buggy_trace, "--trace");
  }

  CompareOptions options;
  if (!arguments.backend.empty()) options.backend = arguments.backend == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
  options.threads = arguments.threads;
  if (!arguments.max_memory.empty()) {
    options.max_memory_bytes = parse_byte_size(arguments.max_memory);
    if (!options.max_memory_bytes)
      throw InputError("--max-memory", 0, arguments.max_memory, "expected a size such as 8GiB, 512MiB or 1000000");
  }
  options.progress = progress_mode(arguments.quiet);
  options.progress_label = scenario.name;
  options.predict_on = arguments.predict_on;
  reference_devices(options.predict_on, "--predict-on");  // an unknown name fails before any run

  const Comparison comparison = compare_with_fixed_twin(scenario, options);

  StagedOutputs outputs;
  if (!arguments.json_file.empty()) outputs.stage(arguments.json_file, comparison_json(comparison).dump(2) + "\n");
  if (!arguments.trace_prefix.empty()) {
    outputs.stage(fixed_trace, chrome_trace_json(*comparison.fixed.trace).dump() + "\n");
    outputs.stage(buggy_trace, chrome_trace_json(*comparison.buggy.trace).dump() + "\n");
  }
  if (!arguments.report_dir.empty()) {  // before the commit, as in `run`
    write_comparison_report(arguments.report_dir, comparison, "decodelab compare: " + scenario.name, PagePlace::Alone);
  }
  outputs.commit();
  // -q silences progress and the table; rows asked for with -o are printed all the same.
  if (arguments.quiet && arguments.format == RowFormat::Markdown) return;
  if (arguments.format != RowFormat::Markdown) {
    std::fputs(format_rows({comparison_json(comparison)}, arguments.format).c_str(), stdout);
  } else {
    std::fputs(comparison_table(comparison).c_str(), stdout);
  }
  if (arguments.top > 0) {  // on stderr beside machine-readable rows, so that stdout stays parseable
    std::string tables;
    for (const ComparedRun* side : {&comparison.fixed, &comparison.buggy}) {
      const RunAnalysis analysis = analysis_with_top_ops(*side->trace, side->analysis.device_spec, arguments.top);
      tables += "\n" + top_ops_table(analysis, arguments.top,
                                      std::string(side == &comparison.fixed ? "fixed" : "buggy") +
                                          ": top ops by device time (the traced repeat)");
    }
    std::fputs(tables.c_str(), arguments.format == RowFormat::Markdown ? stdout : stderr);
  }
  std::fflush(stdout);
}

}  // namespace decodelab
