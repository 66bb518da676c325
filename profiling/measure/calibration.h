// The calibration: this machine measured once (`decodelab calibrate`) and kept as one
// versioned JSON file that every command reads instead of measuring. A new calibration
// replaces the file whole; nothing is merged into it, so its figures always come from one
// measurement of one period of the machine.
//
// The file says which machine it describes — hostname, CPU model, the CPU flags the kernels
// depend on, kernel threads, and the CPU backend's own description (kernel instruction set
// and weight stream) — and a command uses it only where all of these match. A calibration
// of another machine is flagged (calibration_differences names what differs) and never
// used: a shared home folder carries one machine's file to another, and its roofs would
// price this machine's runs wrongly. One file per host and kernel thread count, because the
// roofs and fixed costs of 1 and of 8 threads are different machines to the model.
//
// The non-obvious choice: a command that finds no calibration of this machine at its thread
// count calibrates first, saying so on stderr (profiling/measure/default_roofs.h), with the
// same procedure as `decodelab calibrate` (calibrate_to_file); nothing else ever measures
// into the file, so a point above its roof is reported, never a trigger to measure again.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend.h"
#include "profiling/device_spec.h"
#include "profiling/measure/roof_measure.h"

namespace decodelab {

// The file's format version: bumped whenever what the figures mean changes (how they are
// measured or read), so that a calibration of an older meaning is measured again, not read.
// 2: the efficiency table replaced the matmul ceilings, their per-output cost and the decode
// matmul and attention rates.
constexpr int kCalibrationFormat = 2;

// Why a calibration of `format` is not read, in one sentence that ends with what to do:
// "out of date: format 1, this decodelab reads format 2 (...); run `decodelab calibrate`".
std::string calibration_format_problem(int64_t format);

struct MachineState;
struct KernelVariantChoice;

// This machine, as a calibration is keyed: hostname, CPU model (/proc/cpuinfo), threads
// (0 = every core, resolved to the count).
MachineIdentity this_machine(int threads);

struct Calibration {
  int format = kCalibrationFormat;
  MachineIdentity machine;             // hostname, CPU model, kernel threads
  std::vector<std::string> cpu_flags;  // those of cpu_flags_that_matter() this CPU has
  std::string device;                  // the backend's device_description(): instruction set, weight stream
  // CPU: the kernel variant chosen by measurement (profiling/measure/kernel_variant_choice.h),
  // which the roofs were measured with and commands then run; empty when none was chosen.
  std::string kernel_variant;
  nlohmann::json kernel_variants;      // that choice's timings and reason (to_json(KernelVariantChoice))
  int64_t measured_at = 0;             // Unix seconds
  std::string decodelab_version;
  double measuring_seconds = 0;        // how long the measurement took
  bool contended = false;              // the machine check before measuring saw contention
  std::string machine_check;           // that check's summary
  DeviceSpec spec;                     // what commands read: roofs, fixed costs, cache
  nlohmann::json measurement;          // every measured figure (to_json(RoofMeasurement)), for reference
};

// $DECODELAB_CACHE_DIR, else $XDG_CACHE_HOME/decodelab, else ~/.cache/decodelab.
std::filesystem::path decodelab_cache_directory();
// The calibration commands at `threads` kernel threads (0 = every core, resolved to the
// count) read: calibration-<hostname>-<N>threads.json in that folder (one per host, so that
// hosts sharing a home folder keep theirs, and one per thread count).
std::filesystem::path calibration_path(int threads);

// The /proc/cpuinfo flags the CPU kernels and their speed depend on (AVX2, FMA, F16C, the
// AVX-512 families, AMX; NEON/SVE on Arm), those this CPU has, in /proc/cpuinfo's order.
std::vector<std::string> cpu_flags_that_matter();

nlohmann::json to_json(const Calibration& calibration);
// Any problem is an InputError naming the file, the key and what was expected.
Calibration parse_calibration(std::string_view text, const std::string& file);
Calibration load_calibration(const std::filesystem::path& file);
// Atomically (a reader never sees half a file), replacing any previous file.
void save_calibration(const Calibration& calibration, const std::filesystem::path& file);

// What differs between the calibration's machine and this one, one phrase per difference
// ("CPU model: the file says X, this machine is Y"); empty when it is this machine.
std::vector<std::string> calibration_differences(const Calibration& calibration, const MachineIdentity& here,
                                                 const std::vector<std::string>& flags_here,
                                                 const std::string& device_here);
// The same against this machine running `backend` at `threads` (0 = every core).
std::vector<std::string> calibration_differences(const Calibration& calibration, const Backend& backend, int threads);

// The calibration in words: the file, when and how long it was measured, on which machine,
// in what state; then the machine differences when `differences` is not empty.
std::string describe_calibration(const Calibration& calibration, const std::filesystem::path& file, int64_t now_seconds,
                                 const std::vector<std::string>& differences);

// Measures this machine's roofs, fixed costs and cache on `backend` (measure_roofs) and
// returns the calibration; `machine` is the check taken before (its contention is recorded).
Calibration calibrate_machine(Backend& backend, int threads, const RoofMeasureOptions& options, std::ostream* progress,
                              const MachineState* machine);

// The calibration procedure, one for `decodelab calibrate` and for a command that finds this
// machine uncalibrated: the machine checked first unless `machine` (a check just taken) is
// given — a contended one said on `progress`, else stderr, and recorded —, measured
// (calibrate_machine, its steps on `progress`), the CPU kernel variant recorded (`kernels`:
// the choice calibrate timed, or the variant a command's backend already runs, with a reason
// saying it was not timed), and written to `file` atomically, replacing it whole.
Calibration calibrate_to_file(Backend& backend, int threads, const std::filesystem::path& file,
                              const RoofMeasureOptions& options, std::ostream* progress, const MachineState* machine,
                              const KernelVariantChoice& kernels);

// Small probes for the test suite: every figure measured, in seconds rather than a minute
// (the figures mean little).
RoofMeasureOptions quick_calibration_options();

// How the calibration of this backend's thread count stands (calibration_path(threads)):
// `spec` when the file exists and describes this machine; else why not (`why_not`: no file,
// another format, or what differs). A file that cannot be read is an InputError.
struct CalibrationLookup {
  std::optional<DeviceSpec> spec;
  std::filesystem::path file;
  bool exists = false;  // the file is there (of another machine or format when `spec` is empty)
  std::string why_not;
};
CalibrationLookup find_calibration(const Backend& backend, int threads);

// The CPU kernel variant this host's calibration at `threads` chose (for
// BackendOptions::cpu_kernels, which DECODELAB_CPU_KERNELS overrides): empty without a
// readable calibration of this host and CPU model, or one that chose none. Made before the
// backend, so that the backend runs the kernels the calibration's roofs were measured with.
std::string calibrated_cpu_kernels(int threads);

}  // namespace decodelab
