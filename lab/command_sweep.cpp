// `decodelab sweep SCENARIO`: any workload key given as a list is swept; every
// combination is validated first, then run, one table row each (the swept values first).
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine/errors.h"
#include "lab/commands.h"
#include "lab/output_files.h"
#include "lab/paths.h"
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
  bool quiet = false;
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
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");

  RunOptions options;
  if (!arguments.backend.empty()) options.backend = arguments.backend == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
  options.threads = arguments.threads;
  const bool progress = !arguments.quiet && ::isatty(::fileno(stderr));
  // One backend for every point, and the roofs each point's decode phase is read against.
  std::unique_ptr<Backend> backend = open_backend(scenarios.front(), options);
  const DeviceSpec spec = default_device_spec(*backend, arguments.threads);

  nlohmann::json rows = nlohmann::json::array();
  std::string table;
  for (size_t i = 0; i < scenarios.size(); ++i) {
    if (progress) std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", i + 1, scenarios.size(), points[i].label.c_str());
    Trace trace;
    trace.metadata().backend = backend->name();
    trace.metadata().device = backend->device_description();
    trace.metadata().dtype = dtype_name(scenarios[i].dtype);
    trace.metadata().model = ModelShape::of(scenarios[i].model_config);
    trace.metadata().device_spec = spec;
    options.sink = &trace;
    const RunResult result = run_scenario(scenarios[i], options, backend.get());
    const RunAnalysis analysis = analyze(trace, &spec);
    const PhaseStats* decode = analysis.phase(Phase::Decode);
    char reading[160] = "| - | - | - |";
    if (decode) {
      std::snprintf(reading, sizeof reading, "| %.2f | %s | %.0f%% |", decode->point.intensity(),
                    limiter_name(decode->limiter), 100 * decode->point.roof_fraction());
    }
    std::string swept;
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [key, value] : points[i].values) {
      swept += "| " + value + " ";
      values[key] = value;
    }
    if (table.empty()) {
      std::string header = run_table_header();
      std::string prefix, rule;
      for (const auto& [key, value] : points[i].values) {
        prefix += "| " + key + " ";
        rule += "| ---: ";
      }
      const size_t first_line_end = header.find('\n');
      // The decode phase's roofline reading goes at the end of each row.
      std::string first = header.substr(0, first_line_end);
      std::string second = header.substr(first_line_end + 1);
      second = second.substr(0, second.find('\n'));
      table = prefix + first + " decode FLOP/B | limiter | % of roof |\n" + rule + second + " ---: | --- | ---: |\n";
    }
    std::string row_text = run_table_row(scenarios[i], result);
    while (!row_text.empty() && row_text.back() == '\n') row_text.pop_back();
    if (!row_text.empty() && row_text.back() == '|') row_text.pop_back();
    table += swept + row_text + reading + "\n";
    nlohmann::json row = run_result_json(scenarios[i], result);
    row["swept"] = values;
    if (decode) {
      row["decode_roofline"] = {{"intensity_flop_per_byte", decode->point.intensity()},
                                {"limiter", limiter_name(decode->limiter)},
                                {"roof_fraction", decode->point.roof_fraction()},
                                {"ridge_point", analysis.roofs.ridge_point(Precision::Fp16)}};
    }
    rows.push_back(row);
  }
  if (progress) std::fputs("\r\033[K", stderr);
  if (!arguments.json_file.empty()) write_file_atomically(arguments.json_file, rows.dump(2) + "\n");
  if (!arguments.quiet) {
    std::fputs(table.c_str(), stdout);
    std::fflush(stdout);
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
  command->add_option("--json", arguments->json_file, "Write one result per combination as a JSON list");
  command->add_flag("--quiet,-q", arguments->quiet, "Print nothing");
  command->callback([arguments] { execute_sweep(*arguments); });
}

}  // namespace decodelab
