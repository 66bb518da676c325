// `decodelab diagnose TRACE [--json FILE]`: which of the five bugs a trace shows, each with
// its evidence and a confidence — a trace written by `decodelab run --trace`, or a
// torch.profiler trace of a PyTorch program (the kind is read from the file). It reads the
// trace file and nothing else — not the scenario, not a side file: the reading must earn
// its answer (profiling/diagnosis/diagnosis.h; signals and limits in docs/diagnosis.md).
#include <cstdio>
#include <string>

#include "lab/cli/commands.h"
#include "lab/output_files.h"
#include "profiling/atomic_file.h"
#include "profiling/diagnosis/diagnosis.h"
#include "profiling/diagnosis/pass_reading.h"
#include "profiling/trace/trace_file.h"

namespace decodelab {

void execute_diagnose(const DiagnoseArguments& arguments) {
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");
  const Diagnosis diagnosis = diagnose(read_trace_file(arguments.trace_file));
  if (!arguments.json_file.empty()) save_file_atomically(arguments.json_file, to_json(diagnosis).dump(2) + "\n");
  if (!arguments.quiet) {
    std::fputs(format_diagnosis(diagnosis).c_str(), stdout);
    std::fflush(stdout);
  }
}

}  // namespace decodelab
