// Running another program and reading what it printed: how decodelab talks to Slurm
// (sbatch, sacct, scontrol), whose answers are its command-line tools' output. No shell
// is involved (posix_spawnp with an argument vector), so nothing in an argument, a path or
// a partition name is ever interpreted.
#pragma once

#include <string>
#include <vector>

namespace decodelab {

struct ProcessOutput {
  bool started = false;  // false: the program could not be run (`err` says why)
  int exit_code = -1;    // -1 when it ended on a signal
  std::string out;
  std::string err;  // its stderr, or why it could not be started
};

// Runs `argv[0]` (looked up on PATH) with the arguments, stdin from /dev/null, and waits.
ProcessOutput run_program(const std::vector<std::string>& argv);

// An argument as a POSIX shell reads it back unchanged: as is when it holds only safe
// characters, else in single quotes.
std::string shell_quote(const std::string& argument);
// "sbatch --parsable --array=0-3 …": every argument shell_quote()d, for messages and scripts.
std::string command_text(const std::vector<std::string>& argv);

// The output's last non-empty lines joined by "; " (one-line error messages), at most `lines`.
std::string last_lines(const std::string& text, size_t lines = 3);

}  // namespace decodelab
