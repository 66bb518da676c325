// Options several subcommands share, with messages a user can act on: integer ranges
// printed as integers ("expected an integer from 0 to 1024, got '-1'", not CLI11's
// double limits), `-o md|csv|json|jsonl`, `--top N`, `--predict-on`, the Slurm options of
// `sweep` and `lab`, and "did you mean" for a mistyped subcommand, which CLI11 would
// otherwise report as "a subcommand is required". Only the files that build the command
// line (lab/cli*.cpp) include CLI11, so this header only names its classes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lab/report/row_output.h"

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace decodelab {

struct SlurmRequest;

// A whole number within [min, max]: "expected an integer from 0 to 1024, got '-1'".
CLI::Validator integer_range(int64_t min, int64_t max);
// A whole number ≥ min: "expected an integer ≥ 1, got '0'".
CLI::Validator integer_at_least(int64_t min);
// A finite number > 0: "expected a number > 0, got '-1'".
CLI::Validator positive_number();

// --threads N: CPU kernel threads, 0..kMaxCpuThreads (0 = the scenario's, else every core).
CLI::Option* add_threads_option(CLI::App& command, int& threads);
// -o md|csv|json|jsonl (md: the command's table, the default).
CLI::Option* add_row_format_option(CLI::App& command, RowFormat& format);
// --top N: the N ops that took the most device time, as a table.
CLI::Option* add_top_option(CLI::App& command, size_t& top);
// --predict-on DEVICE,...: compare's and lab's reference devices (lab/predict/row_prediction.h).
void add_predict_on_option(CLI::App& command, std::vector<std::string>& names);
// --slurm and the options that need it (lab/cluster/slurm_submit.h).
void add_slurm_options(CLI::App& command, SlurmRequest& request);

// For CLI11's "arguments were not expected": the first unknown --option of the command line
// (`words`, argv) with the subcommand's nearest option ("--thread is unknown (did you mean
// '--threads'?)"), said instead of CLI11's list of leftover words, or "" when none is near.
std::string unknown_option_hint(const CLI::App& app, const std::vector<std::string>& words);
// When argv's first word is meant as a subcommand but names none of `app`'s visible ones,
// the message to print ("unknown command 'rn' (did you mean 'run'?); commands: run, ...").
std::optional<std::string> unknown_subcommand(const CLI::App& app, int argc, char** argv);

}  // namespace decodelab
