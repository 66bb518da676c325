// The decodelab command line: builds the CLI11 app from the subcommands and maps every
// failure to one line on stderr and an exit code (0 ok, 1 runtime failure, 2 bad input,
// 128 + signal when a sweep or the lab stopped on Ctrl-C / SIGTERM after saving its rows,
// 3 when `collect` found rows still to come).
// Parse errors of the command line itself are bad input too, hence 2, not CLI11's codes;
// a mistyped subcommand is caught before CLI11 parses, to offer "did you mean".
#include "lab/cli/cli.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/base/errors.h"
#include "lab/cli/cli_options.h"
#include "lab/cli/cli_commands.h"
#include "lab/run/interrupt.h"
#include "lab/cluster/slurm_collect.h"

namespace decodelab {

namespace {

std::string version_text() {
  std::string text = "decodelab ";
#ifdef DECODELAB_VERSION
  text += DECODELAB_VERSION;
#endif
#ifdef DECODELAB_BUILD_TYPE
  text += std::string(" (") + DECODELAB_BUILD_TYPE + " build";
#else
  text += " (";
#endif
  text += cuda_backend_compiled() ? ", CPU and CUDA backends)" : ", CPU backend)";
  return text;
}

// Errors are one line, whatever bytes a bad file put into the message.
std::string one_line(const char* message) {
  std::string text(message);
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return text;
}

void print_error(const char* kind, const std::exception& error) {
  std::fprintf(stderr, "decodelab: %s: %s\n", kind, one_line(error.what()).c_str());
}

std::vector<std::string> invocation;

}  // namespace

const std::vector<std::string>& invocation_arguments() { return invocation; }

int run_cli(int argc, char** argv) {
  invocation.assign(argv, argv + argc);
  CLI::App app{"decodelab: a performance lab for LLM inference (decode engine, five classic bugs, roofline)",
               "decodelab"};
  app.set_version_flag("--version", version_text());
  // Command-line mistakes read like every other input error: one line, the same prefix.
  app.failure_message([&app](const CLI::App*, const CLI::Error& error) {
    // A misspelt option is said as such; CLI11's list of the words left over ("1 --thread")
    // would only blur it.
    const std::string hint = dynamic_cast<const CLI::ExtrasError*>(&error) ? unknown_option_hint(app, invocation) : "";
    return "decodelab: error: " + (hint.empty() ? one_line(error.what()) : hint) + "; see --help\n";
  });
  app.require_subcommand(1);
  add_run_command(app);
  add_list_command(app);
  add_compare_command(app);
  add_lab_command(app);
  add_sweep_command(app);
  add_collect_command(app);
  add_run_point_command(app);
  add_roofline_command(app);
  add_calibrate_command(app);
  add_diagnose_command(app);
  add_ncu_command(app);
  add_nsys_command(app);
  add_predict_command(app);
  add_diff_logits_command(app);
  // CLI11 reads an unknown first word as a stray argument ("a subcommand is required").
  if (const std::optional<std::string> unknown = unknown_subcommand(app, argc, argv)) {
    std::fprintf(stderr, "decodelab: error: %s\n", unknown->c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
    return 0;
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : 2;
  } catch (const Interrupted& error) {
    print_error("interrupted", error);
    return error.exit_code();
  } catch (const Unfinished& error) {
    print_error("unfinished", error);
    return error.exit_code();
  } catch (const InputError& error) {
    print_error("error", error);
    return 2;
  } catch (const ResourceError& error) {
    print_error("error", error);
    return 2;
  } catch (const std::exception& error) {
    print_error("failed", error);
    return 1;
  }
}

}  // namespace decodelab
