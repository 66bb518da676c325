#include "profiling/measure/kernel_variant_choice.h"

#include <algorithm>
#include <memory>

#include "engine/backend.h"
#include "engine/device_buffer.h"
#include "profiling/measure/op_timer.h"
#include "profiling/units.h"

namespace decodelab {

KernelVariantChoice choose_kernel_variant(std::vector<KernelVariantTiming> timings) {
  KernelVariantChoice choice;
  choice.timings = std::move(timings);
  if (choice.timings.empty()) return choice;
  const KernelVariantTiming& widest = choice.timings.front();
  auto cost = [&](const KernelVariantTiming& timing) {
    return 0.5 * (timing.decode_matvec_seconds / widest.decode_matvec_seconds +
                  timing.prefill_panel_seconds / widest.prefill_panel_seconds);
  };
  const KernelVariantTiming* best = &widest;
  for (const KernelVariantTiming& timing : choice.timings) {
    if (cost(timing) < cost(*best)) best = &timing;
  }
  const double margin = std::max(widest.spread, best->spread);
  if (best != &widest && cost(*best) < 1.0 - margin) {
    choice.chosen = best->variant;
    choice.reason = best->variant + " is " + format_percent(1.0 - cost(*best)) + " faster than " + widest.variant +
                    " here (decode matvec and prefill panel together), beyond the timings' spread of " +
                    format_percent(margin);
  } else {
    choice.chosen = widest.variant;
    choice.reason = best == &widest ? widest.variant + ", the widest this CPU runs, is also the fastest"
                                    : widest.variant + ", the widest this CPU runs: " + best->variant + " is within the " +
                                          "timings' spread of " + format_percent(margin) + " of it";
  }
  return choice;
}

namespace {

// One variant's two medians on a fresh CPU backend running it.
KernelVariantTiming time_variant(const std::string& variant, const KernelVariantOptions& options) {
  BackendOptions backend_options;
  backend_options.threads = options.threads;
  backend_options.cpu_kernels = variant;
  const std::unique_ptr<Backend> backend = make_backend(BackendKind::Cpu, backend_options);
  const int64_t k = options.width;
  const int64_t n = (static_cast<int64_t>(2.75 * options.width) + 255) / 256 * 256;
  const size_t weight_bytes = static_cast<size_t>(n * k) * dtype_size(DType::F16);
  const size_t copies = std::max<size_t>(1, options.decode_bytes / weight_bytes);
  const int64_t rows = options.prefill_rows;

  DeviceBuffer weights(*backend, copies * weight_bytes);
  DeviceBuffer square(*backend, static_cast<size_t>(k * k) * dtype_size(DType::F16));
  DeviceBuffer x(*backend, static_cast<size_t>(rows * k) * dtype_size(DType::F16));
  DeviceBuffer out(*backend, static_cast<size_t>(rows * std::max(n, k)) * dtype_size(DType::F16));
  fill_random(*backend, weights.get(), DType::F16, copies * static_cast<size_t>(n * k), 41);
  fill_random(*backend, square.get(), DType::F16, static_cast<size_t>(k * k), 42);
  fill_random(*backend, x.get(), DType::F16, static_cast<size_t>(rows * k), 43);
  backend->synchronize();

  const Tensor one_row = Tensor::contiguous(x.get(), DType::F16, {1, k});
  const Tensor panel_rows = Tensor::contiguous(x.get(), DType::F16, {rows, k});
  const Tensor square_weight = Tensor::contiguous(square.get(), DType::F16, {k, k});
  const Tensor decode_out = Tensor::contiguous(out.get(), DType::F16, {1, n});
  const Tensor panel_out = Tensor::contiguous(out.get(), DType::F16, {rows, k});
  auto decode = [&](const std::function<OpId()>& next) {
    for (size_t copy = 0; copy < copies; ++copy) {
      const Tensor weight =
          Tensor::contiguous(static_cast<char*>(weights.get()) + copy * weight_bytes, DType::F16, {n, k});
      backend->matmul(one_row, weight, decode_out, next());
    }
  };
  auto prefill = [&](const std::function<OpId()>& next) { backend->matmul(panel_rows, square_weight, panel_out, next()); };

  RoofMeasureOptions timing_options;
  timing_options.repeats = options.repeats;
  timing_options.checkpoint = options.checkpoint;
  OpTimer timer(*backend, timing_options);
  const std::vector<TimedSamples> samples = timer.sample_interleaved({decode, prefill});
  KernelVariantTiming timing;
  timing.variant = variant;
  timing.decode_matvec_seconds = samples[0].median / static_cast<double>(copies);
  timing.prefill_panel_seconds = samples[1].median;
  timing.spread = std::max(samples[0].spread, samples[1].spread);
  return timing;
}

}  // namespace

KernelVariantChoice measure_kernel_variants(const KernelVariantOptions& options) {
  BackendOptions probe_options;
  probe_options.threads = options.threads;
  const std::vector<std::string> variants = make_backend(BackendKind::Cpu, probe_options)->kernel_variants();
  std::vector<KernelVariantTiming> timings;
  struct Restore {  // a CPU backend made with no variant named: the process's kernels as before
    int threads;
    ~Restore() {
      BackendOptions plain;
      plain.threads = threads;
      (void)make_backend(BackendKind::Cpu, plain);
    }
  } restore{options.threads};
  for (const std::string& variant : variants) timings.push_back(time_variant(variant, options));
  return choose_kernel_variant(std::move(timings));
}

nlohmann::json to_json(const KernelVariantChoice& choice) {
  nlohmann::json timings = nlohmann::json::array();
  for (const KernelVariantTiming& timing : choice.timings) {
    timings.push_back({{"variant", timing.variant},
                       {"decode_matvec_seconds", timing.decode_matvec_seconds},
                       {"prefill_panel_seconds", timing.prefill_panel_seconds},
                       {"spread", timing.spread}});
  }
  return {{"chosen", choice.chosen}, {"reason", choice.reason}, {"timings", timings}};
}

}  // namespace decodelab
