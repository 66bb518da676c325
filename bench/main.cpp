// decodelab_bench_cpu: issue 7's measurements of the CPU backend in one command — the
// machine's yardsticks (STREAM, FMA peak), decode at batch 1 per dtype, batched decode,
// prefill, the matmul kernel against OpenBLAS, the other ops, and the stream's own
// costs — printed as markdown tables with each target checked against a yardstick
// measured in the same run, and written as JSON with --json.
//
//   decodelab_bench_cpu [--threads N] [--rounds R] [--json FILE] [--strict] [SECTION...]
//
// Sections: decode batched prefill matmul matvec matvec-step ops overheads (default: all); the
// yardsticks (stream, fma) always run first.
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <string>
#include <vector>

#include "bench/bench_arguments.h"
#include "bench/bench_report.h"
#include "bench/bench_support.h"
#include "bench/end_to_end.h"
#include "bench/kernel_benches.h"
#include "bench/matvec_step.h"
#include "bench/stream_costs.h"
#include "bench/yardsticks.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/base/errors.h"
#include "lab/output_files.h"
#include "profiling/atomic_file.h"

using namespace decodelab;
using namespace decodelab::bench;

namespace {

const std::vector<std::string> kSections = {"decode", "batched", "prefill", "matmul", "matvec", "matvec-step", "ops", "overheads"};

std::string local_timestamp() {
  char text[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  return text;
}

int run(const std::vector<std::string>& sections, int threads, int rounds, const std::string& json_file, bool strict) {
  auto wanted = [&](const char* name) {
    return sections.empty() || std::find(sections.begin(), sections.end(), name) != sections.end();
  };
  if (!json_file.empty()) check_output_path(json_file, "--json");
  BackendOptions backend_options;
  backend_options.threads = threads;
  auto backend = make_cpu_backend(backend_options);
  const int kernel_threads = threads > 0 ? threads : omp_get_num_procs();
  BenchReport report;
  std::printf("# decodelab CPU benchmark\n\ndevice: %s\nbuild: %s\ndate: %s\n", backend->device_description().c_str(),
              DECODELAB_BUILD_TYPE, local_timestamp().c_str());
  if (std::strcmp(DECODELAB_BUILD_TYPE, "Release") != 0) std::printf("\nWARNING: not a Release build; numbers mean little\n");
  report.root()["device"] = backend->device_description();
  report.root()["threads"] = kernel_threads;
  report.root()["build"] = DECODELAB_BUILD_TYPE;
  report.root()["date"] = local_timestamp();

  // The yardsticks first: the later sections are stated as ratios to them (and the
  // traces of the end-to-end sections are analysed against them).
  Yardsticks yardsticks;
  yardsticks.stream = bench_stream(report, kernel_threads);
  yardsticks.fma_peak = bench_fma_peak(report, *backend);

  if (wanted("decode")) bench_decode(report, *backend, {kernel_threads, rounds});
  if (wanted("batched")) bench_batched_decode(report, *backend, yardsticks);
  if (wanted("prefill")) bench_prefill(report, *backend, yardsticks);
  if (wanted("matmul")) bench_matmul(report, *backend, kernel_threads, yardsticks.fma_peak);
  if (wanted("matvec")) bench_matvec(report, *backend, yardsticks.stream);
  if (wanted("matvec-step")) bench_matvec_step(report, *backend, kernel_threads, rounds);
  if (wanted("ops")) bench_other_ops(report, *backend);
  if (wanted("overheads")) bench_stream_costs(report, *backend, yardsticks);

  const int missed = report.print_checks("targets (issue 7), each against a yardstick measured in this run");
  if (!json_file.empty()) {
    save_file_atomically(json_file, report.json().dump(2) + "\n");
    std::printf("results written to %s\n", json_file.c_str());
  }
  return strict && missed > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"decodelab_bench_cpu: the CPU backend against this machine's roofs (issue 7's measurements)"};
  std::vector<std::string> sections;
  int threads = 0;
  int rounds = 5;
  std::string json_file;
  bool strict = false;
  app.add_option("sections", sections, "Sections to run (default: all)")->check(CLI::IsMember(kSections));
  app.add_option("--threads", threads, "CPU kernel threads (0 = every core)")->check(CLI::Range(0, 1024));
  app.add_option("--rounds", rounds, "Interleaved rounds of decode and matvec-step (each: fp16, bf16, fp32 between triad passes)")
      ->check(CLI::Range(1, 100));
  app.add_option("--json", json_file, "Write every figure and target as JSON");
  app.add_flag("--strict", strict, "Exit 1 when a target is missed");
  if (const std::optional<int> exit_code = parse_arguments(app, argc, argv)) return *exit_code;
  return exit_code_of([&] { return run(sections, threads, rounds, json_file, strict); });
}
