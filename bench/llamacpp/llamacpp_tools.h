// Running an existing llama.cpp build (never built or shipped by decodelab): its
// `llama-simple` for greedy tokens and its `llama-batched-bench` for decode and prefill
// speed, as separate processes whose output is parsed here. The one non-obvious choice:
// batched-bench is the tool whose workload matches decodelab's scenario exactly — a
// prompt of `pp` tokens per sequence, then `tg` decode steps of `pl` sequences, the decode
// phase timed on its own — where llama-bench's generation test starts from an empty cache.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace decodelab::bench {

struct LlamaCpp {
  std::filesystem::path simple;         // llama-simple
  std::filesystem::path batched_bench;  // llama-batched-bench
  std::string build;                    // "4754 (c392e509)" as its binaries report it, once run
};

// Finds the two tools in `build_directory` or its bin/; InputError naming what is missing.
LlamaCpp find_llamacpp(const std::filesystem::path& build_directory);

// Greedy continuation of `prompt_text` (the synthetic vocabulary's characters) by llama-simple:
// the text it printed after the prompt. Its output is logged to `log`.
std::string llamacpp_greedy_text(LlamaCpp& llama, const std::filesystem::path& gguf, const std::string& prompt_text,
                                 int new_tokens, const std::filesystem::path& log);

struct BatchedBenchRow {
  int prompt = 0, generated = 0, sequences = 0;
  double prefill_tokens_per_s = 0;  // S_PP: every sequence's prompt tokens over the prefill time
  double decode_tokens_per_s = 0;   // S_TG: every sequence's generated tokens over the decode time
};

// One llama-batched-bench run on `threads` threads: every (prompt, sequences) pair with
// `generated` decode steps each. Output logged to `log`.
std::vector<BatchedBenchRow> llamacpp_batched_bench(LlamaCpp& llama, const std::filesystem::path& gguf, int threads,
                                                    const std::vector<int>& prompts, int generated,
                                                    const std::vector<int>& sequences,
                                                    const std::filesystem::path& log);

}  // namespace decodelab::bench
