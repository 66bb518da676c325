// decodelab_bench_cpu: the CPU backend's yardsticks, printed as one table per question.
//  1. STREAM-like bandwidth (copy, triad) over arrays far larger than the caches;
//  2. batch-1 decode matvec GB/s per weight dtype at the lab-small shapes, as a fraction
//     of that bandwidth (the fixed path's roof);
//  3. batched matmul GFLOP/s for M = 1..64 and 512, next to OpenBLAS cblas_sgemm;
//  4. the other decode ops (norm, activation, argmax, attention) at lab-small shapes;
//  5. stream costs: enqueue per op, and the sync round trip (worker awake and asleep).
// The one non-obvious choice: every matmul measurement cycles through enough weight
// copies (>= 256 MiB) that each call streams its weights from DRAM, as decode does,
// rather than re-reading a matrix the 32 MiB L3 still holds. Kernel times are the
// device intervals the backend reports (take_timings); each row gives the median and
// the best run, since other processes on a shared machine disturb the median.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/clock.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/device_buffer.h"

#if DECODELAB_HAVE_OPENBLAS
#include <cblas.h>
#endif

using namespace decodelab;

namespace {

constexpr size_t kStreamBytes = size_t{256} << 20;  // bytes a matmul measurement cycles through

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

// Repeated timings of one measurement. On a shared machine the median includes other
// processes' interference; the best is the least disturbed run. A spread above 30%
// marks the row as noisy.
struct Seconds {
  double median = 0, best = 0;
  static Seconds of(const std::vector<double>& samples) {
    return {median_of(samples), *std::min_element(samples.begin(), samples.end())};
  }
  bool noisy() const { return median > 1.3 * best; }
};

// --- 1. STREAM-like bandwidth, OpenMP on `threads` threads ---
struct StreamResult {
  Seconds copy, triad;  // per pass over 128 MiB arrays
  static constexpr double kArrayBytes = double(size_t{32} << 20) * sizeof(float);
  double copy_gbs(bool best) const { return 2 * kArrayBytes / (best ? copy.best : copy.median) / 1e9; }
  double triad_gbs(bool best) const { return 3 * kArrayBytes / (best ? triad.best : triad.median) / 1e9; }
};

StreamResult measure_stream(int threads) {
  const size_t n = size_t{32} << 20;
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n, 0.5f);
  std::vector<double> copy_s, triad_s;
  auto time = [&](auto&& body) {
    const int64_t begin = now_ns();
    body();
    return (now_ns() - begin) * 1e-9;
  };
  for (int repeat = 0; repeat < 7; ++repeat) {
    copy_s.push_back(time([&] {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (size_t i = 0; i < n; ++i) c[i] = a[i];
    }));
    triad_s.push_back(time([&] {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (size_t i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
    }));
  }
  return {Seconds::of(copy_s), Seconds::of(triad_s)};
}

// --- helpers over the backend ---
void fill_random(Backend& backend, void* device, DType dtype, size_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<unsigned char> host(count * dtype_size(dtype));
  for (size_t i = 0; i < count; ++i) store_from_float(host.data(), dtype, i, uniform(generator) * 0.05f);
  backend.upload(device, host.data(), host.size());
}

struct WeightCopies {
  std::vector<DeviceBuffer> buffers;
  std::vector<Tensor> views;
};

WeightCopies make_weight_copies(Backend& backend, DType dtype, int64_t n, int64_t k) {
  WeightCopies copies;
  const size_t bytes = static_cast<size_t>(n * k) * dtype_size(dtype);
  const size_t count = std::max<size_t>(2, (kStreamBytes + bytes - 1) / bytes);
  for (size_t i = 0; i < count; ++i) {
    copies.buffers.emplace_back(backend, bytes);
    fill_random(backend, copies.buffers.back().get(), dtype, static_cast<size_t>(n * k), static_cast<uint32_t>(i + 1));
    copies.views.push_back(Tensor::contiguous(copies.buffers.back().get(), dtype, {n, k}));
  }
  return copies;
}

// Device seconds of one matmul, cycling the weight copies `passes` times.
Seconds time_matmul(Backend& backend, const Tensor& x, const WeightCopies& weights, const Tensor& out, int passes) {
  OpId id = 1;
  for (const Tensor& weight : weights.views) backend.matmul(x, weight, out, id++);  // warm-up
  backend.synchronize();
  backend.take_timings();
  for (int pass = 0; pass < passes; ++pass)
    for (const Tensor& weight : weights.views) backend.matmul(x, weight, out, id++);
  backend.synchronize();
  std::vector<double> seconds;
  for (const OpTiming& timing : backend.take_timings()) seconds.push_back((timing.end_ns - timing.begin_ns) * 1e-9);
  return Seconds::of(seconds);
}

// --- 2. batch-1 matvec at the lab-small shapes ---
void bench_matvec(Backend& backend, const StreamResult& stream) {
  struct Shape {
    int64_t k, n;
    const char* where;
  };
  const Shape shapes[] = {
      {1024, 1024, "q/k/v/o_proj"}, {1024, 2816, "gate/up_proj"}, {1024, 32000, "lm_head"}, {2816, 1024, "down_proj"}};
  std::printf("\n## batch-1 decode matvec (weights streamed from DRAM)\n\n");
  std::printf("Fractions compare best runs with best runs (the least disturbed by other processes).\n\n");
  std::printf("| weights | K | N | layer | median us | GB/s (median) | GB/s (best) | of triad | of copy | noisy |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (DType dtype : {DType::F16, DType::BF16, DType::F32}) {
    for (const Shape& shape : shapes) {
      WeightCopies weights = make_weight_copies(backend, dtype, shape.n, shape.k);
      DeviceBuffer x_buffer(backend, static_cast<size_t>(shape.k) * dtype_size(dtype));
      DeviceBuffer out_buffer(backend, static_cast<size_t>(shape.n) * dtype_size(dtype));
      fill_random(backend, x_buffer.get(), dtype, static_cast<size_t>(shape.k), 99);
      const Tensor x = Tensor::contiguous(x_buffer.get(), dtype, {1, shape.k});
      const Tensor out = Tensor::contiguous(out_buffer.get(), dtype, {1, shape.n});
      const int passes = std::max<int>(3, static_cast<int>(64 / weights.views.size()));
      const Seconds seconds = time_matmul(backend, x, weights, out, passes);
      const double bytes = static_cast<double>(shape.n * shape.k) * dtype_size(dtype);
      const double best_gbs = bytes / seconds.best / 1e9;
      std::printf("| %s | %lld | %lld | %s | %.1f | %.1f | %.1f | %.0f%% | %.0f%% | %s |\n", dtype_name(dtype),
                  static_cast<long long>(shape.k), static_cast<long long>(shape.n), shape.where, seconds.median * 1e6,
                  bytes / seconds.median / 1e9, best_gbs, 100.0 * best_gbs / stream.triad_gbs(true),
                  100.0 * best_gbs / stream.copy_gbs(true), seconds.noisy() ? "yes" : "");
    }
  }
}

// --- 3. batched matmul vs OpenBLAS ---
void bench_batched(Backend& backend, int threads) {
  const int64_t k = 1024, n = 2816;
  const int64_t batches[] = {1, 2, 4, 8, 16, 32, 64, 512};
  std::printf("\n## batched matmul, K=%lld N=%lld (gate_proj), weights streamed, best runs\n\n",
              static_cast<long long>(k), static_cast<long long>(n));
  std::printf("| M | fp16 GFLOP/s | bf16 GFLOP/s | fp32 GFLOP/s | OpenBLAS sgemm GFLOP/s | fp32 / sgemm |\n");
  std::printf("|---|---|---|---|---|---|\n");
  WeightCopies f16 = make_weight_copies(backend, DType::F16, n, k);
  WeightCopies bf16 = make_weight_copies(backend, DType::BF16, n, k);
  WeightCopies f32 = make_weight_copies(backend, DType::F32, n, k);
  DeviceBuffer x_buffer(backend, static_cast<size_t>(512 * k) * sizeof(float));
  DeviceBuffer out_buffer(backend, static_cast<size_t>(512 * n) * sizeof(float));
  fill_random(backend, x_buffer.get(), DType::F32, static_cast<size_t>(512 * k), 7);
  for (int64_t m : batches) {
    const double flops = 2.0 * m * n * k;
    const int passes = m >= 64 ? 1 : 3;
    double gflops[3];
    const WeightCopies* sets[3] = {&f16, &bf16, &f32};
    for (int i = 0; i < 3; ++i) {
      const DType dtype = sets[i]->views[0].dtype;
      // Activations in the weights' dtype, as the engine runs them (first K·M values reinterpreted).
      const Tensor x = Tensor::contiguous(x_buffer.get(), dtype, {m, k});
      const Tensor out = Tensor::contiguous(out_buffer.get(), dtype, {m, n});
      if (dtype != DType::F32) fill_random(backend, x_buffer.get(), dtype, static_cast<size_t>(m * k), 7);
      gflops[i] = flops / time_matmul(backend, x, *sets[i], out, passes).best / 1e9;
    }
    double blas = 0;
#if DECODELAB_HAVE_OPENBLAS
    openblas_set_num_threads(threads);
    fill_random(backend, x_buffer.get(), DType::F32, static_cast<size_t>(m * k), 7);
    const float* x = static_cast<const float*>(x_buffer.get());
    float* out = static_cast<float*>(out_buffer.get());
    std::vector<double> seconds;
    for (int pass = 0; pass < passes + 1; ++pass) {
      for (const Tensor& weight : f32.views) {
        const int64_t begin = now_ns();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
                    static_cast<int>(k), 1.0f, x, static_cast<int>(k), weight.as<const float>(), static_cast<int>(k),
                    0.0f, out, static_cast<int>(n));
        if (pass > 0) seconds.push_back((now_ns() - begin) * 1e-9);
      }
    }
    blas = flops / Seconds::of(seconds).best / 1e9;
#else
    (void)threads;
#endif
    char blas_text[32] = "n/a";
    char ratio_text[32] = "n/a";
    if (blas > 0) {
      std::snprintf(blas_text, sizeof blas_text, "%.1f", blas);
      std::snprintf(ratio_text, sizeof ratio_text, "%.0f%%", 100.0 * gflops[2] / blas);
    }
    std::printf("| %lld | %.1f | %.1f | %.1f | %s | %s |\n", static_cast<long long>(m), gflops[0], gflops[1], gflops[2],
                blas_text, ratio_text);
  }
}

// --- 4. the other decode ops at lab-small shapes (fp16), device time per call ---
void bench_other_ops(Backend& backend) {
  std::printf(
      "\n## other ops, lab-small decode shapes (fp16, batch 1)\n\n| op | shape | median us | best us | GB/s (best) "
      "|\n|---|---|---|---|---|\n");
  const DType dtype = DType::F16;
  const int64_t hidden = 1024, intermediate = 2816, heads = 16, head_dim = 64, vocab = 32000, capacity = 2048;
  DeviceBuffer a(backend, 64 * intermediate * 2), b(backend, 64 * intermediate * 2), c(backend, 64 * intermediate * 2);
  DeviceBuffer weight(backend, hidden * 2), logits(backend, vocab * 2), tokens(backend, capacity * 4);
  DeviceBuffer k_cache(backend, heads * capacity * head_dim * 2), v_cache(backend, heads * capacity * head_dim * 2);
  DeviceBuffer positions(backend, 4);
  fill_random(backend, a.get(), dtype, 64 * intermediate, 1);
  fill_random(backend, b.get(), dtype, 64 * intermediate, 2);
  fill_random(backend, weight.get(), dtype, hidden, 3);
  fill_random(backend, logits.get(), dtype, vocab, 4);
  fill_random(backend, k_cache.get(), dtype, heads * capacity * head_dim, 5);
  fill_random(backend, v_cache.get(), dtype, heads * capacity * head_dim, 6);
  const Tensor position = Tensor::contiguous(positions.get(), DType::I32, {1});
  OpId id = 1;
  auto measure = [&](const char* name, const std::string& shape, double bytes, auto&& enqueue) {
    for (int i = 0; i < 5; ++i) enqueue(id++);
    backend.synchronize();
    backend.take_timings();
    for (int i = 0; i < 50; ++i) enqueue(id++);
    backend.synchronize();
    std::vector<double> seconds;
    for (const OpTiming& timing : backend.take_timings()) seconds.push_back((timing.end_ns - timing.begin_ns) * 1e-9);
    const Seconds time = Seconds::of(seconds);
    std::printf("| %s | %s | %.1f | %.1f | %.1f |\n", name, shape.c_str(), time.median * 1e6, time.best * 1e6,
                bytes / time.best / 1e9);
  };
  const Tensor row = Tensor::contiguous(a.get(), dtype, {1, hidden});
  const Tensor row_out = Tensor::contiguous(c.get(), dtype, {1, hidden});
  measure("rmsnorm", "[1,1024]", 3.0 * hidden * 2, [&](OpId op) {
    backend.rmsnorm(row, Tensor::contiguous(weight.get(), dtype, {hidden}), 1e-5f, row_out, op);
  });
  const Tensor gate = Tensor::contiguous(a.get(), dtype, {1, intermediate});
  const Tensor up = Tensor::contiguous(b.get(), dtype, {1, intermediate});
  const Tensor act = Tensor::contiguous(c.get(), dtype, {1, intermediate});
  measure("swiglu", "[1,2816]", 3.0 * intermediate * 2, [&](OpId op) { backend.swiglu(gate, up, act, op); });
  const Tensor wide = Tensor::contiguous(a.get(), dtype, {64, intermediate});
  measure("add", "[64,2816]", 3.0 * 64 * intermediate * 2, [&](OpId op) {
    backend.add(wide, Tensor::contiguous(b.get(), dtype, {64, intermediate}),
                Tensor::contiguous(c.get(), dtype, {64, intermediate}), op);
  });
  std::vector<int32_t> zeros(capacity, 0);
  backend.upload(tokens.get(), zeros.data(), zeros.size() * 4);
  backend.upload(positions.get(), zeros.data(), 4);
  measure("argmax", "[1,32000]", vocab * 2.0, [&](OpId op) {
    backend.argmax(Tensor::contiguous(logits.get(), dtype, {1, vocab}),
                   Tensor::contiguous(tokens.get(), DType::I32, {1, capacity}), position, op);
  });
  const Tensor q = Tensor::contiguous(a.get(), dtype, {1, heads * head_dim});
  const Tensor out = Tensor::contiguous(c.get(), dtype, {1, heads * head_dim});
  const Tensor keys = Tensor::contiguous(k_cache.get(), dtype, {1, heads, capacity, head_dim});
  const Tensor values = Tensor::contiguous(v_cache.get(), dtype, {1, heads, capacity, head_dim});
  // The non_contiguous bug's strided read: element (p, d) of a head at d * capacity + p.
  const Tensor keys_strided = Tensor::strided(k_cache.get(), dtype, {1, heads, capacity, head_dim},
                                              {heads * capacity * head_dim, capacity * head_dim, 1, capacity});
  const Tensor values_strided = Tensor::strided(v_cache.get(), dtype, {1, heads, capacity, head_dim},
                                                {heads * capacity * head_dim, capacity * head_dim, 1, capacity});
  for (int32_t context : {128, 512, 2048}) {
    const int32_t last = context - 1;
    backend.upload(positions.get(), &last, 4);
    const double bytes = 2.0 * heads * context * head_dim * 2;
    const std::string shape = "16 heads, D 64, " + std::to_string(context) + " keys";
    measure("attention", shape, bytes,
            [&](OpId op) { backend.attention(q, keys, values, position, 1, 0.125f, out, op); });
    measure("attention, head_dim-strided cache", shape, bytes,
            [&](OpId op) { backend.attention(q, keys_strided, values_strided, position, 1, 0.125f, out, op); });
  }
}

// --- 5. stream overheads ---
void bench_overheads(Backend& backend) {
  std::printf("\n## stream overheads\n\n| measure | median us | p90 us |\n|---|---|---|\n");
  auto report = [](const char* name, std::vector<double> us) {
    std::sort(us.begin(), us.end());
    std::printf("| %s | %.2f | %.2f |\n", name, us[us.size() / 2], us[us.size() * 9 / 10]);
  };
  DeviceBuffer a(backend, 1024 * sizeof(float));
  const Tensor small = Tensor::contiguous(a.get(), DType::F32, {1, 1024});
  OpId id = 1;
  for (int round = 0; round < 2; ++round) {
    std::vector<double> enqueue_us, per_op_us;
    for (int batch = 0; batch < 50; ++batch) {
      const int64_t begin = now_ns();
      for (int i = 0; i < 200; ++i) {
        const int64_t op_begin = now_ns();
        backend.add(small, small, small, id++);
        if (i % 16 == 0) enqueue_us.push_back((now_ns() - op_begin) * 1e-3);
      }
      backend.synchronize();
      per_op_us.push_back((now_ns() - begin) * 1e-3 / 200);
    }
    backend.take_timings();
    if (round == 1) {
      report("enqueue one op (add, 1024 fp32), host side", enqueue_us);
      report("enqueue + dispatch + run, 200 queued adds, per op", per_op_us);
    }
  }
  std::vector<double> hot, cold;
  for (int i = 0; i < 2000; ++i) {
    const int64_t begin = now_ns();
    backend.marker(id++);
    backend.synchronize();
    hot.push_back((now_ns() - begin) * 1e-3);
  }
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(300));  // longer than the worker's spin
    const int64_t begin = now_ns();
    backend.marker(id++);
    backend.synchronize();
    cold.push_back((now_ns() - begin) * 1e-3);
  }
  backend.take_timings();
  report("sync round trip (marker + synchronize), worker awake", hot);
  report("sync round trip, worker asleep", cold);
}

}  // namespace

// Usage: decodelab_bench_cpu [--threads N] [overheads|stream|matvec|batched|ops]...
int main(int argc, char** argv) {
  BackendOptions options;
  std::vector<std::string> sections;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "--threads" && i + 1 < argc)
      options.threads = std::atoi(argv[++i]);
    else
      sections.push_back(argument);
  }
  auto wanted = [&](const char* name) {
    return sections.empty() || std::find(sections.begin(), sections.end(), name) != sections.end();
  };
  auto backend = make_cpu_backend(options);
  const int threads = options.threads > 0 ? options.threads : omp_get_num_procs();
  std::printf("# decodelab CPU kernels\n\ndevice: %s\nbuild: %s\n", backend->device_description().c_str(),
              DECODELAB_BUILD_TYPE);
  if (std::strcmp(DECODELAB_BUILD_TYPE, "Release") != 0)
    std::printf("WARNING: not a Release build; numbers mean little\n");
  if (wanted("overheads")) bench_overheads(*backend);
  if (wanted("stream") || wanted("matvec")) {
    const StreamResult stream = measure_stream(threads);
    std::printf("\n## STREAM-like bandwidth (%d threads, 128 MiB arrays, 7 runs)\n\n", threads);
    std::printf("| kernel | GB/s (median) | GB/s (best) |\n|---|---|---|\n");
    std::printf("| copy | %.1f | %.1f |\n| triad | %.1f | %.1f |\n", stream.copy_gbs(false), stream.copy_gbs(true),
                stream.triad_gbs(false), stream.triad_gbs(true));
    if (wanted("matvec")) bench_matvec(*backend, stream);
  }
  if (wanted("batched")) bench_batched(*backend, threads);
  if (wanted("ops")) bench_other_ops(*backend);
  return 0;
}
