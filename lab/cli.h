// The decodelab command line: run, compare, lab, sweep, diagnose, roofline, ncu, list.
#pragma once

namespace decodelab {

// Returns the process exit code: 0 success, 1 runtime failure, 2 bad input.
int run_cli(int argc, char** argv);

}  // namespace decodelab
