// `decodelab sweep SCENARIO`: any workload key, and dtype, backend and threads, given as a
// list is swept (`--threads 1,2` and `--backend cpu,cuda` too); every combination is
// validated first, then run, one table row each (the swept values first, the decode
// phase's roofline reading last; -o csv|json|jsonl prints the rows' JSON instead). The --json file is rewritten after every
// row; Ctrl-C stops the run in progress between its repeats (every completed row kept, "complete":
// false) and --resume runs only what is missing; --report draws the measured points over the
// predicted curve (lab/report/sweep_report.h). With --slurm the points go to a Slurm
// job array instead (lab/cluster/slurm_submit.h) and `decodelab collect` gathers their rows.
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/base/errors.h"
#include "lab/cli/commands.h"
#include "lab/run/interrupt.h"
#include "lab/output_files.h"
#include "lab/paths.h"
#include "lab/run/results_file.h"
#include "lab/report/row_output.h"
#include "lab/report/run_report.h"
#include "lab/run/runner.h"
#include "lab/scenario/scenario.h"
#include "lab/cluster/slurm_submit.h"
#include "lab/run/sweep.h"
#include "lab/report/sweep_report.h"
#include "lab/run/sweep_row.h"
#include "profiling/measure/default_roofs.h"

namespace decodelab {

namespace {

// "[1,2,4]": a list on the command line becomes the swept key's YAML list.
template <typename T>
std::string yaml_list(const std::vector<T>& values) {
  std::string text;
  for (const T& value : values) {
    std::ostringstream item;
    item << value;
    text += (text.empty() ? "" : ", ") + item.str();
  }
  return "[" + text + "]";
}

// The backend a point runs on, reopened only when its kind or thread count changes (the
// swept run settings are the outermost keys, so each is opened once), with its context: the
// machine check and the roofs belong to a backend and a thread count, so a new one starts
// empty and its first point checks the machine and reads the roofs again.
class PointBackends {
 public:
  Backend& open(const Scenario& scenario, const RunOptions& options) {
    const BackendKind kind = choose_backend(scenario.backend, options.backend);
    const int threads = kernel_threads(scenario, options);
    if (!backend_ || kind != kind_ || threads != threads_) {
      backend_.reset();  // one at a time
      backend_ = open_backend(scenario, options);
      context_ = SweepContext{};
      kind_ = kind;
      threads_ = threads;
    }
    return *backend_;
  }
  SweepContext& context() { return context_; }

 private:
  std::unique_ptr<Backend> backend_;
  BackendKind kind_ = BackendKind::Cpu;
  int threads_ = 0;
  SweepContext context_;
};

std::string backend_name(BackendKind kind) { return kind == BackendKind::Cuda ? "cuda" : "cpu"; }

}  // namespace

void execute_sweep(SweepArguments arguments) {
  arguments.slurm.quiet = arguments.quiet;
  // Several --backend or --threads values sweep like a list in the file (run settings first).
  RunSettings settings{"", 0, arguments.check_numerics};
  if (arguments.backends.size() > 1) arguments.assignments.push_back("backend=" + yaml_list(arguments.backends));
  if (arguments.backends.size() == 1) settings.backend = arguments.backends.front();
  if (arguments.threads.size() > 1) arguments.assignments.push_back("threads=" + yaml_list(arguments.threads));
  if (arguments.threads.size() == 1) settings.threads = arguments.threads.front();

  const auto file = resolve_scenario_argument(arguments.scenario);
  YAML::Node document = read_scenario_document(file);
  std::vector<ScenarioOverride> overrides;
  for (const std::string& assignment : arguments.assignments) {
    overrides.push_back(parse_override(assignment));
    apply_override(document, overrides.back(), file);
  }
  const std::vector<SweepPoint> points = expand_sweep(document, file.string());
  std::vector<Scenario> scenarios;
  for (const SweepPoint& point : points) scenarios.push_back(parse_scenario(point.scenario, file, overrides));
  if (arguments.slurm.enabled) {
    submit_run(sweep_run_plan(file, points, scenarios, arguments.assignments, settings), arguments.slurm);
    return;
  }
  if (arguments.resume && arguments.json_file.empty())
    throw InputError("--resume", 0, "", "needs --json FILE: the results file to resume");
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");
  if (!arguments.report_dir.empty()) check_output_directory(arguments.report_dir, "--report");

  RunOptions options;
  if (!settings.backend.empty()) options.backend = settings.backend == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
  options.threads = settings.threads;
  options.check_numerics = arguments.check_numerics;
  const Progress progress(progress_mode(arguments.quiet));
  // Every backend the sweep needs exists before any point runs (an absent GPU fails now).
  for (const Scenario& scenario : scenarios) choose_backend(scenario.backend, options.backend);
  PointBackends backends;

  ResultsFile results(arguments.json_file, "sweep");
  if (arguments.resume) results.load_existing();
  const StopRequests stop;
  std::string table = sweep_table_header(points.front());
  for (size_t i = 0; i < scenarios.size() && !stop.requested(); ++i) {
    const std::string label = "[" + std::to_string(i + 1) + "/" + std::to_string(scenarios.size()) + "] " +
                              (points[i].label.empty() ? scenarios[i].name : points[i].label);
    const BackendKind kind = choose_backend(scenarios[i].backend, options.backend);
    const nlohmann::json key = sweep_row_key(points[i], scenarios[i], backend_name(kind));
    if (std::optional<nlohmann::json> previous = results.take(key)) {
      table += sweep_table_row(points[i], scenarios[i], *previous);
      results.add(std::move(*previous));
      progress.finished(label + ": reused from " + arguments.json_file);
      continue;
    }
    progress.status(label);
    Backend& backend = backends.open(scenarios[i], options);
    SweepContext& context = backends.context();
    if (!context.machine) progress.clear();  // the machine check's warning starts on its own line
    std::optional<SweepRow> point_row;
    try {
      point_row.emplace(run_sweep_point(points[i], scenarios[i], options, backend, context));
    } catch (const RepeatAbandoned&) {
      progress.finished(label + ": stopped; the point in progress is dropped");
      break;
    }
    SweepRow& row = *point_row;
    table += sweep_table_row(points[i], scenarios[i], row.result, row.json);
    const RunMetrics& metrics = row.result.metrics;
    char outcome[160];
    std::snprintf(outcome, sizeof outcome, ": done, decode %.1f tok/s %s (%d repeats, %s)",
                  metrics.decode_tokens_per_s.median, format_interval(metrics.decode_tokens_per_s).c_str(),
                  metrics.repeats, row.result.stopped_because.c_str());
    progress.finished(label + outcome);
    if (row.json.contains("suspect")) {
      progress.clear();
      std::fprintf(stderr, "decodelab: warning: %s: %s\n", label.c_str(), row.json["suspect"].get<std::string>().c_str());
    }
    results.add(std::move(row.json));
  }
  progress.clear();
  // -q silences progress and the table; rows asked for with -o are printed all the same.
  if (!arguments.quiet || arguments.format != RowFormat::Markdown) {
    if (arguments.format == RowFormat::Markdown) {
      std::fputs((table + run_table_legend(scenarios.front().repeats.target_ci)).c_str(), stdout);
    } else {
      std::fputs(format_rows(results.rows(), arguments.format).c_str(), stdout);
    }
    std::fflush(stdout);
  }
  if (results.rows().size() < scenarios.size()) {
    std::string message = "stopped after " + std::to_string(results.rows().size()) + " of " +
                          std::to_string(scenarios.size()) + " rows";
    if (!arguments.json_file.empty()) {
      message += "; the completed rows are in " + arguments.json_file +
                 " (\"complete\": false): rerun with --resume to run the rest";
    }
    throw Interrupted(stop.signal_number(), message);
  }
  results.finish();
  if (!arguments.report_dir.empty()) {
    // The curve from the roofs the last points were read against (every row reused: the calibration).
    Backend& backend = backends.open(scenarios.back(), options);
    SweepContext& context = backends.context();
    if (!context.spec) context.spec = default_device_spec(backend, settings.threads);
    write_sweep_report(arguments.report_dir, "decodelab sweep: " + file.stem().string(), table,
                       points.front().values.empty() ? "" : points.front().values.front().first,
                       sweep_series(points, scenarios, results.rows(), *context.spec), *context.spec);
  }
  if (arguments.resume && !arguments.quiet)
    std::fprintf(stderr, "decodelab: %s\n", results.resume_note(scenarios.size()).c_str());
}

}  // namespace decodelab
