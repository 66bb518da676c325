// Measuring roofs against a backend (the calibration that keeps a CPU's is
// profiling/measure/calibration.cpp). All timing here goes through the backend's own device timings of single ops, so the
// figures exclude enqueue and sync costs, exactly like the ops they will be compared to.
#include "profiling/measure/roof_measure.h"

#include <algorithm>
#include <exception>
#include <cmath>
#include <ctime>
#include <functional>
#include <map>
#include <tuple>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "engine/device_buffer.h"
#include "engine/base/errors.h"
#include "engine/model/weights.h"
#include "profiling/measure/efficiency_measure.h"
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

    // CPU: the efficiency table, on the engine's own shapes streamed from memory (at most
    // the copy's bytes per dtype).
    if (!gpu && !options.quick) measure_efficiency(backend, read.weight.bytes(), options, measurement, progress);
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
  CacheLevel level{cache_bytes, cache_bandwidth,
                   "measured by decodelab: " + cache_capacity_note() + "; bandwidth an fp16 matrix-vector product over " +
                       format_bytes(cache_read_bytes) + " read again while resident (" + spread_note(cache_read) + ")",
                   {}};
  level.beyond = cache_hits_beyond(level);
  return level;
}

// A product that reads its weight over and over reuses every byte at a distance of the
// weight's size, so its time tells the share found in the cache at that distance. The bytes
// a cache does not hold are priced at the bandwidth roof, itself such a product (over the
// roof's read, `read_bytes`), so the shares are taken against it: s bytes from the cache at
// its bandwidth and the rest at the roof take the measured time when
// s = (1/roof − 1/measured) ÷ (1/roof − 1/cache). Each read between the capacity and the
// roof's read gives a point (none rising above the one before), and the roof's read the
// last, at 0 by definition: whatever share of it a cache held is in the roof already.
std::vector<CacheHit> RoofMeasurement::cache_hits_beyond(const CacheLevel& level) const {
  std::vector<CacheHit> points;
  if (bandwidth <= 0 || read_bytes <= level.bytes || level.bandwidth <= bandwidth) return points;
  const double roof_time = 1 / bandwidth;
  const double span = roof_time - 1 / level.bandwidth;
  std::vector<const CacheRead*> beyond;
  for (const CacheRead& read : cache_reads)
    if (read.weight_bytes > level.bytes && read.weight_bytes < read_bytes && read.bandwidth > 0) beyond.push_back(&read);
  std::sort(beyond.begin(), beyond.end(),
            [](const CacheRead* a, const CacheRead* b) { return a->weight_bytes < b->weight_bytes; });
  double last = 1.0;
  for (const CacheRead* read : beyond) {
    last = std::min(last, std::clamp((roof_time - 1 / read->bandwidth) / span, 0.0, 1.0));
    points.push_back({read->weight_bytes, last});
  }
  points.push_back({read_bytes, 0.0});
  return points;
}

double RoofMeasurement::largest_spread() const {
  double largest = std::max({copy.spread, read.spread, fma.spread});
  for (const Matmul& matmul : matmuls) largest = std::max(largest, matmul.timing.spread);
  for (const KernelTiming& kernel : kernels) largest = std::max(largest, kernel.timing.spread);
  return largest;
}

bool RoofMeasurement::noisy() const {
  bool any = machine_contended || copy.noisy || read.noisy || fma.noisy;
  for (const Matmul& matmul : matmuls) any = any || matmul.timing.noisy;
  for (const KernelTiming& kernel : kernels) any = any || kernel.timing.noisy;
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
  if (fma_flops_per_s > 0) {
    result.fp32_flops = result.fp16_flops = result.bf16_flops = fma_flops_per_s;
    source << "; compute the FMA peak (register-resident fp32 FMA chains on every thread, which half dtypes "
              "also run on once widened: "
           << format_flop_rate(fma_flops_per_s) << ", " << spread_note(fma) << ")";
  }
  for (const Matmul& matmul : matmuls) {
    if (fma_flops_per_s <= 0) {  // no probe (a GPU): the square matmuls are the compute roofs
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
  }
  result.efficiency = efficiency_table(result);
  if (!result.efficiency.empty()) {
    source << "; efficiency table: " << result.efficiency.size() << " buckets, each the engine's own ops timed "
           << "(median of " << (kernels.empty() ? 0 : kernels.front().timing.seconds.size())
           << " interleaved rounds) against their time at these roofs, net of their parallel regions";
  }
  if (machine_contended) source << "; the machine was contended while measuring (see the machine check)";
  if (quick) {
    source << "; a quick measurement for a short budget: the efficiency table, the cache and the square matmuls "
              "were not measured, so every op is priced at these roofs alone (`decodelab roofline --measure` "
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
  for (const KernelTiming& kernel : kernels) {
    out << "timed      " << op_category_name(kernel.category) << " " << dtype_name(kernel.dtype) << " "
        << describe_bucket(kernel.category, kernel.bucket) << ": " << kernel.what << ", "
        << format_seconds(kernel.timing.median) << ", " << median_note(kernel.timing) << "\n";
  }
  out << "bandwidth  " << format_bandwidth(bandwidth)
      << "  (the faster of the two)\n";
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
    json["matmuls"].push_back(entry);
  }
  json["efficiency_timings"] = nlohmann::json::array();
  for (const RoofMeasurement::KernelTiming& kernel : measurement.kernels) {
    json["efficiency_timings"].push_back({{"category", op_category_name(kernel.category)}, {"dtype", dtype_name(kernel.dtype)},
                                          {"rows_from", kernel.bucket.rows_from}, {"size_log2", kernel.bucket.size_log2},
                                          {"what", kernel.what}, {"ops", kernel.ops}, {"flops", kernel.flops},
                                          {"bytes", kernel.bytes}, {"parallel_regions", kernel.regions},
                                          {"timing", samples_json(kernel.timing)}});
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
                     {"reads", reads}, {"capacity", measurement.cache_capacity_note()}};
    if (measurement.cache_bandwidth > 0) {
      json["cache"]["bandwidth_gbps"] = measurement.cache_bandwidth / 1e9;
      json["cache"]["bytes_read"] = measurement.cache_read_bytes;
      json["cache"]["timing"] = samples_json(measurement.cache_read);
    }
  }
  return json;
}

std::vector<Efficiency> RoofMeasurement::efficiency_table(const Roofs& roofs) const {
  // Per bucket: the timed ops' time at the roofs over their measured time net of their
  // parallel regions (the prediction adds those apart), summed over the sequences timed in
  // it. One η stands for both terms: a kernel timed at a share of its roof is taken to reach
  // that share of either roof at shapes like it.
  struct Sums {
    double at_roofs = 0, measured = 0;
    std::string timed;
  };
  std::map<std::tuple<std::string, Precision, int, int>, Sums> buckets;
  const double region = stream.parallel_region_us() * 1e-6;
  for (const KernelTiming& kernel : kernels) {
    const Precision precision = dtype_precision(kernel.dtype);
    const double peak = roofs.flops(precision);
    const double at_roofs = std::max(peak > 0 ? kernel.flops / peak : 0.0, roofs.bandwidth > 0 ? kernel.bytes / roofs.bandwidth : 0.0);
    const double net = kernel.timing.median - kernel.regions * region;
    if (at_roofs <= 0 || kernel.timing.median <= 0) continue;
    Sums& sums = buckets[{op_category_name(kernel.category), precision, kernel.bucket.rows_from, kernel.bucket.size_log2}];
    sums.at_roofs += at_roofs;
    sums.measured += net > 0 ? net : kernel.timing.median;  // regions costlier than the op: the op's time whole
    sums.timed += (sums.timed.empty() ? "" : "; ") + kernel.what;
  }
  std::vector<Efficiency> table;
  for (const auto& [key, sums] : buckets) {
    Efficiency row;
    row.category = std::get<0>(key);
    row.precision = std::get<1>(key);
    row.rows_from = std::get<2>(key);
    row.size_log2 = std::get<3>(key);
    row.flops = row.bytes = sums.at_roofs / sums.measured;
    row.timed = sums.timed;
    table.push_back(row);
  }
  return table;
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

double decode_streamed_bytes(size_t memory_bytes) {
  return std::min(static_cast<double>(memory_bytes), std::max(4.0 * host_cache_bytes(), 64.0 * 1024 * 1024));
}

}  // namespace decodelab
