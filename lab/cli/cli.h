// The decodelab command line: run, compare, lab, sweep, collect, diagnose, roofline, calibrate,
// ncu, nsys, list.
#pragma once

#include <string>
#include <vector>

namespace decodelab {

// Returns the process exit code: 0 success, 1 runtime failure, 2 bad input.
int run_cli(int argc, char** argv);

// The command line run_cli() was given ("decodelab", "sweep", ...), for records such as a
// run folder's manifest; empty outside run_cli.
const std::vector<std::string>& invocation_arguments();

}  // namespace decodelab
