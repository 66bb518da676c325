// The command line of the bench programs (decodelab_bench_cpu, decodelab_vs_llamacpp):
// parsing ends as decodelab's commands do. Only those two mains include it, and so CLI11,
// whose header costs ~10 s of compile time in every file that includes it.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>

namespace decodelab::bench {

// Parses a bench command's arguments; returns the exit code when parsing ends the program
// (0 after --help, 2 for bad arguments, as decodelab's commands), nothing otherwise.
inline std::optional<int> parse_arguments(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : 2;
  }
  return std::nullopt;
}

}  // namespace decodelab::bench
