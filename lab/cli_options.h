// Options several subcommands share, with messages a user can act on: integer ranges
// printed as integers ("expected an integer from 0 to 1024, got '-1'", not CLI11's
// double limits), `-o md|csv|json|jsonl`, `--top N`, and "did you mean" for a mistyped
// subcommand, which CLI11 would otherwise report as "a subcommand is required".
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "lab/row_output.h"

namespace decodelab {

// A whole number within [min, max]: "expected an integer from 0 to 1024, got '-1'".
CLI::Validator integer_range(int64_t min, int64_t max);
// A whole number ≥ min: "expected an integer ≥ 1, got '0'".
CLI::Validator integer_at_least(int64_t min);

// --threads N: CPU kernel threads, 0..kMaxCpuThreads (0 = the scenario's, else every core).
CLI::Option* add_threads_option(CLI::App& command, int& threads);
// -o md|csv|json|jsonl (md: the command's table, the default).
CLI::Option* add_row_format_option(CLI::App& command, RowFormat& format);
// --top N: the N ops that took the most device time, as a table.
CLI::Option* add_top_option(CLI::App& command, size_t& top);

// When argv's first word is meant as a subcommand but names none of `app`'s visible ones,
// the message to print ("unknown command 'rn' (did you mean 'run'?); commands: run, ...").
std::optional<std::string> unknown_subcommand(const CLI::App& app, int argc, char** argv);

}  // namespace decodelab
