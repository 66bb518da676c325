// `decodelab calibrate`: measures this machine once — bandwidth (copy and streaming read),
// peak FLOP/s per precision, the efficiency table (the engine's matmul and attention shapes
// against those roofs), the last-level cache, the fixed costs of a launch, a sync and a
// parallel region — and
// writes the calibration file every command at that thread count reads instead of measuring
// (profiling/measure/calibration.h), replacing any earlier one whole. The procedure is the
// one a command on an uncalibrated machine runs first (calibrate_to_file); calibrate adds
// the choice of the CPU kernels, timed before the backend is made. Progress goes to stderr,
// one step at a time with the seconds so far, then how long each step took; the calibration
// in words to stdout.
// `--show` prints the file in words, flagging a calibration of another machine.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/base/errors.h"
#include "lab/cli/commands.h"
#include "lab/cli/progress.h"
#include "lab/output_files.h"
#include "engine/cpu/kernel_variant.h"
#include "profiling/measure/calibration.h"
#include "profiling/measure/kernel_variant_choice.h"
#include "profiling/measure/machine_check.h"
#include "profiling/report/printers.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

// The measurement's progress lines ("measuring fp16 matmul 1024³"), each shown as a step
// with the seconds since the start: a minute of measuring reads as moving, not hung.
class CalibrationProgress final : public std::streambuf {
 public:
  explicit CalibrationProgress(const Progress& progress)
      : progress_(progress), start_(std::chrono::steady_clock::now()) {}
  ~CalibrationProgress() override { progress_.clear(); }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    if (c != '\n') {
      line_ += static_cast<char>(c);
      return c;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (!steps_.empty()) steps_.back().seconds = seconds - steps_.back().started;
    steps_.push_back({line_, seconds, 0});
    ++step_;
    char elapsed[32];
    std::snprintf(elapsed, sizeof elapsed, "%.1f s", seconds);
    progress_.finished("calibrating: step " + std::to_string(step_) + ", " + elapsed + ": " + line_);
    line_.clear();
    return c;
  }

 private:
  const Progress& progress_;
  std::chrono::steady_clock::time_point start_;
  std::string line_;
  int step_ = 0;

 public:
  struct Step {
    std::string what;
    double started = 0;
    double seconds = 0;
  };
  // Every step with how long it took (the last one up to now).
  std::vector<Step> steps() const {
    std::vector<Step> steps = steps_;
    if (!steps.empty())
      steps.back().seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() - steps.back().started;
    return steps;
  }

 private:
  std::vector<Step> steps_;
};

// The CPU backend at `threads`: what this machine's calibration describes.
std::unique_ptr<Backend> cpu_backend(int threads, const std::string& kernels = "") {
  BackendOptions options;
  options.threads = threads;
  options.cpu_kernels = kernels;
  return make_backend(BackendKind::Cpu, options);
}

// The CPU kernel variant to calibrate with: each this CPU runs timed, the choice said on
// stderr. DECODELAB_CPU_KERNELS, when it names one, decides instead (nothing is timed).
KernelVariantChoice choose_cpu_kernels(int threads, bool quick) {
  if (cpu::kernel_variant_from_environment()) {
    std::fprintf(stderr, "decodelab: CPU kernels: %s, as DECODELAB_CPU_KERNELS says (none timed)\n",
                 cpu::kernel_variant().c_str());
    return {};
  }
  KernelVariantOptions options;
  options.threads = threads;
  if (quick) {
    options.repeats = 3;
    options.decode_bytes = size_t{16} << 20;
    options.prefill_rows = 32;
  }
  std::fprintf(stderr, "decodelab: choosing the CPU kernels: timing each variant this CPU runs on a decode matvec "
               "and a prefill panel\n");
  KernelVariantChoice choice = measure_kernel_variants(options);
  std::fprintf(stderr, "decodelab: CPU kernels: %s\n", choice.reason.c_str());
  return choice;
}

void show(const std::filesystem::path& file, int threads) {
  std::error_code error;
  if (!std::filesystem::exists(file, error)) {
    const int count = this_machine(threads).threads;
    throw InputError(file.string(), 0, "",
                     "no calibration file: this machine is not calibrated at " + std::to_string(count) + " kernel thread" +
                         (count == 1 ? "" : "s") + " (`decodelab calibrate --threads " + std::to_string(count) +
                         "` measures it)");
  }
  const Calibration calibration = load_calibration(file);
  const std::unique_ptr<Backend> backend = cpu_backend(calibration.machine.threads);
  const std::vector<std::string> differences =
      calibration_differences(calibration, *backend, calibration.machine.threads);
  std::fputs(describe_calibration(calibration, file, std::time(nullptr), differences).c_str(), stdout);
  std::printf("\nmeasured figures:\n%s", format_device_roofs(calibration.spec).c_str());
}

}  // namespace

void execute_calibrate(const CalibrateArguments& arguments) {
  const std::filesystem::path file =
      arguments.json_file.empty() ? calibration_path(arguments.threads) : std::filesystem::path(arguments.json_file);
  if (arguments.show) return show(file, arguments.threads);
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");

  const KernelVariantChoice kernels = choose_cpu_kernels(arguments.threads, arguments.quick);
  const std::unique_ptr<Backend> backend = cpu_backend(arguments.threads, kernels.chosen);
  std::fprintf(stderr, "decodelab: calibrating %s: bandwidth, compute per precision, the efficiency table of matmul and attention, %s"
               "fixed costs (%s)\n",
               backend->device_description().c_str(), arguments.quick ? "" : "the last-level cache, ",
               arguments.quick ? "quick probes: seconds" : "within two minutes");
  // The machine first, its own probe only: an earlier calibration, even an unreadable one,
  // is replaced, not read.
  const MachineState state = check_machine(*backend, arguments.threads, RoofsMachine{});
  if (const std::string said = state.warning(false); !said.empty()) std::fputs(said.c_str(), stderr);

  // What is replaced, read before the new file is written.
  std::string replaced;
  std::error_code error;
  if (std::filesystem::exists(file, error)) {
    try {
      const Calibration earlier = load_calibration(file);
      const std::time_t at = static_cast<std::time_t>(earlier.measured_at);
      std::tm parts{};
      gmtime_r(&at, &parts);
      char date[32];
      std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &parts);
      replaced = std::string(" (replacing the calibration measured ") + date + ", whole: nothing of it is kept)";
    } catch (const InputError&) {
      replaced = " (replacing an unreadable file)";
    }
  }
  const Progress progress(progress_mode(false));
  CalibrationProgress lines(progress);
  std::ostream progress_stream(&lines);
  const RoofMeasureOptions options = arguments.quick ? quick_calibration_options() : RoofMeasureOptions{};
  const Calibration calibration =
      calibrate_to_file(*backend, arguments.threads, file, options, &progress_stream, &state, kernels);
  progress.clear();
  // How long each step took, so that a calibration past its two-minute budget says where.
  std::fprintf(stderr, "decodelab: calibrated in %.1f s; each step:\n", calibration.measuring_seconds);
  for (const CalibrationProgress::Step& step : lines.steps())
    std::fprintf(stderr, "  %6.1f s  %s\n", step.seconds, step.what.c_str());
  std::fputs(describe_calibration(calibration, file, std::time(nullptr), {}).c_str(), stdout);
  std::printf("\nmeasured figures:\n%s", format_device_roofs(calibration.spec).c_str());
  std::printf("\nwritten to %s%s\n", file.string().c_str(), replaced.c_str());
  if (!arguments.json_file.empty()) {
    std::printf("(commands at these threads read %s; this file is for reference)\n",
                calibration_path(arguments.threads).string().c_str());
  }
}

}  // namespace decodelab
