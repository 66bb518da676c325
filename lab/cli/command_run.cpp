// `decodelab run SCENARIO`: validate the scenario and the output paths, run it, then
// print one table row (or the row as -o csv|json|jsonl, lab/report/row_output.h; --top N adds
// the top ops) and write the requested files. The files are staged and renamed only
// after everything succeeded, so a failed run leaves none of them behind.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/errors.h"
#include "lab/scenario/byte_size.h"
#include "lab/cli/commands.h"
#include "lab/npy.h"
#include "lab/output_files.h"
#include "lab/paths.h"
#include "lab/predict/predict.h"
#include "lab/predict/row_prediction.h"
#include "lab/report/row_output.h"
#include "lab/report/run_report.h"
#include "lab/run/runner.h"
#include "lab/scenario/scenario.h"
#include "lab/report/top_ops_table.h"
#include "profiling/model/analysis.h"
#include "profiling/trace/chrome_trace.h"
#include "profiling/report/report.h"
#include "profiling/measure/default_roofs.h"
#include "profiling/trace.h"

namespace decodelab {

void execute_run(const RunArguments& arguments) {
  const Scenario scenario = load_scenario(resolve_scenario_argument(arguments.scenario), arguments.assignments);
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");
  if (!arguments.logits_file.empty()) check_output_path(arguments.logits_file, "--dump-logits");
  if (!arguments.trace_file.empty()) check_output_path(arguments.trace_file, "--trace");
  if (!arguments.report_dir.empty()) check_output_directory(arguments.report_dir, "--report");

  RunOptions options;
  if (!arguments.backend.empty()) options.backend = arguments.backend == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
  options.threads = arguments.threads;
  options.cuda_graphs = arguments.cuda_graphs;
  if (!arguments.max_memory.empty()) {
    options.max_memory_bytes = parse_byte_size(arguments.max_memory);
    if (!options.max_memory_bytes) {
      throw InputError("--max-memory", 0, arguments.max_memory, "expected a size such as 8GiB, 512MiB or 1000000");
    }
  }
  options.progress = progress_mode(arguments.quiet);
  options.check_numerics = arguments.check_numerics;

  // The trace sees every timed repeat; it names what ran where, never the bugs.
  const bool profiled = !arguments.trace_file.empty() || !arguments.report_dir.empty() || arguments.top > 0;
  check_memory_cap(scenario, options);
  std::unique_ptr<Backend> backend = open_backend(scenario, options);
  check_scenario_fits(scenario, *backend, options.max_memory_bytes);
  // Is the machine quiet enough to time on? Checked once the scenario is loaded, said on
  // stderr when not, recorded in the JSON and the report.
  options.check_machine = true;
  Trace trace;
  if (profiled) options.sink = &trace;
  RunResult result = run_scenario(scenario, options, backend.get());
  // After the repeats too: work that started as they ended still tells on the figures.
  result.after = check_machine_for_timing(*backend, kernel_threads(scenario, options), /*warn=*/false, /*notes=*/false);
  if (result.after->contended && !(result.machine && result.machine->contended) &&
      !(result.during && result.during->contended)) {
    mark_if_contended(result, scenario.name + "'s figures");
  }
  MachineState machine = result.machine.value_or(MachineState{});
  // Contention seen during or after the repeats counts too: a calibration made now records it.
  if (result.contended() && !machine.contended) {
    machine.contended = true;
    if (result.during && result.during->contended) machine.findings.push_back(result.during->finding);
  }
  DeviceSpec spec;
  if (profiled) {
    spec = default_device_spec(*backend, kernel_threads(scenario, options), nullptr, {}, &machine);
    trace.metadata().backend = backend->name();
    trace.metadata().device = backend->device_description();
    trace.metadata().dtype = dtype_name(scenario.dtype);
    trace.metadata().model = ModelShape::of(scenario.model_config);
    trace.metadata().device_spec = spec;
  }

  nlohmann::json result_json = run_result_json(scenario, result);
  // Far below what this machine's roofs predict (calibrated ones only: calibrating here would
  // cost more than the run): suspect, said beside the figure and on stderr.
  if (const std::optional<DeviceSpec> calibrated = calibrated_device_spec(*backend, kernel_threads(scenario, options));
      calibrated && result.metrics.decode_steps > 0) {
    try {
      const double predicted = predict_scenario(scenario, profiled ? spec : *calibrated).metrics.decode_tokens_per_s;
      result_json["predicted_decode_tokens_per_s"] = predicted;
      const std::string suspect =
          suspect_below_prediction("decode tok/s", result.metrics.decode_tokens_per_s.median, predicted);
      if (!suspect.empty()) {
        result_json["suspect"] = suspect;
        std::fprintf(stderr, "decodelab: warning: %s\n", suspect.c_str());
      }
    } catch (const InputError&) {  // a device without fixed costs has no prediction
    }
  }

  StagedOutputs outputs;
  if (!arguments.json_file.empty()) outputs.stage(arguments.json_file, result_json.dump(2) + "\n");
  if (!arguments.logits_file.empty()) {
    const int64_t requests = scenario.workload.requests;
    const int64_t vocab = scenario.model_config.vocab_size;
    if (static_cast<int64_t>(result.last_logits.size()) != requests * vocab) {
      throw std::runtime_error("the engine returned " + std::to_string(result.last_logits.size()) +
                               " logits, expected requests × vocab = " + std::to_string(requests * vocab));
    }
    outputs.stage(arguments.logits_file, npy_bytes(result.last_logits.data(), {requests, vocab}));
  }
  std::optional<RunAnalysis> analysis;
  if (profiled) {
    analysis = analyze(trace, &spec);
    warn_if_roofs_suspect(*analysis, scenario.name);
    if (arguments.top > AnalysisOptions{}.top_ops) analysis = analysis_with_top_ops(trace, spec, arguments.top);
  }
  if (!arguments.trace_file.empty()) outputs.stage(arguments.trace_file, chrome_trace_json(trace).dump() + "\n");
  // The report before the commit: if it fails, no result file claims a complete run.
  if (!arguments.report_dir.empty()) {
    write_report_directory(arguments.report_dir, {{scenario.name, &*analysis, headline_figures(result), &machine}},
                           "decodelab run: " + scenario.name);
  }
  outputs.commit();

  // -q silences progress and the table; rows asked for with -o are printed all the same.
  if (arguments.quiet && arguments.format == RowFormat::Markdown) return;
  if (arguments.format != RowFormat::Markdown) {
    std::fputs(format_rows({result_json}, arguments.format).c_str(), stdout);
  } else {
    std::fputs((run_table_header() + run_table_row(scenario, result) + run_table_legend(scenario.repeats.target_ci)).c_str(),
               stdout);
    if (analysis) {
      std::fputs(("\n" + analysis->summary + "\n").c_str(), stdout);
      // Points above their roof, with why (in cache, or the roofs suspect), beside the summary.
      for (const std::string& note : analysis->notes) std::printf("note: %s\n", note.c_str());
    }
  }
  if (arguments.top > 0) {  // on stderr beside machine-readable rows, so that stdout stays parseable
    const std::string table = "\n" + top_ops_table(*analysis, arguments.top, "top ops by device time");
    std::fputs(table.c_str(), arguments.format == RowFormat::Markdown ? stdout : stderr);
  }
  std::fflush(stdout);
}

}  // namespace decodelab
