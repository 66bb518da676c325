// `decodelab sweep SCENARIO`: any workload key given as a list is swept; every
// combination is validated first, then run, one table row each (the swept values first,
// the decode phase's roofline reading last). The --json file is rewritten after every
// row; Ctrl-C stops after the run in progress (every completed row kept, "complete":
// false) and --resume runs only what is missing.
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
#include "lab/sweep.h"
#include "profiling/analysis.h"
#include "profiling/roof_measure.h"
#include "profiling/trace.h"

namespace decodelab {

namespace {

struct SweepArguments {
  std::string scenario;
  std::vector<std::string> assignments;
  std::string backend;
  int threads = 0;
  std::string json_file;
  bool resume = false;
  bool check_numerics = false;
  bool quiet = false;
};

// The table: the swept keys' columns, run_table_header()'s, then the decode phase's
// roofline reading.
std::string sweep_table_header(const SweepPoint& point) {
  const std::string header = run_table_header();
  std::string prefix, rule;
  for (const auto& [key, value] : point.values) {
    prefix += "| " + key + " ";
    rule += "| ---: ";
  }
  const size_t first_line_end = header.find('\n');
  std::string first = header.substr(0, first_line_end);
  std::string second = header.substr(first_line_end + 1);
  second = second.substr(0, second.find('\n'));
  return prefix + first + " decode FLOP/B | limiter | % of roof |\n" + rule + second + " ---: | --- | ---: |\n";
}

// One table line from a row's run and its decode_roofline (null: no decode phase).
std::string sweep_table_row(const std::string& swept, const Scenario& scenario, const RunResult& result,
                            const nlohmann::json& decode_roofline) {
  char reading[160] = "| - | - | - |";
  if (decode_roofline.is_object()) {
    const std::string above = decode_roofline.value("above_roof", std::string());
    std::snprintf(reading, sizeof reading, "| %.2f | %s | %.0f%%%s |",
                  decode_roofline.value("intensity_flop_per_byte", 0.0), decode_limiter_cell(decode_roofline).c_str(),
                  100 * decode_roofline.value("roof_fraction", 0.0), above.empty() ? "" : (" (" + above + ")").c_str());
  }
  std::string row_text = run_table_row(scenario, result);
  while (!row_text.empty() && row_text.back() == '\n') row_text.pop_back();
  if (!row_text.empty() && row_text.back() == '|') row_text.pop_back();
  return swept + row_text + reading + "\n";
}

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
  if (arguments.resume && arguments.json_file.empty())
    throw InputError("--resume", 0, "", "needs --json FILE: the results file to resume");
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");

  RunOptions options;
  if (!arguments.backend.empty()) options.backend = arguments.backend == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
  options.threads = arguments.threads;
  options.check_numerics = arguments.check_numerics;
  const bool progress = !arguments.quiet && ::isatty(::fileno(stderr));
  // One backend for every point; the machine checked once, before the first point is timed;
  // then the roofs each point's decode phase is read against.
  std::unique_ptr<Backend> backend = open_backend(scenarios.front(), options);
  std::optional<MachineState> machine;
  std::optional<DeviceSpec> spec;

  ResultsFile results(arguments.json_file, "sweep");
  if (arguments.resume) results.load_existing();
  const StopRequests stop;
  std::string table = sweep_table_header(points.front());
  size_t reused = 0;
  for (size_t i = 0; i < scenarios.size() && !stop.requested(); ++i) {
    std::string swept;
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [key, value] : points[i].values) {
      swept += "| " + value + " ";
      values[key] = value;
    }
    // A row is the same work when the scenario (swept values included) and the backend are.
    const nlohmann::json key = {{"scenario", scenario_to_json(scenarios[i])}, {"swept", values}, {"backend", backend->name()}};
    if (std::optional<nlohmann::json> previous = results.previous(key)) {
      table += sweep_table_row(swept, scenarios[i], run_summary_from_json(*previous),
                               previous->value("decode_roofline", nlohmann::json()));
      results.add(std::move(*previous));
      ++reused;
      continue;
    }
    if (progress) std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", i + 1, scenarios.size(), points[i].label.c_str());
    Trace trace;
    options.sink = &trace;
    options.check_machine = !machine;
    if (progress && !machine) std::fputs("\r\033[K", stderr);  // a warning starts on its own line
    RunResult result = run_scenario(scenarios[i], options, backend.get());
    if (!machine) machine = result.machine.value_or(MachineState{});
    result.machine = machine;
    if (!spec) spec = default_device_spec(*backend, arguments.threads, nullptr, {}, &*machine);
    trace.metadata().backend = backend->name();
    trace.metadata().device = backend->device_description();
    trace.metadata().dtype = dtype_name(scenarios[i].dtype);
    trace.metadata().model = ModelShape::of(scenarios[i].model_config);
    trace.metadata().device_spec = *spec;
    const RunAnalysis analysis = analyze_checking_roofs(trace, *spec, *backend, arguments.threads, *machine);
    nlohmann::json row = sweep_row_json(scenarios[i], result, analysis, values);
    table += sweep_table_row(swept, scenarios[i], result, row.value("decode_roofline", nlohmann::json()));
    results.add(std::move(row));
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
  command->add_flag("--check-numerics", arguments->check_numerics,
                    "After each run's repeats, one more generation checking every op's output for NaN/Inf");
  command->add_flag("--quiet,-q", arguments->quiet, "Print nothing");
  command->callback([arguments] { execute_sweep(*arguments); });
}

}  // namespace decodelab
