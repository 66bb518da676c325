// The side-by-side measurement of decodelab against llama.cpp (see compare_main.cpp):
// weights exported once per dtype, a greedy-token check, then interleaved rounds per
// thread count, each engine's figure held against the STREAM triad measured around it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "engine/base/dtype.h"

namespace decodelab::bench {

struct SideBySideOptions {
  std::filesystem::path llama_cpp_directory;
  std::string model = "lab-small";
  int rounds = 3;
  std::vector<int> threads = {1, 2};
  std::vector<DType> dtypes;
  std::filesystem::path work_directory = "llamacpp-compare";
  int check_prompt_tokens = 32;  // the greedy check: prompt length and tokens compared
};

// Runs everything, printing as it goes; returns the number of issue 17 targets missed.
int run_side_by_side(BenchReport& report, const SideBySideOptions& options);

}  // namespace decodelab::bench
