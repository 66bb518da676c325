// Measuring roofs against a backend (the per-machine cache of CPU measurements is
// profiling/measure/roof_cache.cpp). All timing here goes through the backend's own device timings of single ops, so the
// figures exclude enqueue and sync costs, exactly like the ops they will be compared to.
#include "profiling/measure/roof_measure.h"

#include <algorithm>
#include <exception>
#include <cmath>
#include <ctime>
#include <functional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "engine/device_buffer.h"
#include "engine/base/errors.h"
#include "engine/model/weights.h"
#include "profiling/measure/attention_roof.h"
#include "profiling/measure/cache_level.h"
#include "profiling/model/cost_model.h"
#include "profiling/measure/machine_check.h"
#include "profiling/measure/matvec_product.h"
#include "profiling/measure/op_timer.h"
#include "profiling/model/statistics.h"
#include "profiling/units.h"

namespace decodelab {

std::vector<DType> default_matmul_dtypes() { return {DType::F32, DType::F16, DType::BF16}; }

TimedSamples TimedSamples::of(std::vector<double> seconds, double noisy_spread) {
  TimedSamples samples;
  samples.seconds = std::move(seconds);
  if (samples.seconds.empty()) return samples;
  std::vector<double> sorted = samples.seconds;
  std::sort(sorted.begin(), sorted.end());
  samples.median = median_of(sorted);
  samples.best = sorted.front();
  // Five samples or more: a fifth of them left out at either end.
  const size_t trim = sorted.size() >= 5 ? sorted.size() / 5 : 0;
  samples.spread = samples.median > 0 ? (sorted[sorted.size() - 1 - trim] - sorted[trim]) / samples.median : 0.0;
  samples.noisy = samples.spread > noisy_spread;
  return samples;
}

bool is_gpu_backend(const Backend& backend) { return backend.name() == "cuda"; }

namespace {

// "best of 5, median 12% slower, spread 20% (noisy)"
std::string spread_note(const TimedSamples& samples) {
  return "best of " + std::to_string(samples.seconds.size()) + ", median " +
         format_percent(samples.best > 0 ? samples.median / samples.best - 1 : 0) + " slower, spread " +
         format_percent(samples.spread) + (samples.noisy ? " (NOISY)" : "");
}

// "median of 5, best 12% faster, spread 20% (noisy)": for the kernel rates taken at the median.
std::string median_note(const TimedSamples& samples) {
  return "median of " + std::to_string(samples.seconds.size()) + ", best " +
         format_percent(samples.median > 0 ? 1 - samples.best / samples.median : 0) + " faster, spread " +
         format_percent(samples.spread) + (samples.noisy ? " (NOISY)" : "");
}

}  // namespace

CopyMeasurement measure_copy(Backend& backend, size_t source_bytes, const RoofMeasureOptions& options) {
  const int64_t row = 1024;
  const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(source_bytes / sizeof(float)) / row);
  DeviceBuffer source(backend, static_cast<size_t>(rows * row) * sizeof(float));
  DeviceBuffer destination(backend, source.bytes());
  fill_random(backend, source.get(), DType::F32, static_cast<size_t>(rows * row), 1);
  const Tensor from = Tensor::contiguous(source.get(), DType::F32, {rows, row});
  const Tensor to = Tensor::contiguous(destination.get(), DType::F32, {rows, row});
  OpTimer timer(backend, options);
  CopyMeasurement copy;
  copy.timing = timer.sample([&](OpId id) { backend.copy(from, to, id); });
  copy.bytes_moved = 2.0 * static_cast<double>(source.bytes());
  copy.bandwidth = copy.bytes_moved / copy.timing.best;
  return copy;
}

FmaPeak measure_fma_peak(Backend& backend, const RoofMeasureOptions& options, std::ostream* progress) {
  FmaPeak peak;
  const double probe_flops = backend.fma_probe(1, 0);  // also learns the FLOPs of one round
  if (probe_flops <= 0) return peak;
  backend.synchronize();
  backend.take_timings();
  const int64_t rounds = std::max<int64_t>(1, static_cast<int64_t>(options.fma_probe_flops / probe_flops));
  const double flops = probe_flops * static_cast<double>(rounds);
  if (progress) *progress << "measuring the FMA peak: " << format_flops(flops) << "\n";
  OpTimer timer(backend, options);
  peak.timing = timer.sample([&](OpId id) { backend.fma_probe(rounds, id); });
  peak.flops_per_s = flops / peak.timing.best;
  peak.median_flops_per_s = flops / peak.timing.median;
  return peak;
}

namespace {

// The narrow product beside a square one, and the fit of the two (RoofMeasurement::Matmul).
// Per output element the square takes a = 2S/r + e and the narrow one b = 2K/r + e, so
// r = 2(S - K) / (a - b) and e = b - 2K/r; the fit is kept only when both are positive.
void measure_narrow_matmul(Backend& backend, OpTimer& timer, RoofMeasurement::Matmul& matmul, std::ostream* progress) {
  using M = RoofMeasurement;
  const DType dtype = matmul.dtype;
  DeviceBuffer x(backend, static_cast<size_t>(M::kNarrowRows * M::kNarrowDepth) * dtype_size(dtype));
  DeviceBuffer weight(backend, static_cast<size_t>(M::kNarrowColumns * M::kNarrowDepth) * dtype_size(dtype));
  DeviceBuffer out(backend, static_cast<size_t>(M::kNarrowRows * M::kNarrowColumns) * dtype_size(dtype));
  fill_random(backend, x.get(), dtype, static_cast<size_t>(M::kNarrowRows * M::kNarrowDepth), 6);
  fill_random(backend, weight.get(), dtype, static_cast<size_t>(M::kNarrowColumns * M::kNarrowDepth), 7);
  const Tensor x_view = Tensor::contiguous(x.get(), dtype, {M::kNarrowRows, M::kNarrowDepth});
  const Tensor weight_view = Tensor::contiguous(weight.get(), dtype, {M::kNarrowColumns, M::kNarrowDepth});
  const Tensor out_view = Tensor::contiguous(out.get(), dtype, {M::kNarrowRows, M::kNarrowColumns});
  if (progress) {
    *progress << "measuring " << dtype_name(dtype) << " matmul " << M::kNarrowRows << "×" << M::kNarrowColumns << "×"
              << M::kNarrowDepth << "\n";
  }
  matmul.narrow = timer.sample([&](OpId id) { backend.matmul(x_view, weight_view, out_view, id); });
  const double outputs = static_cast<double>(M::kNarrowRows * M::kNarrowColumns);
  const double depth = static_cast<double>(M::kNarrowDepth);
  matmul.narrow_flops_per_s = 2.0 * outputs * depth / matmul.narrow.best;

  const double size = static_cast<double>(matmul.size);
  const double square_per_output = matmul.timing.best / (size * size);
  const double narrow_per_output = matmul.narrow.best / outputs;
  if (size <= depth || square_per_output <= narrow_per_output) return;
  const double rate = 2.0 * (size - depth) / (square_per_output - narrow_per_output);
  const double per_output = narrow_per_output - 2.0 * depth / rate;
  if (per_output <= 0) return;
  matmul.kernel_flops_per_s = rate;
  matmul.output_seconds = per_output;
}

// The decode matmuls (RoofMeasurement::DecodeMatmul): per dtype, whole layers of a step's
// projections one after another in a buffer of their own (as many as stream four times the
// last-level cache, 64 MiB at least, and fit in `memory_bytes`), each weight its own op,
// against each of the options' row counts (1, 4, 8, 16, 32, 64). Every (dtype, rows) is
// timed once per round, round after round (OpTimer::sample_interleaved): the prediction
// divides these rates by each other (fp32 against fp16 weights, a prefix's rows against one
// row), and a shared machine's bandwidth can move by 2x from period to period — timed one
// dtype after the other, their ratios came out far from the runs' they priced. Within a
// round the shapes go row count by row count (every dtype's one row, then every dtype's four
// rows, ...), so that a shape follows shapes of its own rows rather than the 64-row,
// compute-bound ones (the round's first shape follows the timer's untimed lead-in): timed
// dtype by dtype, the ratios of row counts spread far wider than the runs' (docs/prediction.md).
// Each rate is the median round, not the fastest: it prices a run's kernels, whose figures
// are medians too (the fastest round reads well above what the runs that follow stream at).
void measure_decode_matmuls(Backend& backend, OpTimer& timer, size_t memory_bytes, const RoofMeasureOptions& options,
                            RoofMeasurement& measurement, std::ostream* progress) {
  const std::vector<StepWeightShape> layer = decode_step_projections(options.decode_step_width);
  int64_t layer_elements = 0, widest_n = 0, deepest_k = 0;
  for (const StepWeightShape& shape : layer) {
    layer_elements += shape.n * shape.k;
    widest_n = std::max(widest_n, shape.n);
    deepest_k = std::max(deepest_k, shape.k);
  }
  const double streamed_bytes = decode_streamed_bytes(memory_bytes);
  struct Step {  // one dtype's layers of projections
    DType dtype;
    int layers;
    DeviceBuffer memory;
    std::vector<Tensor> weights;
  };
  struct Shape {  // a step against some activation rows
    const Step* step;
    int rows;
    DeviceBuffer activations, outputs;
  };
  std::vector<Step> steps;
  steps.reserve(options.matmul_dtypes.size());
  for (DType dtype : options.matmul_dtypes) {
    const double layer_bytes = static_cast<double>(layer_elements) * static_cast<double>(dtype_size(dtype));
    const int fitting = static_cast<int>(static_cast<double>(memory_bytes) / layer_bytes);
    const int layers = std::min(fitting, static_cast<int>(std::ceil(streamed_bytes / layer_bytes)));
    if (layers < 1) continue;
    Step& step = steps.emplace_back(Step{dtype, layers, DeviceBuffer(backend, static_cast<size_t>(layers * layer_elements) * dtype_size(dtype)), {}});
    char* next = static_cast<char*>(step.memory.get());
    for (int l = 0; l < layers; ++l) {
      for (const StepWeightShape& shape : layer) {
        step.weights.push_back(Tensor::contiguous(next, dtype, {shape.n, shape.k}));
        next += static_cast<size_t>(shape.n * shape.k) * dtype_size(dtype);
      }
    }
    fill_random(backend, step.memory.get(), dtype, static_cast<size_t>(layers * layer_elements), 8);
    if (progress) {
      *progress << "measuring the decode matmul: " << dtype_name(dtype) << " (" << layers << " layers of projections, "
                << format_bytes(static_cast<double>(step.memory.bytes())) << ")\n";
    }
  }
  std::vector<Shape> shapes;
  shapes.reserve(steps.size() * options.decode_matmul_rows.size());
  for (int rows : options.decode_matmul_rows) {
    for (const Step& step : steps) {
      Shape& shape = shapes.emplace_back(Shape{&step, rows, DeviceBuffer(backend, static_cast<size_t>(rows * deepest_k) * dtype_size(step.dtype)),
                                               DeviceBuffer(backend, static_cast<size_t>(rows * widest_n) * dtype_size(step.dtype))});
      fill_random(backend, shape.activations.get(), step.dtype, static_cast<size_t>(rows * deepest_k), 9);
    }
  }
  if (progress && !shapes.empty()) {
    *progress << "measuring the decode matmuls: each dtype against " << options.decode_matmul_rows.size()
              << " row counts, interleaved\n";
  }
  std::vector<OpTimer::Sequence> sequences;
  for (const Shape& shape : shapes) {
    sequences.emplace_back([&backend, &shape](const std::function<OpId()>& next_id) {
      for (const Tensor& weight : shape.step->weights) {
        const Tensor x = Tensor::contiguous(shape.activations.get(), weight.dtype, {shape.rows, weight.shape[1]});
        const Tensor out = Tensor::contiguous(shape.outputs.get(), weight.dtype, {shape.rows, weight.shape[0]});
        backend.matmul(x, weight, out, next_id());
      }
    });
  }
  const std::vector<TimedSamples> timings = timer.sample_interleaved(sequences);
  // Recorded dtype by dtype, each dtype's row counts in order: shapes[r * steps.size() + s]
  // is row count r of step s.
  std::vector<size_t> by_dtype;
  for (size_t s = 0; s < steps.size(); ++s)
    for (size_t r = 0; r < options.decode_matmul_rows.size(); ++r) by_dtype.push_back(r * steps.size() + s);
  for (size_t i : by_dtype) {
    const Shape& shape = shapes[i];
    RoofMeasurement::DecodeMatmul decode;
    decode.dtype = shape.step->dtype;
    decode.rows = shape.rows;
    decode.layers = shape.step->layers;
    for (const Tensor& weight : shape.step->weights) {
      decode.bytes += static_cast<double>(weight.bytes()) +
                      static_cast<double>(shape.rows * (weight.shape[0] + weight.shape[1]) * dtype_size(decode.dtype));
    }
    decode.timing = timings[i];
    decode.bandwidth = decode.bytes / decode.timing.median;
    // The roof is an upper bound: the fastest round.
    if (shape.rows == 1) measurement.bandwidth = std::max(measurement.bandwidth, decode.bytes / decode.timing.best);
    measurement.decode_matmuls.push_back(decode);
  }
}

}  // namespace

RoofMeasurement measure_roofs(Backend& backend, const RoofMeasureOptions& options, std::ostream* progress) {
  // A measurement its checkpoint abandons leaves no op timings behind: the next user of the
  // backend (a quick measurement, a run) would count them as its own.
  struct DrainWhenAbandoned {
    Backend& backend;
    ~DrainWhenAbandoned() {
      if (std::uncaught_exceptions() == 0) return;
      try {
        backend.synchronize();
        backend.take_timings();
      } catch (...) {
      }
    }
  } drain{backend};
  const bool gpu = is_gpu_backend(backend);
  const size_t budget = backend.available_memory();
  RoofMeasurement measurement;
  OpTimer timer(backend, options);

  // Bandwidth: a large contiguous copy, and a matrix-vector product streaming a weight of
  // the same size; shrink them until source and destination fit.
  size_t copy_bytes = options.copy_bytes ? options.copy_bytes : (gpu ? size_t{1} << 30 : size_t{256} << 20);
  while (copy_bytes > (size_t{1} << 20) && 2 * copy_bytes > budget / 2) copy_bytes /= 2;
  const int64_t row = 1024;
  const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(copy_bytes / sizeof(float)) / row);
  {
    if (progress) *progress << "measuring bandwidth: copy of " << format_bytes(static_cast<double>(rows * row * 4)) << "\n";
    const CopyMeasurement copy = measure_copy(backend, static_cast<size_t>(rows * row) * sizeof(float), options);
    measurement.copy = copy.timing;
    measurement.copy_bytes_moved = copy.bytes_moved;
    measurement.copy_bandwidth = copy.bandwidth;

    // The same bytes as an fp16 weight [2·rows, 1024] read once by y = x · Wᵀ (x: one
    // row), the access pattern of a decode step's matmuls.
    const MatvecProduct read(backend, static_cast<double>(rows * row) * sizeof(float), 4);
    if (progress) *progress << "measuring bandwidth: matrix-vector product over " << format_bytes(static_cast<double>(read.weight.bytes())) << "\n";
    measurement.read = timer.sample([&](OpId id) { read.enqueue(backend, id); });
    measurement.read_bytes = read.bytes();
    measurement.read_bandwidth = measurement.read_bytes / measurement.read.best;
    measurement.bandwidth = std::max(measurement.copy_bandwidth, measurement.read_bandwidth);

    // CPU: a decode step's matmuls per dtype and activation rows (a step of projections over
    // four times the last-level cache, 64 MiB at least; at most the copy's bytes): streamed,
    // yet cheap enough to take with the roofs. A one-row fp32 product streams without
    // widening, so it may raise the roof.
    if (!gpu && !options.quick) measure_decode_matmuls(backend, timer, read.weight.bytes(), options, measurement, progress);
    // And decode attention over KV caches of a few context lengths, streamed the same way.
    if (!gpu && !options.quick)
      measure_decode_attention(backend, timer, read.weight.get(), read.weight.bytes(), options, measurement, progress);
  }

  // The last-level cache (CPU): a weight a quarter of its size, read again and again.
  if (!gpu && !options.quick && options.cache_level) measure_cache_level(backend, options, measurement, progress);
  measurement.quick = options.quick;

  // Compute: the FMA probe where the backend has one (about 0.05 s per repeat on a CPU).
  const FmaPeak fma = measure_fma_peak(backend, options, progress);
  measurement.fma = fma.timing;
  measurement.fma_flops_per_s = fma.flops_per_s;

  // And a square matmul per dtype; shrink it until three matrices fit.
  for (DType dtype : options.quick ? std::vector<DType>{} : options.matmul_dtypes) {
    int64_t size = options.matmul_size ? options.matmul_size : (gpu ? 8192 : 1024);
    while (size > 64 && 3 * size * size * static_cast<int64_t>(dtype_size(dtype)) > static_cast<int64_t>(budget / 2)) size /= 2;
    const size_t elements = static_cast<size_t>(size * size);
    DeviceBuffer x(backend, elements * dtype_size(dtype));
    DeviceBuffer weight(backend, elements * dtype_size(dtype));
    DeviceBuffer out(backend, elements * dtype_size(dtype));
    fill_random(backend, x.get(), dtype, elements, 2);
    fill_random(backend, weight.get(), dtype, elements, 3);
    const Tensor x_view = Tensor::contiguous(x.get(), dtype, {size, size});
    const Tensor weight_view = Tensor::contiguous(weight.get(), dtype, {size, size});
    const Tensor out_view = Tensor::contiguous(out.get(), dtype, {size, size});
    if (progress) *progress << "measuring " << dtype_name(dtype) << " matmul " << size << "³\n";
    RoofMeasurement::Matmul matmul;
    matmul.dtype = dtype;
    matmul.size = static_cast<int>(size);
    matmul.timing = timer.sample([&](OpId id) { backend.matmul(x_view, weight_view, out_view, id); });
    matmul.flops_per_s = 2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size) /
                         matmul.timing.best;
    matmul.kernel_flops_per_s = matmul.flops_per_s;
    if (!gpu) measure_narrow_matmul(backend, timer, matmul, progress);
    measurement.matmuls.push_back(matmul);
  }
  if (progress) *progress << "measuring the stream's fixed costs\n";
  measurement.stream = measure_stream_costs(backend, options.checkpoint);
  return measurement;
}

FixedCosts RoofMeasurement::fixed_costs() const {
  std::ostringstream source;
  source << "measured by decodelab: launch = one enqueue (" << format_number(stream.enqueue_us) << " µs), per-op overhead = a "
         << "queued 1024-element add's turn on the device (" << format_number(stream.per_op_us) << " µs), round trip = a "
         << "4-byte device-to-host read into pageable memory (" << format_number(stream.read_round_trip_us) << " µs)";
  if (stream.per_parallel_op_us > 0) {
    source << ", parallel region = a queued op that fans out to every kernel thread and does nothing there ("
           << format_number(stream.per_parallel_op_us) << " µs) less the add's turn";
  }
  source << ", medians";
  return stream.fixed_costs(source.str());
}

std::optional<CacheLevel> RoofMeasurement::cache() const {
  if (cache_bytes <= 0 || cache_bandwidth <= 0) return std::nullopt;
  return CacheLevel{cache_bytes, cache_bandwidth,
                    "measured by decodelab: " + cache_capacity_note() + "; bandwidth an fp16 matrix-vector product over " +
                        format_bytes(cache_read_bytes) + " read again while resident (" + spread_note(cache_read) + ")"};
}

double RoofMeasurement::largest_spread() const {
  double largest = std::max({copy.spread, read.spread, fma.spread});
  for (const Matmul& matmul : matmuls) largest = std::max({largest, matmul.timing.spread, matmul.narrow.spread});
  for (const DecodeMatmul& decode : decode_matmuls) largest = std::max(largest, decode.timing.spread);
  for (const DecodeAttention& attention : decode_attentions) largest = std::max(largest, attention.timing.spread);
  return largest;
}

bool RoofMeasurement::noisy() const {
  bool any = machine_contended || copy.noisy || read.noisy || fma.noisy;
  for (const Matmul& matmul : matmuls) any = any || matmul.timing.noisy || matmul.narrow.noisy;
  for (const DecodeMatmul& decode : decode_matmuls) any = any || decode.timing.noisy;
  for (const DecodeAttention& attention : decode_attentions) any = any || attention.timing.noisy;
  return any;
}

Roofs RoofMeasurement::roofs() const {
  Roofs result;
  result.bandwidth = bandwidth;
  result.measured_at = static_cast<int64_t>(std::time(nullptr));
  result.spread = largest_spread();
  result.noisy = noisy();
  result.probe_bandwidth = probe_bandwidth;
  result.core_round_trip_ns = core_round_trip_ns;
  std::ostringstream source;
  const std::time_t now = std::time(nullptr);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::localtime(&now));
  source << "measured by decodelab on " << date << ": bandwidth the faster of a copy of " << format_bytes(copy_bytes_moved / 2)
         << " (bytes read + written; " << format_bandwidth(copy_bandwidth) << ", " << spread_note(copy)
         << ") and an fp16 matrix-vector product streaming the same bytes (" << format_bandwidth(read_bandwidth) << ", "
         << spread_note(read) << ")";
  if (!decode_matmuls.empty()) {
    const DecodeMatmul& first = decode_matmuls.front();
    source << ", or a one-row decode matmul's fastest round; decode matmuls (median rounds) over a step of " << first.layers
           << " layers of projections (q/k/v, o, gate/up, down, each its own op)";
    for (const DecodeMatmul& decode : decode_matmuls) {
      result.decode_matmul_ceilings.push_back({dtype_precision(decode.dtype), decode.rows, decode.bandwidth});
      source << (&decode == &decode_matmuls.front() ? " " : ", ") << dtype_name(decode.dtype) << " × " << decode.rows
             << " row" << (decode.rows == 1 ? "" : "s") << " " << format_bandwidth(decode.bandwidth);
    }
  }
  if (!decode_attentions.empty()) {
    const DecodeAttention& first = decode_attentions.front();
    source << "; decode attention (one query row per sequence, " << first.sequences
           << " sequences, heads of 64 over KV caches streamed from memory, each layer its own op)";
    for (const DecodeAttention& attention : decode_attentions) {
      result.decode_attention_ceilings.push_back({dtype_precision(attention.dtype), attention.context, attention.bandwidth});
      source << (&attention == &decode_attentions.front() ? " " : ", ") << dtype_name(attention.dtype) << " at "
             << attention.context << " positions " << format_bandwidth(attention.bandwidth);
    }
  }
  if (fma_flops_per_s > 0) {
    result.fp32_flops = result.fp16_flops = result.bf16_flops = fma_flops_per_s;
    source << "; compute the FMA peak (register-resident fp32 FMA chains on every thread, which half dtypes "
              "also run on once widened: "
           << format_flop_rate(fma_flops_per_s) << ", " << spread_note(fma) << ")";
  }
  for (const Matmul& matmul : matmuls) {
    if (fma_flops_per_s > 0) {  // the probe is the roof; what our matmul reaches is its ceiling
      switch (matmul.dtype) {
        case DType::F32:
          result.matmul_fp32_flops = matmul.kernel_flops_per_s;
          result.matmul_output_fp32_s = matmul.output_seconds;
          break;
        case DType::F16:
          result.matmul_fp16_flops = matmul.kernel_flops_per_s;
          result.matmul_output_fp16_s = matmul.output_seconds;
          break;
        case DType::BF16:
          result.matmul_bf16_flops = matmul.kernel_flops_per_s;
          result.matmul_output_bf16_s = matmul.output_seconds;
          break;
        case DType::I32: break;
      }
    } else {
      switch (matmul.dtype) {
        case DType::F32: result.fp32_flops = matmul.flops_per_s; break;
        case DType::F16: result.fp16_flops = matmul.flops_per_s; break;
        case DType::BF16: result.bf16_flops = matmul.flops_per_s; break;
        case DType::I32: break;
      }
    }
    source << "; " << dtype_name(matmul.dtype) << " matmul " << matmul.size << "^3 on random data "
           << format_flop_rate(matmul.flops_per_s);
    if (fma_flops_per_s > 0) source << " (" << format_percent(matmul.flops_per_s / fma_flops_per_s) << " of the FMA peak)";
    source << ", " << spread_note(matmul.timing);
    if (!matmul.narrow.seconds.empty()) {
      source << ", and " << RoofMeasurement::kNarrowRows << "×" << RoofMeasurement::kNarrowColumns << "×"
             << RoofMeasurement::kNarrowDepth << " " << format_flop_rate(matmul.narrow_flops_per_s) << ", "
             << spread_note(matmul.narrow);
      if (matmul.output_seconds > 0) {
        source << ": the kernel's rate " << format_flop_rate(matmul.kernel_flops_per_s) << " plus "
               << format_seconds(matmul.output_seconds) << " per output element";
      }
    }
  }
  if (machine_contended) source << "; the machine was contended while measuring (see the machine check)";
  if (quick) {
    source << "; a quick measurement for a short budget: the decode-shaped kernel rates, the cache and the matmul "
              "ceilings were not measured, so decode is priced at these roofs alone (`decodelab roofline --measure` "
              "measures them all)";
  }
  result.source = source.str();
  return result;
}

std::string RoofMeasurement::describe() const {
  std::ostringstream out;
  out << "copy       " << format_bandwidth(copy_bandwidth) << "  (" << format_bytes(copy_bytes_moved / 2) << " read and written, "
      << format_seconds(copy.best) << ", " << spread_note(copy) << ")\n";
  out << "read       " << format_bandwidth(read_bandwidth) << "  (matrix-vector product over " << format_bytes(copy_bytes_moved / 2)
      << ", " << format_seconds(read.best) << ", " << spread_note(read) << ")\n";
  for (const DecodeMatmul& decode : decode_matmuls) {
    char label[16];
    std::snprintf(label, sizeof label, "%s×%-3d", dtype_name(decode.dtype), decode.rows);
    out << label << "  " << format_bandwidth(decode.bandwidth) << "  (decode matmul: " << decode.rows << " row"
        << (decode.rows == 1 ? "" : "s") << " × " << decode.layers << " layers of streamed " << dtype_name(decode.dtype)
        << " projections, "
        << format_seconds(decode.timing.median) << ", " << median_note(decode.timing) << ")\n";
  }
  for (const DecodeAttention& attention : decode_attentions) {
    char label[24];
    std::snprintf(label, sizeof label, "%s@%-5d", dtype_name(attention.dtype), attention.context);
    out << label << "  " << format_bandwidth(attention.bandwidth) << "  (decode attention: " << attention.sequences
        << " sequences × " << attention.context << " positions × " << attention.layers << " layers of streamed "
        << dtype_name(attention.dtype) << " KV cache, " << format_seconds(attention.timing.median) << ", "
        << median_note(attention.timing) << ")\n";
  }
  out << "bandwidth  " << format_bandwidth(bandwidth)
      << (decode_matmuls.empty() ? "  (the faster of the two)\n" : "  (the fastest of the copy and the one-row products' fastest rounds; their rates above are medians)\n");
  if (fma_flops_per_s > 0) {
    out << "FMA peak   " << format_flop_rate(fma_flops_per_s) << "  (register-resident FMA chains, " << format_seconds(fma.best)
        << ", " << spread_note(fma) << "): the compute roof of every dtype\n";
  }
  if (cache_bandwidth > 0) {
    out << "cache      " << format_bandwidth(cache_bandwidth) << "  (" << format_bytes(cache_bytes) << " last-level cache; "
        << "matrix-vector product over " << format_bytes(cache_read_bytes) << ", " << spread_note(cache_read) << ")\n";
  }
  if (!cache_reads.empty()) out << "           " << cache_capacity_note() << "\n";
  out << "fixed      " << format_number(stream.per_op_us) << " µs per op, " << format_number(stream.enqueue_us)
      << " µs per enqueue, " << format_number(stream.read_round_trip_us) << " µs per 4-byte device-to-host read";
  if (stream.per_parallel_op_us > 0) out << ", " << format_number(stream.parallel_region_us()) << " µs per parallel region";
  out << "\n";
  for (const Matmul& matmul : matmuls) {
    out << dtype_name(matmul.dtype) << "       " << format_flop_rate(matmul.flops_per_s) << "  (matmul " << matmul.size << "³, "
        << format_seconds(matmul.timing.best) << ", " << spread_note(matmul.timing);
    if (fma_flops_per_s > 0) out << "; " << format_percent(matmul.flops_per_s / fma_flops_per_s) << " of the FMA peak";
    out << ")\n";
    if (!matmul.narrow.seconds.empty()) {
      out << "           " << format_flop_rate(matmul.narrow_flops_per_s) << "  (matmul " << kNarrowRows << "×"
          << kNarrowColumns << "×" << kNarrowDepth << ", " << format_seconds(matmul.narrow.best) << ", "
          << spread_note(matmul.narrow) << ")";
      if (matmul.output_seconds > 0) {
        out << ": kernel " << format_flop_rate(matmul.kernel_flops_per_s) << " + " << format_seconds(matmul.output_seconds)
            << " per output element";
      }
      out << "\n";
    }
  }
  return out.str();
}

namespace {

nlohmann::json samples_json(const TimedSamples& samples) {
  return {{"best_s", samples.best}, {"median_s", samples.median}, {"spread", samples.spread},
          {"noisy", samples.noisy}, {"repeats", samples.seconds.size()}};
}

}  // namespace

nlohmann::json to_json(const RoofMeasurement& measurement) {
  nlohmann::json json = {
      {"copy", {{"bandwidth_gbps", measurement.copy_bandwidth / 1e9},
                {"bytes_moved", measurement.copy_bytes_moved},
                {"timing", samples_json(measurement.copy)}}},
      {"read", {{"bandwidth_gbps", measurement.read_bandwidth / 1e9},
                {"bytes_moved", measurement.read_bytes},
                {"timing", samples_json(measurement.read)}}},
      {"bandwidth_gbps", measurement.bandwidth / 1e9},
      {"matmuls", nlohmann::json::array()}};
  for (const RoofMeasurement::Matmul& matmul : measurement.matmuls) {
    nlohmann::json entry = {{"dtype", dtype_name(matmul.dtype)}, {"size", matmul.size},
                            {"gflops", matmul.flops_per_s / 1e9}, {"timing", samples_json(matmul.timing)}};
    if (!matmul.narrow.seconds.empty()) {
      entry["narrow"] = {{"rows", RoofMeasurement::kNarrowRows}, {"columns", RoofMeasurement::kNarrowColumns},
                         {"depth", RoofMeasurement::kNarrowDepth}, {"gflops", matmul.narrow_flops_per_s / 1e9},
                         {"timing", samples_json(matmul.narrow)}};
      entry["kernel_gflops"] = matmul.kernel_flops_per_s / 1e9;
      entry["output_s"] = matmul.output_seconds;
    }
    json["matmuls"].push_back(entry);
  }
  json["decode_matmuls"] = nlohmann::json::array();
  for (const RoofMeasurement::DecodeMatmul& decode : measurement.decode_matmuls) {
    json["decode_matmuls"].push_back({{"dtype", dtype_name(decode.dtype)}, {"rows", decode.rows},
                                      {"layers", decode.layers}, {"bandwidth_gbps", decode.bandwidth / 1e9}, {"bytes_moved", decode.bytes},
                                      {"timing", samples_json(decode.timing)}});
  }
  json["decode_attention"] = nlohmann::json::array();
  for (const RoofMeasurement::DecodeAttention& attention : measurement.decode_attentions) {
    json["decode_attention"].push_back({{"dtype", dtype_name(attention.dtype)}, {"context", attention.context},
                                        {"sequences", attention.sequences}, {"layers", attention.layers},
                                        {"bandwidth_gbps", attention.bandwidth / 1e9}, {"bytes_moved", attention.bytes},
                                        {"timing", samples_json(attention.timing)}});
  }
  if (measurement.fma_flops_per_s > 0) {
    json["fma_probe"] = {{"gflops", measurement.fma_flops_per_s / 1e9}, {"timing", samples_json(measurement.fma)}};
  }
  if (!measurement.cache_reads.empty()) {
    nlohmann::json reads = nlohmann::json::array();
    for (const RoofMeasurement::CacheRead& read : measurement.cache_reads)
      reads.push_back({{"weight_bytes", read.weight_bytes}, {"bytes_read", read.bytes}, {"bandwidth_gbps", read.bandwidth / 1e9},
                       {"timing", samples_json(read.timing)}});
    json["cache"] = {{"reported_bytes", measurement.cache_reported_bytes}, {"bytes", measurement.cache_bytes},
                     {"dram_bandwidth_gbps", measurement.cache_dram_bandwidth / 1e9},
                     {"dram_timing", samples_json(measurement.cache_dram_read)},
                     {"dram_read_again", measurement.cache_dram_read_again},
                     {"reads", reads}, {"capacity", measurement.cache_capacity_note()}};
    if (measurement.cache_bandwidth > 0) {
      json["cache"]["bandwidth_gbps"] = measurement.cache_bandwidth / 1e9;
      json["cache"]["bytes_read"] = measurement.cache_read_bytes;
      json["cache"]["timing"] = samples_json(measurement.cache_read);
    }
  }
  return json;
}

// ---------------------------------------------------------------------------------------
// Specs from a measurement, and the last-level cache it prices

DeviceSpec measured_spec(const std::string& description, const MachineIdentity& machine,
                         const RoofMeasurement& measurement) {
  DeviceSpec spec;
  spec.name = "measured-" + machine.hostname;
  spec.description = description;
  spec.measured = measurement.roofs();
  spec.measured_fixed_costs = measurement.fixed_costs();
  spec.measured_cache = measurement.cache();
  spec.cache_bytes = measurement.cache_bytes;  // the checked capacity (CPU); 0 on a GPU
  spec.machine = machine;
  return spec;
}

std::vector<StepWeightShape> decode_step_projections(int64_t width) {
  const int64_t intermediate = (width * 11 / 4 + 255) / 256 * 256;
  return {{3 * width, width}, {width, width}, {2 * intermediate, width}, {width, intermediate}};
}

double decode_streamed_bytes(size_t memory_bytes) {
  return std::min(static_cast<double>(memory_bytes), std::max(4.0 * host_cache_bytes(), 64.0 * 1024 * 1024));
}

}  // namespace decodelab
