// The subcommands of `decodelab`, one file each (lab/cli/command_<name>.cpp): each takes its
// parsed options as a plain struct and does the work; none knows the command-line parser.
// The options are declared to CLI11 in lab/cli/cli_commands.cpp (kept apart because CLI11's
// header costs ~10 s of compile time per file that includes it, ~25 s under the sanitizers).
// Errors are thrown (InputError / ResourceError -> exit 2, anything else -> exit 1) and
// turned into one line on stderr by run_cli(). To add a command, write
// lab/cli/command_<name>.cpp with execute_<name>(), declare its options struct here, and add
// its options in lab/cli/cli_commands.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lab/report/row_output.h"
#include "lab/predict/row_prediction.h"
#include "lab/cluster/slurm_submit.h"

namespace decodelab {

// `run SCENARIO`
struct RunArguments {
  std::string scenario;
  std::vector<std::string> assignments;
  std::string backend;
  int threads = 0;
  std::string json_file;
  std::string logits_file;
  std::string max_memory;
  bool cuda_graphs = false;
  std::string trace_file;
  std::string report_dir;
  bool quiet = false;
  bool check_numerics = false;
  RowFormat format = RowFormat::Markdown;
  size_t top = 0;
};
void execute_run(const RunArguments& arguments);

// `list`
void execute_list();

// `compare SCENARIO`
struct CompareArguments {
  std::string scenario;
  std::vector<std::string> assignments;
  std::string backend;
  int threads = 0;
  std::string json_file;
  std::string report_dir;
  std::string trace_prefix;
  std::string max_memory;
  std::vector<std::string> predict_on = default_reference_devices();
  bool quiet = false;
  RowFormat format = RowFormat::Markdown;
  size_t top = 0;
};
void execute_compare(const CompareArguments& arguments);

// `lab`: the five-bug lab, or practice mode (--mystery, --reveal --seed N).
struct LabArguments {
  std::string backend;
  int threads = 0;
  std::string json_file;
  std::string report_dir;
  std::vector<std::string> only;
  std::vector<std::string> assignments;
  bool resume = false;
  bool quiet = false;
  RowFormat format = RowFormat::Markdown;
  bool mystery = false;
  bool reveal = false;
  bool has_seed = false;  // --seed was given
  uint64_t seed = 0;
  std::string trace_file;
  std::vector<std::string> predict_on = default_reference_devices();
  double max_seconds = 160;  // the lab's time budget, shared among the bugs in proportion to their run.max_seconds
  SlurmRequest slurm;
};
void execute_lab_command(LabArguments arguments);

// `sweep SCENARIO`
struct SweepArguments {
  std::string scenario;
  std::vector<std::string> assignments;
  std::vector<std::string> backends;  // one overrides every point's; several are swept
  std::vector<int> threads;           // likewise
  std::string json_file;
  std::string report_dir;
  bool resume = false;
  bool check_numerics = false;
  bool quiet = false;
  RowFormat format = RowFormat::Markdown;
  SlurmRequest slurm;
};
void execute_sweep(SweepArguments arguments);

// `collect RUN_DIR`
struct CollectArguments {
  std::string run_dir;
  std::string json_file;
  std::string report_dir;
  bool resubmit = false;
  std::string time_limit;
  bool quiet = false;
};
void execute_collect(const CollectArguments& arguments);

// `run-point RUN_DIR --set S --point K` (hidden: what each Slurm array task runs) calls
// lab/cluster/run_point.h's run_point() directly.
struct RunPointArguments {
  std::string run_dir;
  std::string set;
  size_t point = 0;
};

// `roofline`
struct RooflineArguments {
  std::string device;
  bool measure = false;
  std::string save;
  std::string backend;  // "" = CUDA when a device is present, else CPU
  int threads = 0;
  int repeats = 5;
  std::string json_file;
};
void execute_roofline(const RooflineArguments& arguments);

// `calibrate`: measure this machine once into its calibration file (or --show it).
struct CalibrateArguments {
  int threads = 0;
  std::string json_file;  // "" = the file commands read (profiling/measure/calibration.h)
  bool show = false;
  bool quick = false;     // hidden: small probes, for the test suite
};
void execute_calibrate(const CalibrateArguments& arguments);

// `diagnose TRACE`
struct DiagnoseArguments {
  std::string trace_file;
  std::string json_file;
  bool quiet = false;
};
void execute_diagnose(const DiagnoseArguments& arguments);

// `ncu FILE.csv`
struct NcuArguments {
  std::string file;
  std::string device;
  std::string json_file;
};
void execute_ncu(const NcuArguments& arguments);

// `nsys FILE.csv...`
struct NsysArguments {
  std::vector<std::string> files;
  std::string nvtx;
  size_t top = 10;
  std::string json_file;
};
void execute_nsys(const NsysArguments& arguments);

// `predict SCENARIO`
struct PredictArguments {
  std::string scenario;
  std::vector<std::string> assignments;
  std::string device;
  std::string backend;
  int threads = 0;
  std::string json_file;
  bool check = false;
  std::string row;
  bool row_header = false;
  bool quiet = false;
};
void execute_predict(const PredictArguments& arguments);

// `diff-logits REFERENCE.npy OTHER.npy --dtype DTYPE`
struct DiffLogitsArguments {
  std::string reference_file;
  std::string other_file;
  std::string dtype;
  double tolerance = 0;  // 0 = the dtype's
};
void execute_diff_logits(const DiffLogitsArguments& arguments);

}  // namespace decodelab
