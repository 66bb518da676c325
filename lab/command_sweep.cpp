// `decodelab sweep SCENARIO`: any workload key given as a list is swept; every
// combination is validated first, then run, one table row each (the swept values first,
// the decode phase's roofline reading last). The --json file is rewritten after every
// row; Ctrl-C stops after the run in progress (every completed row kept, "complete":
// false) and --resume runs only what is missing; --report draws the measured points over the
// predicted curve (lab/sweep_report.h). With --slurm the points go to a Slurm
// job array instead (lab/slurm_submit.h) and `decodelab collect` gathers their rows.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/errors.h"
#include "lab/commands.h"
#include "lab/interrupt.h"
#include "lab/output_files.h"
#include "lab/paths.h"
#include "lab/results_file.h"
#include "lab/run_report.h"
#include "lab/runner.h"
#include "lab/scenario.h"
#include "lab/slurm_submit.h"
#include "lab/sweep.h"
#include "lab/sweep_report.h"
#include "lab/sweep_row.h"
#include "profiling/roof_measure.h"

namespace decodelab {

namespace {

struct SweepArguments {
  std::string scenario;
  std::vector<std::string> assignments;
  std::string backend;
  int threads = 0;
  std::string json_file;
  std::string report_dir;
  bool resume = false;
  bool check_numerics = false;
  bool quiet = false;
  SlurmRequest slurm;
};

void execute_sweep(const SweepArguments& arguments) {
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
    const RunSettings settings{arguments.backend, arguments.threads, arguments.check_numerics};
    submit_run(sweep_run_plan(file, points, scenarios, arguments.assignments, settings), arguments.slurm);
    return;
  }
  if (arguments.resume && arguments.json_file.empty())
    throw InputError("--resume", 0, "", "needs --json FILE: the results file to resume");
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");
  if (!arguments.report_dir.empty()) check_output_directory(arguments.report_dir, "--report");

  RunOptions options;
  if (!arguments.backend.empty()) options.backend = arguments.backend == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
  options.threads = arguments.threads;
  options.check_numerics = arguments.check_numerics;
  const bool progress = !arguments.quiet && ::isatty(::fileno(stderr));
  // One backend for every point; the machine checked once, before the first point is timed;
  // then the roofs each point's decode phase is read against.
  std::unique_ptr<Backend> backend = open_backend(scenarios.front(), options);
  SweepContext context;

  ResultsFile results(arguments.json_file, "sweep");
  if (arguments.resume) results.load_existing();
  const StopRequests stop;
  std::string table = sweep_table_header(points.front());
  size_t reused = 0;
  for (size_t i = 0; i < scenarios.size() && !stop.requested(); ++i) {
    const nlohmann::json key = sweep_row_key(points[i], scenarios[i], backend->name());
    if (std::optional<nlohmann::json> previous = results.previous(key)) {
      table += sweep_table_row(points[i], scenarios[i], *previous);
      results.add(std::move(*previous));
      ++reused;
      continue;
    }
    if (progress) std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", i + 1, scenarios.size(), points[i].label.c_str());
    if (progress && !context.machine) std::fputs("\r\033[K", stderr);  // a warning starts on its own line
    SweepRow row = run_sweep_point(points[i], scenarios[i], options, *backend, context);
    table += sweep_table_row(points[i], scenarios[i], row.result, row.json);
    results.add(std::move(row.json));
  }
  if (progress) std::fputs("\r\033[K", stderr);
  if (!arguments.quiet) {
    std::fputs((table + run_table_legend(scenarios.front().repeats.target_ci)).c_str(), stdout);
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
    // The curve from the roofs the points were read against (every row reused: the cached ones).
    if (!context.spec) context.spec = default_device_spec(*backend, arguments.threads);
    write_sweep_report(arguments.report_dir, "decodelab sweep: " + file.stem().string(), table,
                       points.front().values.empty() ? "" : points.front().values.front().first,
                       sweep_series(points, scenarios, results.rows(), *context.spec), *context.spec);
  }
  if (reused > 0 && !arguments.quiet) {
    std::fprintf(stderr, "decodelab: %zu of %zu rows reused from %s\n", reused, scenarios.size(),
                 arguments.json_file.c_str());
  }
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto arguments = std::make_shared<SweepArguments>();
  CLI::App* command = app.add_subcommand("sweep", "Run every combination of the workload keys given as lists");
  command->add_option("scenario", arguments->scenario, "Scenario file, or a name under scenarios/")->required();
  command->add_option("--set", arguments->assignments, "Override a scenario key (a list sweeps it): key.path=value")
      ->allow_extra_args(false);
  command->add_option("--backend", arguments->backend, "Override the scenario's backend")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  command->add_option("--threads", arguments->threads, "CPU kernel threads (0 = every core)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--json", arguments->json_file,
                      "Write one result per combination as a JSON list; while rows remain (interrupted), "
                      "{\"complete\": false, \"rows\": [...]}, rewritten after every row");
  command->add_flag("--resume", arguments->resume,
                    "Reuse the rows the --json file already holds for the same scenario, swept values and backend; "
                    "run only the rest");
  command->add_option("--report", arguments->report_dir,
                      "Write the sweep's page: the table, and measured decode tok/s over the predicted curve");
  command->add_flag("--check-numerics", arguments->check_numerics,
                    "After each run's repeats, one more generation checking every op's output for NaN/Inf");
  command->add_flag("--quiet,-q", arguments->quiet, "Print nothing");
  add_slurm_options(*command, arguments->slurm);
  for (const char* here_only : {"--json", "--resume", "--report"})
    command->get_option("--slurm")->excludes(command->get_option(here_only));  // collect writes the rows
  command->callback([arguments] {
    arguments->slurm.quiet = arguments->quiet;
    execute_sweep(*arguments);
  });
}

}  // namespace decodelab
