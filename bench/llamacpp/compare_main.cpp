// decodelab_vs_llamacpp: decodelab and llama.cpp side by side on one machine, on the same
// weights (issue 17). Writes a model's seeded random weights as a Hugging Face checkpoint
// and as GGUF, checks that both engines continue a prompt with the same greedy tokens,
// then runs both interleaved — a STREAM triad before, between and after each pair — at
// each thread count and dtype: decode at batch 1 and 4 (prompt 128, 128 new tokens) and a
// 512-token prefill. Prints each figure's median and range, the ratio decodelab ÷
// llama.cpp per round, and issue 17's targets; --json writes them all.
//
//   decodelab_vs_llamacpp --llama-cpp BUILD_DIR [--model lab-small] [--rounds 3]
//                         [--threads 1,2] [--dtypes fp16,fp32] [--work DIR] [--json FILE] [--strict]
//
// llama.cpp is not a dependency: BUILD_DIR is an existing build holding llama-simple and
// llama-batched-bench (bench/llamacpp-compare.sh skips when none is given).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "bench/bench_arguments.h"
#include "bench/bench_support.h"
#include "bench/llamacpp/side_by_side.h"
#include "engine/base/errors.h"
#include "lab/output_files.h"
#include "profiling/atomic_file.h"

using namespace decodelab;
using namespace decodelab::bench;

int main(int argc, char** argv) {
  CLI::App app{"decodelab_vs_llamacpp: decodelab and llama.cpp side by side on the same weights (issue 17)"};
  SideBySideOptions options;
  std::string llama_dir, json_file;
  bool strict = false;
  std::vector<std::string> dtypes = {"fp16", "fp32"};
  app.add_option("--llama-cpp", llama_dir, "An existing llama.cpp build directory (holding llama-simple and "
                                           "llama-batched-bench, or bin/ with them)")
      ->required();
  app.add_option("--model", options.model, "Catalogue model whose shape the random weights take");
  app.add_option("--rounds", options.rounds, "Interleaved rounds per thread count and dtype")->check(CLI::Range(1, 50));
  app.add_option("--threads", options.threads, "Thread counts, each run by both engines")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  app.add_option("--dtypes", dtypes, "Weight dtypes (fp16, bf16, fp32)")->delimiter(',');
  app.add_option("--work", options.work_directory, "Where the checkpoint, the GGUF files and the tools' logs go");
  app.add_option("--json", json_file, "Write every figure and target as JSON");
  app.add_flag("--strict", strict, "Exit 1 when a target is missed");
  if (const std::optional<int> exit_code = parse_arguments(app, argc, argv)) return *exit_code;
  return exit_code_of([&] {
    if (!json_file.empty()) check_output_path(json_file, "--json");
    for (const std::string& name : dtypes) {
      const std::optional<DType> dtype = parse_dtype(name);
      if (!dtype || *dtype == DType::I32) throw InputError("", 0, "--dtypes", "expected fp16, bf16 or fp32, got " + name);
      options.dtypes.push_back(*dtype);
    }
    options.llama_cpp_directory = llama_dir;
    BenchReport report;
    const int missed = run_side_by_side(report, options);
    if (!json_file.empty()) {
      save_file_atomically(json_file, report.json().dump(2) + "\n");
      std::printf("results written to %s\n", json_file.c_str());
    }
    return strict && missed > 0 ? 1 : 0;
  });
}
