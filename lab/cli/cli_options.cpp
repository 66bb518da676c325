// Shared CLI options and messages (see cli_options.h); one of the few files that include CLI11.
#include "lab/cli/cli_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "lab/predict/row_prediction.h"
#include "lab/scenario/scenario.h"
#include "lab/cluster/slurm_submit.h"
#include "lab/scenario/yaml_fields.h"

namespace decodelab {

namespace {

std::optional<int64_t> whole_number(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

CLI::Validator integer_range(int64_t min, int64_t max) {
  const std::string range = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& input) -> std::string {
        const std::optional<int64_t> value = whole_number(input);
        if (value && *value >= min && *value <= max) return "";
        return "expected " + range + ", got '" + input + "'";
      },
      "INT in [" + std::to_string(min) + " - " + std::to_string(max) + "]");
}

CLI::Validator integer_at_least(int64_t min) {
  return CLI::Validator(
      [min](std::string& input) -> std::string {
        const std::optional<int64_t> value = whole_number(input);
        if (value && *value >= min) return "";
        return "expected an integer ≥ " + std::to_string(min) + ", got '" + input + "'";
      },
      "INT ≥ " + std::to_string(min));
}

CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(input.c_str(), &end);
        if (!input.empty() && end == input.c_str() + input.size() && std::isfinite(value) && value > 0) return "";
        return "expected a number > 0, got '" + input + "'";
      },
      "NUMBER > 0");
}

CLI::Option* add_threads_option(CLI::App& command, int& threads) {
  return command
      .add_option("--threads", threads, "CPU kernel threads, 0 = every core (default: the scenario's threads:, else every core)")
      ->check(integer_range(0, kMaxCpuThreads));
}

CLI::Option* add_row_format_option(CLI::App& command, RowFormat& format) {
  return command
      .add_option_function<std::string>(
          "-o,--output", [&format](const std::string& name) { format = parse_row_format(name); },
          "Rows on stdout as md (the table, default), csv, json or jsonl (one JSON object per line); printed even with -q")
      ->check(CLI::IsMember(row_format_names()))
      ->type_name("md|csv|json|jsonl");
}

CLI::Option* add_top_option(CLI::App& command, size_t& top) {
  return command.add_option("--top", top, "Also print the N ops that took the most device time (profiles the run)")
      ->check(integer_range(1, 1000));
}

void add_predict_on_option(CLI::App& command, std::vector<std::string>& names) {
  std::string defaults;
  for (const std::string& name : default_reference_devices()) defaults += (defaults.empty() ? "" : ",") + name;
  command
      .add_option("--predict-on", names,
                  "Also predict each slowdown on these devices (configs/devices names or YAML files, comma "
                  "separated; default: " + defaults + ")")
      ->delimiter(',')
      ->allow_extra_args(false);
}

void add_slurm_options(CLI::App& command, SlurmRequest& request) {
  CLI::Option* slurm = command.add_flag("--slurm", request.enabled,
                                        "Submit the points as a Slurm job array instead of running them here; "
                                        "`decodelab collect RUN_DIR` gathers the rows");
  const std::vector<CLI::Option*> with_slurm = {
      command
          .add_option("--partition,--partitions", request.partitions,
                      "Slurm partitions, comma-separated: one array job and one row set per partition")
          ->delimiter(',')
          ->allow_extra_args(false),
      command.add_option("--gres", request.gres, "sbatch --gres for every task, e.g. gpu:1"),
      command.add_option("--time", request.time_limit, "sbatch --time: each task's time limit, e.g. 30:00"),
      command.add_option("--throttle", request.throttle, "Run at most N tasks of the array at once (%N)")
          ->check(integer_at_least(1)),
      command
          .add_option("--cpus-per-task", request.cpus_per_task,
                      "sbatch --cpus-per-task; a CPU-backend task uses that many kernel threads")
          ->check(integer_at_least(1)),
      command
          .add_option("--sbatch-option", request.sbatch_options,
                      "Any other sbatch option, passed as given: --sbatch-option=--account=perf (repeatable)")
          ->allow_extra_args(false),
      command.add_option(
          "--run-dir", request.run_dir,
          "The run folder (on a filesystem the nodes share); default ./decodelab-run-<command>-<name>-<time>"),
      command.add_flag(
          "--dry-run", request.dry_run,
          "Write the run folder and print the sbatch commands; submit nothing (collect --resubmit submits)"),
  };
  for (CLI::Option* option : with_slurm) option->needs(slurm);
}

std::optional<std::string> unknown_subcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return std::nullopt;
  const std::string word = argv[1];
  if (word.empty() || word[0] == '-') return std::nullopt;  // an option: CLI11 reports it
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands({})) {
    if (command->get_name() == word) return std::nullopt;
    if (!command->get_group().empty()) names.push_back(command->get_name());  // hidden ones have no group
  }
  std::string listing;
  for (const std::string& name : names) listing += (listing.empty() ? "" : ", ") + name;
  return "unknown command '" + word + "'" + did_you_mean(word, names) + "; the commands are " + listing;
}

std::string unknown_option_hint(const CLI::App& app, const std::vector<std::string>& words) {
  std::vector<std::string> names = {"--help", "--version"};
  // The subcommand named on the command line (argv[1]): a failed parse has not marked it parsed.
  const CLI::App* command = nullptr;
  for (const CLI::App* candidate : app.get_subcommands({}))
    if (words.size() > 1 && candidate->get_name() == words[1]) command = candidate;
  if (command) {
    for (const CLI::Option* option : command->get_options())
      for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string word = words[i].substr(0, words[i].find('='));
    if (word.size() < 3 || word.rfind("--", 0) != 0) continue;
    if (std::find(names.begin(), names.end(), word) != names.end()) continue;
    const std::string hint = did_you_mean(word, names);
    if (!hint.empty()) return word + " is unknown" + hint;
  }
  return "";
}

}  // namespace decodelab
