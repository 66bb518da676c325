// `decodelab lab`: the five-bug lab, the project's main job. Every scenario under
// scenarios/bugs/ goes through compare (fixed twin vs buggy, alternated), and one table
// says, per bug, how much slower it was and whether that fell in the range the lesson
// documents. --report writes one page for the lab and one report per bug. The --json file
// is rewritten after every bug; Ctrl-C stops after the comparison in progress, keeping
// every completed row ("complete": false), and --resume runs only the bugs still missing.
// Practice mode (lab/run/mystery.h): --mystery runs a seeded random case with hidden bugs and
// writes its trace and report without naming them; --reveal --seed N tells the answer.
// With --slurm each bug's comparison is a Slurm array task (lab/cluster/slurm_submit.h) and
// `decodelab collect` gathers the rows and the reports.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/base/clock.h"
#include "engine/base/errors.h"
#include "lab/cli/commands.h"
#include "lab/run/compare.h"
#include "lab/report/lab_table.h"
#include "lab/run/interrupt.h"
#include "lab/run/mystery.h"
#include "lab/output_files.h"
#include "lab/paths.h"
#include "lab/run/results_file.h"
#include "lab/run/runner.h"
#include "lab/report/row_output.h"
#include "lab/report/run_report.h"
#include "lab/cluster/slurm_submit.h"
#include "lab/scenario/yaml_fields.h"
#include "profiling/model/analysis.h"
#include "profiling/trace/chrome_trace.h"
#include "profiling/report/report.h"
#include "profiling/measure/calibration.h"
#include "profiling/measure/default_roofs.h"
#include "profiling/measure/roof_measure.h"
#include "profiling/units.h"

namespace decodelab {

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> lab_scenarios(const std::vector<std::string>& only) {
  const fs::path directory = scenarios_dir() / "bugs";
  std::vector<fs::path> files;
  if (fs::is_directory(directory)) {
    for (const auto& entry : fs::directory_iterator(directory))
      if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  if (!only.empty()) {
    std::vector<std::string> names;
    for (const fs::path& file : files) names.push_back(file.stem().string());
    for (const std::string& name : only) {
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        std::string listing;
        for (const std::string& known : names) listing += (listing.empty() ? "" : ", ") + known;
        throw InputError("--only", 0, name,
                         "no lab scenario of that name" + did_you_mean(name, names) + "; the lab's scenarios are " +
                             listing + " (under " + directory.string() + ")");
      }
    }
    std::erase_if(files, [&](const fs::path& file) {
      return std::find(only.begin(), only.end(), file.stem().string()) == only.end();
    });
  }
  if (files.empty()) throw ResourceError("no lab scenarios found under " + directory.string());
  return files;
}

// A calibration takes tens of seconds (under the two minutes `decodelab calibrate` is held
// to): the lab tries it only where half its budget is at least this, so that it is rarely
// abandoned part-way.
constexpr double kCalibrationSeconds = 60;

// A saved row whose pairs a stop cut short: --resume runs its bug again.
bool interrupted_row(const nlohmann::json& row) { return row.value("stopped_because", "") == "interrupted"; }

void execute_lab(const LabArguments& arguments) {
  // Validate everything before any work starts.
  std::vector<Scenario> scenarios;
  for (const fs::path& file : lab_scenarios(arguments.only))
    scenarios.push_back(load_scenario(file, arguments.assignments));
  reference_devices(arguments.predict_on, "--predict-on");  // an unknown name fails before any run
  if (arguments.slurm.enabled) {
    const RunSettings settings{arguments.backend, arguments.threads, false};
    submit_run(lab_run_plan(lab_scenarios(arguments.only), arguments.assignments, settings), arguments.slurm);
    return;
  }
  if (arguments.resume && arguments.json_file.empty())
    throw InputError("--resume", 0, "", "needs --json FILE: the results file to resume");
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");
  if (!arguments.report_dir.empty()) check_output_directory(arguments.report_dir, "--report");

  CompareOptions options;
  if (!arguments.backend.empty()) options.backend = arguments.backend == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
  options.threads = arguments.threads;
  const Progress progress(progress_mode(arguments.quiet));
  options.progress = progress.mode();
  options.predict_on = arguments.predict_on;

  // A row is the same work when the buggy scenario (every --set applied) and the backend are.
  std::vector<nlohmann::json> keys;
  for (const Scenario& scenario : scenarios) {
    const BackendKind kind = choose_backend(scenario.backend, options.backend);
    keys.push_back({{"bug", scenario.name},
                    {"scenario", scenario_to_json(scenario)},
                    {"backend", kind == BackendKind::Cuda ? "cuda" : "cpu"}});
  }
  ResultsFile results(arguments.json_file, "lab");
  if (arguments.resume) {
    results.load_existing();
    // One row per bug: a saved row of a bug about to run under other settings would have to
    // be replaced, so refuse before any work rather than drop a finished row.
    for (const nlohmann::json& key : keys) {
      if (!results.previous(key) && results.previous({{"bug", key["bug"]}})) {
        throw InputError(arguments.json_file, 0, "--resume",
                         "holds a finished row for " + key["bug"].get<std::string>() +
                             " run with another scenario, --set or backend; resuming would replace it. Resume with "
                             "the same settings, or write to another --json file");
      }
    }
  }
  const StopRequests stop;
  std::vector<LabRow> rows;
  // The lab's time budget is a ceiling for all of it: the roofs (this machine calibrated first
  // where it is not, on the first bug's backend), then each bug's share of the time left, in
  // proportion to its run.max_seconds — loading, warm-ups and pairs all inside the share, a
  // repeat still running at its end abandoned — so a bug that reaches its target early leaves
  // its time to the rest, and the lab ends by --max-seconds.
  const int64_t lab_begin_ns = now_ns();
  const int64_t lab_deadline_ns = lab_begin_ns + static_cast<int64_t>(arguments.max_seconds * 1e9);
  auto seconds_left = [&] { return std::max(0.0, (lab_deadline_ns - now_ns()) / 1e9); };
  double weight_to_run = 0;
  size_t bugs_to_run = 0;
  for (size_t i = 0; i < scenarios.size(); ++i) {
    if (results.previous(keys[i]) && !interrupted_row(*results.previous(keys[i]))) continue;
    weight_to_run += scenarios[i].repeats.max_seconds;
    ++bugs_to_run;
  }
  if (bugs_to_run > 0) {
    RunOptions run_options;
    run_options.backend = options.backend;
    run_options.threads = options.threads;
    std::unique_ptr<Backend> backend = open_backend(scenarios.front(), run_options);
    const int threads = kernel_threads(scenarios.front(), run_options);
    // A GPU with a configs/devices spec reads it; a CPU, its calibration at these threads.
    const bool roofs_ready = is_gpu_backend(*backend) ? match_device_spec(backend->device_description()).has_value()
                                                      : calibrated_device_spec(*backend, threads).has_value();
    // Roofs not ready come out of the budget too: a calibration (tens of seconds on a CPU,
    // written to the calibration file every later command reads) where half the budget leaves
    // room for it, else quick roofs (bandwidth and FMA peak, seconds, written nowhere); either
    // is abandoned between two ops on a stop or at its deadline — the calibration at half the
    // budget, for the quick one. (An unknown GPU's roofs are measured whole, seconds, never quick.)
    const bool calibrate_first =
        !roofs_ready && (is_gpu_backend(*backend) || seconds_left() / 2 >= kCalibrationSeconds);
    if (!arguments.quiet) {
      const char* roofs_first =
          roofs_ready                  ? ""
          : is_gpu_backend(*backend)   ? " (this GPU's roofs first: it has no configs/devices spec; measured now, "
                                         "seconds, and kept nowhere)"
          : calibrate_first            ? " (this machine is calibrated first: it is not yet, at these threads; the "
                                         "calibration takes tens of seconds, at most half the budget)"
                                       : " (quick roofs of this machine first, bandwidth and FMA peak only: it is not "
                                         "calibrated, and the budget is too short to calibrate it; they are written "
                                         "nowhere, `decodelab calibrate` calibrates it)";
      std::fprintf(stderr, "decodelab: lab: %zu %s within %.0f s%s, about %.0f s each%s\n", bugs_to_run,
                   bugs_to_run == 1 ? "bug" : "bugs", arguments.max_seconds, roofs_first,
                   arguments.max_seconds / static_cast<double>(bugs_to_run), "; each bug's line says the time left");
    }
    if (!roofs_ready) {
      progress.status("roofs of " + backend->device_description());
      int64_t roofs_deadline_ns = now_ns() + static_cast<int64_t>(seconds_left() / 2 * 1e9);
      RoofMeasureOptions roof_options;
      roof_options.checkpoint = [&] {
        if (stop.requested()) throw RepeatAbandoned(RepeatAbandoned::Why::StopRequested);
        if (now_ns() > roofs_deadline_ns) throw RepeatAbandoned(RepeatAbandoned::Why::DeadlinePassed);
      };
      // Its stages on stderr: tens of seconds are not spent in silence.
      std::ostream* measuring = arguments.quiet ? nullptr : &std::cerr;
      try {
        // The check stops on Ctrl-C as the measurement does (check_machine_for_timing).
        if (measuring) *measuring << "checking that this machine is quiet enough to measure its roofs\n";
        const MachineState machine = check_machine_for_timing(*backend, threads, /*warn=*/true, /*notes=*/false);
        bool calibrated = false;
        if (calibrate_first) {
          try {
            // A CPU's go to the calibration file, which each bug reads at its own threads; an
            // unknown GPU's are kept nowhere, so every bug is handed them.
            DeviceSpec roofs = default_device_spec(*backend, threads, measuring, roof_options, &machine);
            if (is_gpu_backend(*backend)) options.roofs = std::move(roofs);
            calibrated = true;
          } catch (const RepeatAbandoned& abandoned) {
            if (abandoned.why() == RepeatAbandoned::Why::StopRequested) throw;
            progress.finished("the calibration did not end within half the budget (nothing written); measuring "
                              "quick roofs instead");
          }
        }
        if (!calibrated) {
          roof_options.quick = true;
          roofs_deadline_ns = lab_deadline_ns;
          options.roofs = measure_device_spec_now(*backend, threads, roof_options, &machine, measuring);
        }
        progress.finished(std::string(calibrated ? "roofs ready" : "quick roofs measured (written nowhere)") + "; " +
                          std::to_string(static_cast<int>(seconds_left())) + " s of the budget left");
      } catch (const RepeatAbandoned& abandoned) {
        progress.clear();
        if (abandoned.why() == RepeatAbandoned::Why::StopRequested) {
          throw Interrupted(stop.signal_number(), "stopped while checking the machine and measuring the roofs, "
                                                  "before any bug ran; nothing was measured or written");
        }
        throw BudgetSpent("the lab's budget (" + format_number(arguments.max_seconds) +
                          " s) ran out while measuring the roofs, before any bug ran; give it more --max-seconds, or "
                          "calibrate this machine first with `decodelab calibrate --threads " +
                          std::to_string(this_machine(threads).threads) + "`");
      }
    }
  }
  std::vector<std::string> kept_notes, skipped;
  for (size_t i = 0; i < scenarios.size() && !stop.requested(); ++i) {
    const std::string label =
        "[" + std::to_string(i + 1) + "/" + std::to_string(scenarios.size()) + "] " + scenarios[i].name;
    std::optional<nlohmann::json> previous = results.take(keys[i]);
    if (previous) {
      if (!interrupted_row(*previous)) {
        rows.push_back(lab_row_from_json(*previous, arguments.json_file));
        results.add(std::move(*previous));
        progress.finished(label + ": reused from " + arguments.json_file);
        continue;
      }
      progress.finished(label + ": its saved row was interrupted; running it again");
    }
    options.progress_label = label;
    const double share = weight_to_run > 0 ? scenarios[i].repeats.max_seconds / weight_to_run : 1.0;
    weight_to_run -= scenarios[i].repeats.max_seconds;
    options.budget_seconds = seconds_left() * share;
    options.deadline_ns = now_ns() + static_cast<int64_t>(options.budget_seconds * 1e9);
    std::optional<Comparison> comparison;
    try {
      comparison.emplace(compare_with_fixed_twin(scenarios[i], options));
    } catch (const RepeatAbandoned&) {
      progress.finished(label + ": stopped before its first pair finished; nothing new of it kept");
      if (previous) {  // the saved, interrupted row stays rather than be lost
        rows.push_back(lab_row_from_json(*previous, arguments.json_file));
        results.add(std::move(*previous));
      }
      break;
    } catch (const BudgetSpent& spent) {
      progress.finished(label + ": skipped: " + spent.what());
      skipped.push_back(scenarios[i].name);
      continue;
    }
    rows.push_back(lab_row(*comparison));
    // Each bug's report as soon as it exists, so that an interrupted lab keeps it too.
    if (!arguments.report_dir.empty()) write_bug_report(arguments.report_dir, rows.back(), *comparison);
    results.add(lab_row_json(rows.back()));
    const SlowdownReading& headline = rows.back().headline;
    const std::string verdict = to_string(headline.verdict.kind);
    if (comparison->interrupted) {
      kept_notes.push_back(scenarios[i].name + ": its " + std::to_string(rows.back().pairs) +
                           " finished pairs (the repeat in progress was abandoned)");
    }
    progress.finished(label + ": done, " + slowdown_words(headline.metric) + " " +
                      format_slowdown(headline.measured) + " over " + std::to_string(rows.back().pairs) + " pairs in " +
                      std::to_string(static_cast<int>(std::lround(comparison->timed_seconds))) + " s" +
                      (verdict == "-" ? "" : " (" + verdict + ")") + "; " +
                      std::to_string(static_cast<int>(std::lround(seconds_left()))) + " s of the lab's budget left");
  }
  progress.clear();
  // -q silences progress and the table; rows asked for with -o are printed all the same.
  if (!arguments.quiet || arguments.format != RowFormat::Markdown) {
    if (arguments.format == RowFormat::Markdown) {
      std::fputs(lab_table(rows).c_str(), stdout);
    } else {
      std::vector<nlohmann::json> row_objects;
      for (const LabRow& row : rows) row_objects.push_back(lab_row_json(row));
      std::fputs(format_rows(row_objects, arguments.format).c_str(), stdout);
    }
    std::fflush(stdout);
  }
  if (stop.requested()) {
    std::string message = "stopped after " + std::to_string(rows.size()) + " of " + std::to_string(scenarios.size()) +
                          " bugs";
    for (const std::string& note : kept_notes) message += "; kept " + note;
    if (!arguments.json_file.empty()) {
      message += "; every finished row is in " + arguments.json_file +
                 " (\"complete\": false): rerun with --resume to run the rest";
    }
    throw Interrupted(stop.signal_number(), message);
  }
  if (!skipped.empty()) {
    // The budget ran out before these had one pair: the file stays partial, for --resume.
    std::string names;
    for (const std::string& name : skipped) names += (names.empty() ? "" : ", ") + name;
    std::fprintf(stderr, "decodelab: no time left in the lab's budget for %s; %s\n", names.c_str(),
                 arguments.json_file.empty() || results.rows().empty()
                     ? "give the lab more --max-seconds"
                     : ("the rows that finished are in " + arguments.json_file +
                        " (\"complete\": false): rerun with --resume and more --max-seconds")
                           .c_str());
    if (!arguments.report_dir.empty()) write_lab_index(arguments.report_dir, rows);
    return;
  }
  results.finish();
  if (arguments.resume && !arguments.quiet)
    std::fprintf(stderr, "decodelab: %s\n", results.resume_note(scenarios.size()).c_str());
  if (!arguments.report_dir.empty()) write_lab_index(arguments.report_dir, rows);
}

// --mystery: run the hidden case; write the trace (and report) that name no bug.
void execute_mystery(const LabArguments& arguments) {
  const uint64_t seed = arguments.has_seed ? arguments.seed : std::random_device{}() % 1000000;
  const MysteryCase mystery = mystery_case(seed);
  const std::string trace_file =
      arguments.trace_file.empty() ? "mystery-" + std::to_string(seed) + ".trace.json" : arguments.trace_file;
  check_output_path(trace_file, "--trace");

  const Scenario scenario = mystery_scenario(mystery);
  if (!arguments.quiet) {
    std::printf("%s\n", mystery_briefing(mystery).c_str());
    std::fflush(stdout);
  }
  RunOptions options;
  if (!arguments.backend.empty()) options.backend = arguments.backend == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
  options.threads = arguments.threads;
  options.progress = progress_mode(arguments.quiet);
  options.check_machine = true;
  std::unique_ptr<Backend> backend = open_backend(scenario, options);
  // Roofs only for a report: on an uncalibrated CPU they are calibrated first, which takes a while.
  std::optional<DeviceSpec> roofs;
  if (!arguments.report_dir.empty()) roofs = default_device_spec(*backend, arguments.threads);
  const MysteryRun run = run_mystery(mystery, *backend, options, roofs);

  StagedOutputs outputs;
  outputs.stage(trace_file, chrome_trace_json(run.trace).dump() + "\n");
  outputs.commit();
  if (!arguments.report_dir.empty()) {
    const RunAnalysis analysis = analyze(run.trace, &*roofs);
    const MachineState* machine = run.result.machine ? &*run.result.machine : nullptr;
    write_report_directory(arguments.report_dir,
                           {{"mystery " + std::to_string(seed), &analysis, headline_figures(run.result), machine}},
                           "decodelab lab --mystery: seed " + std::to_string(seed));
  }
  if (arguments.quiet) return;
  const RunMetrics& metrics = run.result.metrics;
  std::printf("ran on %s: TTFT %.2f ms, decode %.1f tok/s, wall %.3f ms per step (busy %.3f ms)\n",
              run.result.device.c_str(), metrics.ttft_ms.median, metrics.decode_tokens_per_s.median,
              metrics.decode_wall_ms_per_step.median, metrics.decode_busy_ms_per_step.median);
  std::printf("trace:  %s\n", trace_file.c_str());
  if (!arguments.report_dir.empty()) std::printf("report: %s\n", (fs::path(arguments.report_dir) / "report.html").c_str());
  std::printf("Name the bugs from the trace (Perfetto, the report, or `decodelab diagnose %s`),\n"
              "then check your reading: decodelab lab --reveal --seed %llu\n",
              trace_file.c_str(), static_cast<unsigned long long>(seed));
  std::fflush(stdout);
}

}  // namespace

void execute_lab_command(LabArguments arguments) {
  arguments.slurm.quiet = arguments.quiet;
  if (arguments.has_seed && !arguments.mystery && !arguments.reveal)
    throw InputError("--seed", 0, "", "a seed names a mystery: use it with --mystery or --reveal");
  if (arguments.reveal) {
    if (!arguments.has_seed) throw InputError("--reveal", 0, "", "expected the mystery's seed: --reveal --seed N");
    std::fputs(mystery_answer(mystery_case(arguments.seed)).c_str(), stdout);
  } else if (arguments.mystery) {
    execute_mystery(arguments);
  } else {
    execute_lab(arguments);
  }
}

}  // namespace decodelab
