// Every subcommand's options and arguments, declared to CLI11: names, help text, checks,
// which options need or exclude which. Each callback hands the filled struct of
// lab/cli/commands.h to the command's execute_<name>() (lab/cli/command_<name>.cpp). The commands
// themselves never see CLI11: its header costs ~10 s of compile time in every file that
// includes it (~25 s under the sanitizers), so only lab/cli*.cpp do.
#include "lab/cli/cli_commands.h"

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "lab/cli/cli_options.h"
#include "lab/cli/commands.h"
#include "lab/cluster/run_point.h"
#include "lab/scenario/scenario.h"

namespace decodelab {

void add_run_command(CLI::App& app) {
  auto arguments = std::make_shared<RunArguments>();
  CLI::App* command = app.add_subcommand("run", "Run a scenario and print its table row");
  command->add_option("scenario", arguments->scenario, "Scenario file, or a name under scenarios/")->required();
  command
      ->add_option("--set", arguments->assignments,
                   "Override a scenario key before validation: key.path=value (YAML; empty removes the key)")
      ->allow_extra_args(false);
  command->add_option("--backend", arguments->backend, "Override the scenario's backend")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  add_threads_option(*command, arguments->threads);
  command->add_option("--json", arguments->json_file, "Write the result as JSON");
  command->add_option("--dump-logits", arguments->logits_file,
                      "Write each request's last logits as .npy (float32, [requests, vocab])");
  command->add_option("--max-memory", arguments->max_memory, "Refuse to run when the plan needs more (e.g. 8GiB)");
  command->add_flag("--cuda-graphs", arguments->cuda_graphs, "Replay each decode step as a CUDA graph (CUDA only)");
  command->add_option("--trace", arguments->trace_file, "Write a Chrome trace (Perfetto, chrome://tracing) of the timed repeats");
  command->add_option("--report", arguments->report_dir, "Write an HTML report directory (report.html, roofline.svg, ops.csv, result.json)");
  command->add_flag("--check-numerics", arguments->check_numerics,
                    "After the repeats, one more generation checking every op's output for NaN/Inf (slow); "
                    "names the first op that produced one");
  add_row_format_option(*command, arguments->format);
  add_top_option(*command, arguments->top);
  command->add_flag("--quiet,-q", arguments->quiet, "Print no progress and no table (rows asked for with -o still print)");
  command->callback([arguments] { execute_run(*arguments); });
}

void add_list_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("list", "List scenarios, models and devices");
  command->callback([] { execute_list(); });
}

void add_compare_command(CLI::App& app) {
  auto arguments = std::make_shared<CompareArguments>();
  CLI::App* command = app.add_subcommand("compare", "Run a scenario and its fixed twin; print the slowdown and why");
  command->add_option("scenario", arguments->scenario, "Scenario file, or a name under scenarios/")->required();
  command->add_option("--set", arguments->assignments, "Override a scenario key before validation: key.path=value")
      ->allow_extra_args(false);
  command->add_option("--backend", arguments->backend, "Override the scenario's backend")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  add_threads_option(*command, arguments->threads);
  command->add_option("--json", arguments->json_file, "Write fixed, buggy, slowdown and categories as JSON");
  command->add_option("--report", arguments->report_dir, "Write an HTML report directory");
  command->add_option("--trace", arguments->trace_prefix,
                      "Write Chrome traces PREFIXfixed.trace.json and PREFIXbuggy.trace.json");
  command->add_option("--max-memory", arguments->max_memory, "Refuse to run when the plan needs more (e.g. 8GiB)");
  add_predict_on_option(*command, arguments->predict_on);
  add_row_format_option(*command, arguments->format);
  add_top_option(*command, arguments->top);
  command->add_flag("--quiet,-q", arguments->quiet, "Print no progress and no table (rows asked for with -o still print)");
  command->callback([arguments] { execute_compare(*arguments); });
}

void add_lab_command(CLI::App& app) {
  auto arguments = std::make_shared<LabArguments>();
  CLI::App* command = app.add_subcommand("lab", "The five-bug lab: every scenario under scenarios/bugs/, fixed vs buggy");
  command->add_option("--backend", arguments->backend, "cpu or cuda (default: each scenario's backend)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  add_threads_option(*command, arguments->threads);
  command->add_option("--json", arguments->json_file,
                      "Write the rows (bug, fixed_tokens_per_s, buggy_tokens_per_s, decode_slowdown, end_to_end_slowdown, "
                      "headline verdict, ...) as a JSON list; "
                      "while bugs remain (interrupted), {\"complete\": false, \"rows\": [...]}, rewritten after every bug");
  command->add_flag("--resume", arguments->resume,
                    "Reuse the rows the --json file already holds for the same scenarios and backend; run only the rest "
                    "(rows of bugs not selected now are kept)");
  command->add_option("--report", arguments->report_dir, "Write the lab's HTML report into this directory");
  command->add_option("--only", arguments->only, "Run only these lab scenarios (by name): --only a,b or --only a b")
      ->delimiter(',');
  command->add_option("--set", arguments->assignments, "Override a key in every lab scenario: key.path=value")
      ->allow_extra_args(false);
  add_predict_on_option(*command, arguments->predict_on);
  command->add_option("--max-seconds", arguments->max_seconds,
                      "The lab's time budget in seconds, shared among the bugs still to run in proportion to their "
                      "run.max_seconds: each bug's share ends its pairs in place of its max_seconds (default: 160)")
      ->check(positive_number());
  add_row_format_option(*command, arguments->format);
  command->add_flag("--quiet,-q", arguments->quiet, "Print no progress and no table (rows asked for with -o still print)");
  CLI::Option* mystery = command->add_flag(
      "--mystery", arguments->mystery, "Practice: run a seeded random case with hidden bugs; write its trace, name none");
  CLI::Option* reveal =
      command->add_flag("--reveal", arguments->reveal, "Practice: tell the hidden bugs of the mystery --seed N");
  CLI::Option* seed = command->add_option("--seed", arguments->seed, "The mystery's seed (default: a random one)");
  CLI::Option* trace = command->add_option("--trace", arguments->trace_file,
                                           "Where --mystery writes its trace (default: mystery-<seed>.trace.json)");
  mystery->excludes(reveal);
  trace->needs(mystery);
  for (const char* normal_only : {"--json", "--only", "--set", "--resume", "--predict-on", "--output", "--max-seconds"}) {
    mystery->excludes(command->get_option(normal_only));
    reveal->excludes(command->get_option(normal_only));
  }
  reveal->excludes(command->get_option("--report"));
  add_slurm_options(*command, arguments->slurm);
  CLI::Option* slurm = command->get_option("--slurm");
  for (const char* here_only : {"--json", "--resume", "--report", "--predict-on", "--max-seconds"})
    slurm->excludes(command->get_option(here_only));  // collect writes the rows and the report
  slurm->excludes(mystery);
  slurm->excludes(reveal);
  command->callback([arguments, seed] {
    arguments->has_seed = seed->count() > 0;
    execute_lab_command(*arguments);
  });
}

void add_sweep_command(CLI::App& app) {
  auto arguments = std::make_shared<SweepArguments>();
  CLI::App* command = app.add_subcommand(
      "sweep", "Run every combination of the keys given as lists (workload keys, dtype, backend, threads)");
  command->add_option("scenario", arguments->scenario, "Scenario file, or a name under scenarios/")->required();
  command->add_option("--set", arguments->assignments, "Override a scenario key (a list sweeps it): key.path=value")
      ->allow_extra_args(false);
  command
      ->add_option("--backend", arguments->backends,
                   "Override the scenario's backend; several (--backend cpu,cuda) are swept")
      ->delimiter(',')
      ->check(CLI::IsMember({"cpu", "cuda"}));
  command
      ->add_option("--threads", arguments->threads,
                   "CPU kernel threads (default: the scenario's threads:, else every core); several "
                   "(--threads 1,2,4) are swept")
      ->delimiter(',')
      ->check(integer_range(0, kMaxCpuThreads));
  command->add_option("--json", arguments->json_file,
                      "Write one result per combination as a JSON list; while rows remain (interrupted), "
                      "{\"complete\": false, \"rows\": [...]}, rewritten after every row");
  command->add_flag("--resume", arguments->resume,
                    "Reuse the rows the --json file already holds for the same scenario, swept values and backend; "
                    "run only the rest (rows of other points are kept)");
  command->add_option("--report", arguments->report_dir,
                      "Write the sweep's page: the table, and measured decode tok/s over the predicted curve");
  command->add_flag("--check-numerics", arguments->check_numerics,
                    "After each run's repeats, one more generation checking every op's output for NaN/Inf");
  add_row_format_option(*command, arguments->format);
  command->add_flag("--quiet,-q", arguments->quiet, "Print no progress and no table (rows asked for with -o still print)");
  add_slurm_options(*command, arguments->slurm);
  for (const char* here_only : {"--json", "--resume", "--report"})
    command->get_option("--slurm")->excludes(command->get_option(here_only));  // collect writes the rows
  command->callback([arguments] { execute_sweep(*arguments); });
}

void add_collect_command(CLI::App& app) {
  auto arguments = std::make_shared<CollectArguments>();
  CLI::App* command = app.add_subcommand(
      "collect", "Gather the rows of a run submitted with `sweep/lab --slurm`; name and resubmit what failed");
  command->add_option("run_dir", arguments->run_dir, "The run folder `--slurm` printed")->required();
  command->add_option("--json", arguments->json_file,
                      "Write the rows as the local command's --json does (a list; {\"complete\": false, \"rows\"} "
                      "while points are missing), every row with its placement (node, partition, job)");
  command->add_option("--report", arguments->report_dir,
                      "Lab runs: write the lab's HTML report here (one folder per partition when there are several)");
  command->add_flag("--resubmit", arguments->resubmit,
                    "Submit again the points that failed or never ran (not those pending or running)");
  command->add_option("--time", arguments->time_limit, "With --resubmit: a new time limit for the resubmitted tasks")
      ->needs(command->get_option("--resubmit"));
  command->add_flag("--quiet,-q", arguments->quiet, "Print nothing");
  command->callback([arguments] { execute_collect(*arguments); });
}

// `run-point RUN_DIR --set S --point K`: what each Slurm array task runs (the run folder's
// task.sh calls it). Hidden from --help: people submit with `sweep/lab --slurm` and gather
// with `collect`; it can still be run by hand to retry one point on this machine.
void add_run_point_command(CLI::App& app) {
  auto arguments = std::make_shared<RunPointArguments>();
  CLI::App* command = app.add_subcommand("run-point", "Run one point of a run folder and write its row (a Slurm task)");
  command->group("");  // hidden
  command->add_option("run_dir", arguments->run_dir, "The run folder")->required();
  command->add_option("--set", arguments->set, "The row set (partition) the point belongs to")->required();
  command->add_option("--point", arguments->point, "The point's index (from 0)")->required();
  command->callback([arguments] { run_point(arguments->run_dir, arguments->set, arguments->point); });
}

void add_roofline_command(CLI::App& app) {
  auto options = std::make_shared<RooflineArguments>();
  CLI::App* command = app.add_subcommand("roofline", "Show a device's roofs and ridge points, from its datasheet or measured");
  CLI::Option* device =
      command->add_option("--device", options->device, "a device spec: a name under configs/devices or a YAML file");
  CLI::Option* measure = command->add_flag("--measure", options->measure, "measure this machine's roofs on the backend");
  command->add_option("--save", options->save, "with --measure: write the measured roofs to this device YAML")->needs(measure);
  command->add_option("--json", options->json_file, "with --measure: write every measured figure as JSON")->needs(measure);
  device->excludes(measure);
  command->add_option("--backend", options->backend, "cpu or cuda (default: cuda when a GPU is present)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  command->add_option("--threads", options->threads, "CPU kernel threads (0 = every core)")->check(integer_range(0, kMaxCpuThreads));
  command->add_option("--repeats", options->repeats, "timed repeats per figure (the median is kept)")->check(integer_at_least(1));
  command->callback([options] { execute_roofline(*options); });
}

void add_calibrate_command(CLI::App& app) {
  auto arguments = std::make_shared<CalibrateArguments>();
  CLI::App* command = app.add_subcommand(
      "calibrate", "Measure this machine once (roofs, fixed costs, cache) into the calibration file every command reads");
  command->add_option("--threads", arguments->threads, "CPU kernel threads the calibration is for (0 = every core)")
      ->check(integer_range(0, kMaxCpuThreads));
  command->add_option("--json", arguments->json_file,
                      "Write (with --show: read) this calibration file instead of the one commands read");
  command->add_flag("--show", arguments->show, "Print the calibration in words: what was measured, when, on which machine");
  command->add_flag("--quick", arguments->quick, "Small probes (the test suite's): seconds, figures of little meaning")
      ->group("");
  command->callback([arguments] { execute_calibrate(*arguments); });
}

void add_diagnose_command(CLI::App& app) {
  auto arguments = std::make_shared<DiagnoseArguments>();
  CLI::App* command =
      app.add_subcommand("diagnose", "Name the bugs a trace shows (from `run --trace` or torch.profiler), with evidence "
                                     "and confidence");
  command->add_option("trace", arguments->trace_file,
                      "A Chrome trace written by decodelab run --trace, or a torch.profiler trace (.json or .json.gz)")
      ->required();
  command->add_option("--json", arguments->json_file, "Write the findings as JSON ({\"bugs\": [...], ...})");
  command->add_flag("--quiet,-q", arguments->quiet, "Print nothing");
  command->callback([arguments] { execute_diagnose(*arguments); });
}

void add_ncu_command(CLI::App& app) {
  auto arguments = std::make_shared<NcuArguments>();
  CLI::App* command = app.add_subcommand(
      "ncu", "Read an Nsight Compute CSV export (ncu --csv [--page raw]) and name each kernel's limiter");
  command->add_option("file", arguments->file, "the CSV export")->required();
  command->add_option("--device", arguments->device,
                      "device peaks: a name under configs/devices or a YAML file (default: the GPU the export identifies; none when it is unknown)");
  command->add_option("--json", arguments->json_file, "write the readings as JSON");
  command->callback([arguments] { execute_ncu(*arguments); });
}

void add_nsys_command(CLI::App& app) {
  auto arguments = std::make_shared<NsysArguments>();
  CLI::App* command = app.add_subcommand(
      "nsys", "Read nsys stats CSV reports (cuda_gpu_trace, cuda_api_trace, ...) as a timeline: busy %, gaps, syncs, top kernels");
  command->add_option("files", arguments->files, "the CSV reports (nsys stats --format csv)")->required();
  command->add_option("--nvtx", arguments->nvtx,
                      "only work launched inside NVTX ranges whose whole name matches this regex (needs "
                      "nvtx_pushpop_trace and cuda_api_trace), e.g. 'step [0-9]+'");
  command->add_option("--top", arguments->top, "kernels to list")->check(integer_at_least(1));
  command->add_option("--json", arguments->json_file, "write the analysis as JSON");
  command->callback([arguments] { execute_nsys(*arguments); });
}

void add_predict_command(CLI::App& app) {
  auto arguments = std::make_shared<PredictArguments>();
  CLI::App* command = app.add_subcommand(
      "predict", "Predict a scenario's TTFT, step time, tok/s and, with bugs, its slowdown, from the roofline and fixed costs");
  command->add_option("scenario", arguments->scenario, "Scenario file, or a name under scenarios/")->required();
  command->add_option("--device", arguments->device,
                      "A device under configs/devices (or a YAML file), or measured: this machine's CPU roofs "
                      "(default: the device the scenario would run on here)");
  command->add_option("--set", arguments->assignments, "Override a scenario key before validation: key.path=value")
      ->allow_extra_args(false);
  command->add_option("--backend", arguments->backend, "Override the scenario's backend (default device, --check)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  command->add_option("--threads", arguments->threads, "CPU kernel threads (0 = every core)")
      ->check(integer_range(0, kMaxCpuThreads));
  command->add_option("--json", arguments->json_file, "Write the prediction (and the check) as JSON");
  command->add_flag("--check", arguments->check,
                    "Also run the scenario (and its fixed twin) here: measured, predicted and the error per figure");
  command->add_option("--row", arguments->row,
                      "Print only markdown table row(s) of the slowdowns, this text as the variant (with --check: "
                      "measured, predicted, error)");
  command->add_flag("--row-header", arguments->row_header, "With --row: print the table's header first");
  command->add_flag("--quiet,-q", arguments->quiet, "Print nothing");
  command->callback([arguments] { execute_predict(*arguments); });
}

void add_diff_logits_command(CLI::App& app) {
  auto arguments = std::make_shared<DiffLogitsArguments>();
  CLI::App* command = app.add_subcommand(
      "diff-logits", "Whether two --dump-logits files agree within the dtype's logit tolerance (exit 1 if not)");
  command->add_option("reference", arguments->reference_file, "the reference run's .npy")->required();
  command->add_option("other", arguments->other_file, "the compared run's .npy")->required();
  command->add_option("--dtype", arguments->dtype, "the runs' dtype (sets the tolerance): fp32, fp16 or bf16")->required();
  command->add_option("--tolerance", arguments->tolerance, "override: largest |a - b| / max(1, max |reference row|)")
      ->check(positive_number());
  command->callback([arguments] { execute_diff_logits(*arguments); });
}

}  // namespace decodelab
