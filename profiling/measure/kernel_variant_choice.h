// Which build of the CPU kernels this machine should run (engine/cpu/kernel_variant.h), chosen
// by measurement rather than by the instruction sets alone. The widest variant a CPU runs is
// not always the fastest: where a core splits 512-bit operations in two, or lowers its clock
// under them, the AVX2 kernels can match or beat the AVX-512 ones, and a memory-bound decode
// step cannot tell them apart at all. So `decodelab calibrate` times each variant on the two
// kinds of matmul a decode engine spends its time in — a batch-1 decode matvec (the weights
// streamed) and a panel of prefill rows (the FMAs) — and keeps the widest unless another is
// faster by more than the timings' own spread.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace decodelab {

struct KernelVariantTiming {
  std::string variant;
  double decode_matvec_seconds = 0;   // median of one batch-1 matvec over the weights
  double prefill_panel_seconds = 0;  // median of one panel of prefill rows
  double spread = 0;           // the larger of the two medians' spreads (TimedSamples::spread)
};

struct KernelVariantChoice {
  std::vector<KernelVariantTiming> timings;  // every variant this CPU runs, widest first
  std::string chosen;
  std::string reason;  // one sentence, for calibrate's output
};

// The choice among timings (widest first): each variant's cost is the mean of its two
// medians relative to the widest's; the one with the lowest cost is chosen if it beats the
// widest by more than the larger spread of the two, else the widest. Empty timings: "".
KernelVariantChoice choose_kernel_variant(std::vector<KernelVariantTiming> timings);

struct KernelVariantOptions {
  int threads = 0;  // the CPU backend's kernel threads (0: every core)
  int repeats = 5;
  // The shapes: a decode matvec of `width` × 2.75·width fp16 weights, copied until they
  // span `decode_bytes` (read in turn, so that they come from memory, not the cache), and a
  // prefill panel of `prefill_rows` rows against width × width fp16 weights.
  int width = 1024;
  size_t decode_bytes = size_t{256} << 20;
  int prefill_rows = 128;
  std::function<void()> checkpoint;  // called before every timed op; throws to abandon
};

// Times every variant the CPU backend runs on this machine, then chooses. The process's
// kernels are left as they were (the variant a CPU backend made without options runs).
KernelVariantChoice measure_kernel_variants(const KernelVariantOptions& options);

nlohmann::json to_json(const KernelVariantChoice& choice);

}  // namespace decodelab
