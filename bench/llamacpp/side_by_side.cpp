// The side-by-side run (see side_by_side.h). Each (threads, dtype) pair runs `rounds`
// rounds; a round runs llama.cpp's three workloads as two processes and decodelab's three
// in this process, in alternating order, with a triad pass before, between and after.
// decodelab runs on one CPU backend per thread count (a second backend beside it would
// add a second OpenMP team, which slows both), created after llama.cpp's tools are found.
#include "bench/llamacpp/side_by_side.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include "bench/bench_support.h"
#include "bench/llamacpp/llamacpp_tools.h"
#include "bench/llamacpp/model_export.h"
#include "bench/yardsticks.h"
#include "bugs/bug_set.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/base/errors.h"
#include "engine/model/generator.h"
#include "engine/checkpoint/hf_checkpoint.h"
#include "lab/scenario/model_catalog.h"
#include "lab/run/run_metrics.h"

namespace decodelab::bench {

namespace {

namespace fs = std::filesystem;

constexpr int kPrompt = 128, kNewTokens = 128, kBatch = 4, kPrefillPrompt = 512;

// The three workloads each engine runs per round.
enum Job { DecodeBatch1, DecodeBatch4, Prefill, kJobs };
const char* const kJobNames[kJobs] = {"decode, batch 1", "decode, batch 4", "prefill 512"};

Workload workload_of(int which) {
  Workload workload;
  workload.requests = workload.batch_size = which == DecodeBatch4 ? kBatch : 1;
  workload.prompt_tokens = which == Prefill ? kPrefillPrompt : kPrompt;
  workload.new_tokens = which == Prefill ? 1 : kNewTokens;
  return workload;
}

struct Samples {
  std::vector<double> llama, ours, ratio;  // tok/s per round; ratio = ours / llama in that round
  std::vector<double> ours_gbs, ours_of_triad, llama_gbs, llama_of_triad;  // batch-1 decode only
};

std::string range_of(const std::vector<double>& values, int decimals) {
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  return fixed(*low, decimals) + "-" + fixed(*high, decimals);
}

struct ExportedModel {
  fs::path checkpoint, gguf;
};

ExportedModel export_model(const ModelConfig& config, DType dtype, const fs::path& work) {
  BackendOptions backend_options;
  auto backend = make_cpu_backend(backend_options);
  ModelWeights weights = random_weights(*backend, config, dtype, 0);
  ExportedModel exported{work / (config.name + "-" + dtype_name(dtype)), work / (config.name + "-" + dtype_name(dtype) + ".gguf")};
  write_hf_checkpoint(exported.checkpoint, config, weights, *backend);
  write_gguf(exported.gguf, config, weights, *backend);
  return exported;
}

// Greedy tokens of both engines after the same prompt; returns how many leading tokens agree.
int check_tokens(BenchReport& report, LlamaCpp& llama, const ModelConfig& config, DType dtype,
                 const ExportedModel& exported, int count, const fs::path& work, nlohmann::json& json) {
  BackendOptions backend_options;
  auto backend = make_cpu_backend(backend_options);
  Engine engine(*backend, config, load_hf_weights(*backend, exported.checkpoint, config, dtype), BugSet{});
  Workload workload;
  workload.prompt_tokens = count;
  workload.new_tokens = count;
  workload.seed = 17;
  const std::vector<int32_t> prompt = prompt_for_request(workload, 0, config.vocab_size);
  const std::vector<int32_t> ours = engine.generate(workload, nullptr).tokens.at(0);
  int unknown = 0;
  const std::string text = llamacpp_greedy_text(llama, exported.gguf, tokens_text(prompt), count,
                                                work / (std::string("llama-simple-") + dtype_name(dtype) + ".log"));
  const std::vector<int32_t> theirs = text_tokens(text, config.vocab_size, &unknown);
  int agree = 0;
  while (agree < count && agree < static_cast<int>(theirs.size()) && ours[agree] == theirs[agree]) ++agree;
  // llama-simple stops early only at its end-of-generation token (id 2).
  const bool stopped_at_eos = static_cast<int>(theirs.size()) < count && agree == static_cast<int>(theirs.size()) &&
                              ours[agree] == 2;
  std::string note = std::to_string(agree) + " of " + std::to_string(count) + " greedy tokens agree";
  if (stopped_at_eos) note += " (llama.cpp stopped at its end-of-generation token, id 2, which decodelab also chose)";
  if (unknown > 0) note += "; " + std::to_string(unknown) + " characters outside the vocabulary in llama.cpp's output";
  report.note(std::string(dtype_name(dtype)) + ": " + note);
  json[dtype_name(dtype)] = {{"prompt", prompt}, {"decodelab", ours}, {"llama_cpp", theirs}, {"agree", agree}};
  return stopped_at_eos ? count : agree;
}

}  // namespace

int run_side_by_side(BenchReport& report, const SideBySideOptions& options) {
  LlamaCpp llama = find_llamacpp(options.llama_cpp_directory);
  const std::optional<ModelSource> source = find_model(options.model, fs::current_path());
  if (!source || source->kind != ModelSourceKind::Catalog)
    throw InputError("", 0, "--model", "expected a catalogue model name (decodelab list), got " + options.model);
  ModelConfig config = load_model_config(*source);
  fs::create_directories(options.work_directory);
  const fs::path work = fs::absolute(options.work_directory);

  std::printf("# decodelab vs llama.cpp, side by side\n\nmodel: %s (seeded random weights, seed 0)\nllama.cpp: %s\n",
              config.name.c_str(), fs::absolute(options.llama_cpp_directory).c_str());
  std::map<DType, ExportedModel> exported;
  for (DType dtype : options.dtypes) exported[dtype] = export_model(config, dtype, work);

  report.heading("greedy tokens", "The same seeded prompt of " + std::to_string(options.check_prompt_tokens) +
                                      " ids, continued greedily by both engines (llama.cpp: llama-simple).");
  nlohmann::json& tokens_json = report.section("greedy_tokens") = nlohmann::json::object();
  for (DType dtype : options.dtypes)
    check_tokens(report, llama, config, dtype, exported[dtype], options.check_prompt_tokens, work, tokens_json);

  nlohmann::json& json = report.section("side_by_side") = nlohmann::json::array();
  std::map<std::pair<int, DType>, Samples[kJobs]> results;
  for (int threads : options.threads) {
    BackendOptions backend_options;
    backend_options.threads = threads;
    auto backend = make_cpu_backend(backend_options);
    std::map<DType, std::unique_ptr<Engine>> engines;
    for (DType dtype : options.dtypes) {
      engines[dtype] = std::make_unique<Engine>(
          *backend, config, load_hf_weights(*backend, exported[dtype].checkpoint, config, dtype), BugSet{});
      for (int which = 0; which < kJobs; ++which) engines[dtype]->generate(workload_of(which), nullptr);  // warm-up
    }
    for (int round = 0; round < options.rounds; ++round) {
      for (size_t turn = 0; turn < options.dtypes.size(); ++turn) {
        const DType dtype = options.dtypes[(turn + static_cast<size_t>(round)) % options.dtypes.size()];
        Samples (&samples)[kJobs] = results[{threads, dtype}];
        double llama_tps[kJobs] = {}, ours_tps[kJobs] = {}, ours_gbs = 0;
        auto run_llama = [&] {
          const std::string tag = std::to_string(threads) + "t-" + dtype_name(dtype);
          const auto decode = llamacpp_batched_bench(llama, exported[dtype].gguf, threads, {kPrompt}, kNewTokens,
                                                     {1, kBatch}, work / ("batched-bench-decode-" + tag + ".log"));
          const auto prefill = llamacpp_batched_bench(llama, exported[dtype].gguf, threads, {kPrefillPrompt}, 1, {1},
                                                      work / ("batched-bench-prefill-" + tag + ".log"));
          llama_tps[DecodeBatch1] = decode[0].decode_tokens_per_s;
          llama_tps[DecodeBatch4] = decode[1].decode_tokens_per_s;
          llama_tps[Prefill] = prefill[0].prefill_tokens_per_s;
        };
        auto run_ours = [&] {
          for (int which = 0; which < kJobs; ++which) {
            const Workload workload = workload_of(which);
            const GenerationTiming timing = engines[dtype]->generate(workload, nullptr).timing;
            if (which == Prefill) {
              ours_tps[which] = workload.prompt_tokens * workload.requests / (timing.prefill_ms / 1e3);
            } else {
              const RepeatMetrics metrics = repeat_metrics(timing, config, dtype, workload);
              ours_tps[which] = metrics.decode_tokens_per_s;
              if (which == DecodeBatch1) ours_gbs = metrics.decode_bandwidth_gbps;
            }
          }
        };
        const bool llama_first = round % 2 == 0;
        const double triad_start = triad_gbs(threads);
        if (llama_first) run_llama(); else run_ours();
        const double triad_middle = triad_gbs(threads);
        if (llama_first) run_ours(); else run_llama();
        const double triad_end = triad_gbs(threads);
        const double triad_first = (triad_start + triad_middle) / 2, triad_second = (triad_middle + triad_end) / 2;
        const double llama_triad = llama_first ? triad_first : triad_second;
        const double ours_triad = llama_first ? triad_second : triad_first;
        for (int which = 0; which < kJobs; ++which) {
          samples[which].llama.push_back(llama_tps[which]);
          samples[which].ours.push_back(ours_tps[which]);
          samples[which].ratio.push_back(ours_tps[which] / llama_tps[which]);
        }
        // Both engines stream the same bytes per token: the run table's byte model.
        const double llama_gbs = ours_gbs * llama_tps[DecodeBatch1] / ours_tps[DecodeBatch1];
        samples[DecodeBatch1].ours_gbs.push_back(ours_gbs);
        samples[DecodeBatch1].ours_of_triad.push_back(ours_gbs / ours_triad);
        samples[DecodeBatch1].llama_gbs.push_back(llama_gbs);
        samples[DecodeBatch1].llama_of_triad.push_back(llama_gbs / llama_triad);
        json.push_back({{"threads", threads},
                        {"dtype", dtype_name(dtype)},
                        {"round", round},
                        {"llama_cpp_first", llama_first},
                        {"triad_gbs", {triad_start, triad_middle, triad_end}},
                        {"llama_cpp_tokens_per_s", llama_tps},
                        {"decodelab_tokens_per_s", ours_tps},
                        {"decodelab_decode_bandwidth_gbps", ours_gbs}});
        std::printf("round %d, %d thread%s, %s: llama.cpp %.1f / %.1f / %.1f tok/s, decodelab %.1f / %.1f / %.1f "
                    "(decode b1 / decode b4 / prefill); triad %.1f %.1f %.1f GB/s\n",
                    round + 1, threads, threads > 1 ? "s" : "", dtype_name(dtype), llama_tps[0], llama_tps[1],
                    llama_tps[2], ours_tps[0], ours_tps[1], ours_tps[2], triad_start, triad_middle, triad_end);
        std::fflush(stdout);
      }
    }
  }
  report.root()["llama_cpp_build"] = llama.build;
  report.root()["model"] = config.name;

  std::vector<std::vector<std::string>> rows, bandwidth_rows;
  for (int threads : options.threads) {
    for (DType dtype : options.dtypes) {
      const Samples (&samples)[kJobs] = results[{threads, dtype}];
      for (int which = 0; which < kJobs; ++which) {
        const Samples& s = samples[which];
        rows.push_back({kJobNames[which], dtype_name(dtype), std::to_string(threads), fixed(median_of(s.llama)),
                        range_of(s.llama, 1), fixed(median_of(s.ours)), range_of(s.ours, 1),
                        "**" + fixed(median_of(s.ratio), 2) + "x**", range_of(s.ratio, 2)});
      }
      const Samples& b1 = samples[DecodeBatch1];
      bandwidth_rows.push_back({dtype_name(dtype), std::to_string(threads), fixed(median_of(b1.llama_gbs)),
                                percent(median_of(b1.llama_of_triad)), fixed(median_of(b1.ours_gbs)),
                                percent(median_of(b1.ours_of_triad)),
                                percent(*std::min_element(b1.ours_of_triad.begin(), b1.ours_of_triad.end())) + "-" +
                                    percent(*std::max_element(b1.ours_of_triad.begin(), b1.ours_of_triad.end()))});
    }
  }
  report.heading("decodelab ÷ llama.cpp (llama.cpp " + llama.build + ", " + config.name + ", " +
                     std::to_string(options.rounds) + " interleaved rounds)",
                 "tok/s medians with their ranges; the ratio is decodelab over llama.cpp within each round (median "
                 "and range of those). Decode: prompt 128, 128 new tokens per sequence, decode phase only (llama.cpp: "
                 "llama-batched-bench S_TG). Prefill: 512 prompt tokens over the prefill time (S_PP).");
  report.table({"workload", "dtype", "threads", "llama.cpp tok/s", "range", "decodelab tok/s", "range",
                "decodelab ÷ llama.cpp", "range"},
               rows);
  report.heading("batch-1 decode: weight bytes streamed against the STREAM triad around each run",
                 "GB/s: every weight a step streams plus the KV cache at the mean context (the figure `decodelab run` "
                 "prints), over decode time; llama.cpp is credited the same bytes per token.");
  report.table({"dtype", "threads", "llama.cpp GB/s", "of triad", "decodelab GB/s", "of triad", "range"},
               bandwidth_rows);

  // The targets, the same on every machine and at every thread count measured (issue 47).
  auto ratio = [&](int threads, DType dtype, int which) {
    auto found = results.find({threads, dtype});
    return found == results.end() ? -1.0 : median_of(found->second[which].ratio);
  };
  const std::string basis = "median of per-round ratios, interleaved";
  for (int threads : options.threads) {
    const std::string t = std::to_string(threads) + (threads > 1 ? " threads" : " thread");
    for (DType dtype : options.dtypes) {
      if (!results.count({threads, dtype})) continue;
      const std::string d = dtype_name(dtype);
      const double batch1_target = dtype == DType::F32 ? 1.0 : threads >= 2 ? 1.2 : 1.0;
      report.check({"decode " + d + ", batch 1, " + t + ": decodelab ÷ llama.cpp", ratio(threads, dtype, DecodeBatch1),
                    batch1_target, "x", basis});
      report.check({"decode " + d + ", batch 4, " + t + ": decodelab ÷ llama.cpp", ratio(threads, dtype, DecodeBatch4),
                    1.2, "x", basis});
      report.check({"prefill 512 " + d + ", " + t + ": decodelab ÷ llama.cpp", ratio(threads, dtype, Prefill), 1.1, "x",
                    basis});
    }
    if (results.count({threads, DType::F16})) {
      report.check({"decode fp16, batch 1, " + t + ": GB/s of the triad around it",
                    100.0 * median_of(results[{threads, DType::F16}][DecodeBatch1].ours_of_triad), 85, "%",
                    "median over rounds"});
    }
    if (results.count({threads, DType::F16}) && results.count({threads, DType::BF16})) {
      // bf16 streams the same bytes as fp16: it should decode as fast.
      report.check({"decode bf16 ÷ decodelab's own fp16, batch 1, " + t,
                    median_of(results[{threads, DType::BF16}][DecodeBatch1].ours) /
                        median_of(results[{threads, DType::F16}][DecodeBatch1].ours),
                    0.95, "x", "ratio of the tok/s medians"});
    }
  }
  return report.print_checks("targets, decodelab against llama.cpp measured in this run");
}

}  // namespace decodelab::bench
