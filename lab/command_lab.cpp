// `decodelab lab`: the five-bug lab, the project's main job. Every scenario under
// scenarios/bugs/ goes through compare (fixed twin vs buggy, alternated), and one table
// says, per bug, how much slower it was and whether that fell in the range the lesson
// documents. --report writes one page for the lab and one report per bug. The --json file
// is rewritten after every bug; Ctrl-C stops after the comparison in progress, keeping
// every completed row ("complete": false), and --resume runs only the bugs still missing.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/errors.h"
#include "lab/commands.h"
#include "lab/compare.h"
#include "lab/lab_table.h"
#include "lab/interrupt.h"
#include "lab/output_files.h"
#include "lab/paths.h"
#include "lab/results_file.h"
#include "profiling/report.h"

namespace decodelab {

namespace fs = std::filesystem;

namespace {

struct LabArguments {
  std::string backend;
  int threads = 0;
  std::string json_file;
  std::string report_dir;
  std::vector<std::string> only;
  std::vector<std::string> assignments;
  bool resume = false;
  bool quiet = false;
};

std::vector<fs::path> lab_scenarios(const std::vector<std::string>& only) {
  const fs::path directory = scenarios_dir() / "bugs";
  std::vector<fs::path> files;
  if (fs::is_directory(directory)) {
    for (const auto& entry : fs::directory_iterator(directory))
      if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  if (!only.empty()) {
    for (const std::string& name : only) {
      if (std::none_of(files.begin(), files.end(), [&](const fs::path& file) { return file.stem() == name; }))
        throw InputError("--only", 0, name, "no scenario of that name under " + directory.string());
    }
    std::erase_if(files, [&](const fs::path& file) {
      return std::find(only.begin(), only.end(), file.stem().string()) == only.end();
    });
  }
  if (files.empty()) throw ResourceError("no lab scenarios found under " + directory.string());
  return files;
}

void execute_lab(const LabArguments& arguments) {
  // Validate everything before any work starts.
  std::vector<Scenario> scenarios;
  for (const fs::path& file : lab_scenarios(arguments.only))
    scenarios.push_back(load_scenario(file, arguments.assignments));
  if (arguments.resume && arguments.json_file.empty())
    throw InputError("--resume", 0, "", "needs --json FILE: the results file to resume");
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");
  if (!arguments.report_dir.empty()) check_output_directory(arguments.report_dir, "--report");

  CompareOptions options;
  if (!arguments.backend.empty()) options.backend = arguments.backend == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
  options.threads = arguments.threads;
  options.show_progress = !arguments.quiet && ::isatty(::fileno(stderr));

  ResultsFile results(arguments.json_file, "lab");
  if (arguments.resume) results.load_existing();
  const StopRequests stop;
  std::vector<LabRow> rows;
  for (size_t i = 0; i < scenarios.size() && !stop.requested(); ++i) {
    // A row is the same work when the buggy scenario (every --set applied) and the backend are.
    const BackendKind kind = choose_backend(scenarios[i].backend, options.backend);
    const nlohmann::json key = {{"bug", scenarios[i].name},
                                {"scenario", scenario_to_json(scenarios[i])},
                                {"backend", kind == BackendKind::Cuda ? "cuda" : "cpu"}};
    if (std::optional<nlohmann::json> previous = results.previous(key)) {
      rows.push_back(lab_row_from_json(*previous, arguments.json_file));
      results.add(std::move(*previous));
      continue;
    }
    options.progress_label = "[" + std::to_string(i + 1) + "/" + std::to_string(scenarios.size()) + "] " +
                             scenarios[i].name;
    const Comparison comparison = compare_with_fixed_twin(scenarios[i], options);
    rows.push_back(lab_row(comparison));
    // Each bug's report as soon as it exists, so that an interrupted lab keeps it too.
    if (!arguments.report_dir.empty()) write_bug_report(arguments.report_dir, rows.back(), comparison);
    results.add(lab_row_json(rows.back()));
  }
  if (!arguments.quiet) {
    std::fputs(lab_table(rows).c_str(), stdout);
    std::fflush(stdout);
  }
  if (rows.size() < scenarios.size()) {
    std::string message = "stopped after " + std::to_string(rows.size()) + " of " + std::to_string(scenarios.size()) +
                          " bugs";
    if (!arguments.json_file.empty()) {
      message += "; the completed rows are in " + arguments.json_file +
                 " (\"complete\": false): rerun with --resume to run the rest";
    }
    throw Interrupted(stop.signal_number(), message);
  }
  results.finish();
  if (!arguments.report_dir.empty()) write_lab_index(arguments.report_dir, rows);
}

}  // namespace

void add_lab_command(CLI::App& app) {
  auto arguments = std::make_shared<LabArguments>();
  CLI::App* command = app.add_subcommand("lab", "The five-bug lab: every scenario under scenarios/bugs/, fixed vs buggy");
  command->add_option("--backend", arguments->backend, "cpu or cuda (default: each scenario's backend)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  command->add_option("--threads", arguments->threads, "CPU kernel threads (0 = every core)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--json", arguments->json_file,
                      "Write the results, rewritten after every bug: {\"complete\": bool, \"rows\": [{bug, "
                      "fixed_tokens_per_s, buggy_tokens_per_s, slowdown, ...}]}");
  command->add_flag("--resume", arguments->resume,
                    "Reuse the rows the --json file already holds for the same scenarios and backend; run only the rest");
  command->add_option("--report", arguments->report_dir, "Write the lab's HTML report into this directory");
  command->add_option("--only", arguments->only, "Run only these lab scenarios (by name)")->allow_extra_args(false);
  command->add_option("--set", arguments->assignments, "Override a key in every lab scenario: key.path=value")
      ->allow_extra_args(false);
  command->add_flag("--quiet,-q", arguments->quiet, "Print nothing");
  command->callback([arguments] { execute_lab(*arguments); });
}

}  // namespace decodelab
