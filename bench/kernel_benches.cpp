// Kernel-level CPU benchmarks (see kernel_benches.h). Kernel times are the device
// intervals the backend reports (take_timings); each row gives the median and the best
// run, since other processes on a shared machine disturb the median.
#include "bench/kernel_benches.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_support.h"
#include "engine/base/clock.h"
#include "engine/device_buffer.h"

#if DECODELAB_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace decodelab::bench {

const std::vector<ProjectionShape>& lab_small_projections() {
  static const std::vector<ProjectionShape> shapes = {{1024, 3072, "qkv_proj"},
                                                      {1024, 1024, "o_proj"},
                                                      {1024, 5632, "gate_up_proj"},
                                                      {2816, 1024, "down_proj"},
                                                      {1024, 32000, "lm_head"}};
  return shapes;
}

void bench_matvec(BenchReport& report, Backend& backend, const StreamFigures& stream) {
  std::vector<std::vector<std::string>> rows;
  nlohmann::json& json = report.section("matvec") = nlohmann::json::array();
  for (DType dtype : {DType::F16, DType::BF16, DType::F32}) {
    for (const ProjectionShape& shape : lab_small_projections()) {
      WeightCopies weights = make_weight_copies(backend, dtype, shape.n, shape.k);
      DeviceBuffer x_buffer(backend, static_cast<size_t>(shape.k) * dtype_size(dtype));
      DeviceBuffer out_buffer(backend, static_cast<size_t>(shape.n) * dtype_size(dtype));
      fill_random(backend, x_buffer.get(), dtype, static_cast<size_t>(shape.k), 99);
      const Tensor x = Tensor::contiguous(x_buffer.get(), dtype, {1, shape.k});
      const Tensor out = Tensor::contiguous(out_buffer.get(), dtype, {1, shape.n});
      const int passes = std::max<int>(3, static_cast<int>(64 / weights.views.size()));
      const TimedSamples seconds = time_matmul(backend, x, weights, out, passes);
      const double bytes = static_cast<double>(shape.n * shape.k) * dtype_size(dtype);
      const double best_gbs = bytes / seconds.best / 1e9;
      rows.push_back({dtype_name(dtype), std::to_string(shape.k), std::to_string(shape.n), shape.layer,
                      fixed(seconds.median * 1e6), fixed(bytes / seconds.median / 1e9), fixed(best_gbs),
                      percent(best_gbs / stream.triad_gbs), percent(best_gbs / stream.read_gbs),
                      noisy(seconds) ? "yes" : ""});
      json.push_back({{"dtype", dtype_name(dtype)},
                      {"k", shape.k},
                      {"n", shape.n},
                      {"layer", shape.layer},
                      {"median_us", seconds.median * 1e6},
                      {"median_gbs", bytes / seconds.median / 1e9},
                      {"best_gbs", best_gbs},
                      {"of_triad", best_gbs / stream.triad_gbs},
                      {"of_read", best_gbs / stream.read_gbs}});
    }
  }
  report.heading("batch-1 decode matvec, lab-small shapes (weights streamed from DRAM)",
                 "Fractions compare best runs with the STREAM section's best runs.");
  report.table({"weights", "K", "N", "layer", "median us", "GB/s (median)", "GB/s (best)", "of triad", "of read",
                "noisy"},
               rows);
}

// Best seconds of OpenBLAS sgemm for out[M, N] = x[M, K] · W[N, K]ᵀ cycling `weights`.
static double openblas_seconds([[maybe_unused]] const float* x, [[maybe_unused]] float* out,
                               [[maybe_unused]] const WeightCopies& weights, [[maybe_unused]] int64_t m,
                               [[maybe_unused]] int64_t n, [[maybe_unused]] int64_t k, [[maybe_unused]] int passes,
                               [[maybe_unused]] int threads) {
#if DECODELAB_HAVE_OPENBLAS
  openblas_set_num_threads(threads);
  std::vector<double> seconds;
  for (int pass = 0; pass < passes + 1; ++pass) {
    for (const Tensor& weight : weights.views) {
      const int64_t begin = now_ns();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
                  static_cast<int>(k), 1.0f, x, static_cast<int>(k), weight.as<const float>(), static_cast<int>(k),
                  0.0f, out, static_cast<int>(n));
      if (pass > 0) seconds.push_back((now_ns() - begin) * 1e-9);
    }
  }
  return timed(std::move(seconds)).best;
#else
  return 0;
#endif
}

void bench_matmul(BenchReport& report, Backend& backend, int threads, double fma_peak) {
  const int64_t k = 1024, n = 2816;
  const int64_t batches[] = {1, 2, 4, 8, 16, 32, 64, 512};
  WeightCopies f16 = make_weight_copies(backend, DType::F16, n, k);
  WeightCopies bf16 = make_weight_copies(backend, DType::BF16, n, k);
  WeightCopies f32 = make_weight_copies(backend, DType::F32, n, k);
  DeviceBuffer x_buffer(backend, static_cast<size_t>(512 * k) * sizeof(float));
  DeviceBuffer out_buffer(backend, static_cast<size_t>(512 * n) * sizeof(float));
  std::vector<std::vector<std::string>> rows;
  nlohmann::json& json = report.section("matmul") = nlohmann::json::array();
  double worst_large_m = 1e30;
  for (int64_t m : batches) {
    const double flops = 2.0 * m * n * k;
    const int passes = m >= 64 ? 1 : 3;
    double gflops[3];
    const WeightCopies* sets[3] = {&f16, &bf16, &f32};
    for (int i = 0; i < 3; ++i) {
      const DType dtype = sets[i]->views[0].dtype;
      // Activations in the weights' dtype, as the engine runs them.
      fill_random(backend, x_buffer.get(), dtype, static_cast<size_t>(m * k), 7);
      const Tensor x = Tensor::contiguous(x_buffer.get(), dtype, {m, k});
      const Tensor out = Tensor::contiguous(out_buffer.get(), dtype, {m, n});
      gflops[i] = flops / time_matmul(backend, x, *sets[i], out, passes).best / 1e9;
    }
    fill_random(backend, x_buffer.get(), DType::F32, static_cast<size_t>(m * k), 7);
    const double blas_seconds = openblas_seconds(static_cast<const float*>(x_buffer.get()),
                                                 static_cast<float*>(out_buffer.get()), f32, m, n, k, passes, threads);
    const double blas = blas_seconds > 0 ? flops / blas_seconds / 1e9 : 0;
    if (m >= 32) worst_large_m = std::min({worst_large_m, gflops[0], gflops[1], gflops[2]});
    const double peak = fma_peak / 1e9;
    rows.push_back({std::to_string(m), fixed(gflops[0]), fixed(gflops[1]), fixed(gflops[2]),
                    peak > 0 ? percent(gflops[0] / peak) : "n/a", peak > 0 ? percent(gflops[2] / peak) : "n/a",
                    blas > 0 ? fixed(blas) : "n/a", blas > 0 ? percent(blas / peak) : "n/a",
                    blas > 0 ? fixed(gflops[2] / blas, 2) + "x" : "n/a"});
    json.push_back({{"m", m},
                    {"fp16_gflops", gflops[0]},
                    {"bf16_gflops", gflops[1]},
                    {"fp32_gflops", gflops[2]},
                    {"openblas_sgemm_gflops", blas > 0 ? nlohmann::json(blas) : nlohmann::json()},
                    {"fp16_of_fma_peak", peak > 0 ? gflops[0] / peak : 0.0}});
  }
  report.heading("batched matmul, K=1024 N=2816 (half of gate_up_proj), weights streamed from DRAM, best runs",
                 "The decode/prefill matmul kernel at M rows against the FMA peak, and OpenBLAS's sgemm (fp32) on the "
                 "same weights as a peer.");
  report.table({"M", "fp16 GFLOP/s", "bf16 GFLOP/s", "fp32 GFLOP/s", "fp16 of FMA peak", "fp32 of FMA peak",
                "OpenBLAS sgemm GFLOP/s", "sgemm of FMA peak", "fp32 / sgemm"},
               rows);
  if (fma_peak > 0) {
    report.check({"matmul kernel, M >= 32 (worst dtype): of the FMA peak", 100.0 * worst_large_m / (fma_peak / 1e9), 60,
                  "%", "K=1024, N=2816, weights from DRAM, best of the repeats"});
  }
}

void bench_other_ops(BenchReport& report, Backend& backend) {
  std::vector<std::vector<std::string>> rows;
  nlohmann::json& json = report.section("other_ops") = nlohmann::json::array();
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
    const TimedSamples time = timed(std::move(seconds));
    rows.push_back({name, shape, fixed(time.median * 1e6), fixed(time.best * 1e6), fixed(bytes / time.best / 1e9)});
    json.push_back({{"op", name}, {"shape", shape}, {"median_us", time.median * 1e6}, {"best_us", time.best * 1e6},
                    {"best_gbs", bytes / time.best / 1e9}});
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
  report.heading("other ops, lab-small decode shapes (fp16, batch 1)", "Device time per call, 50 calls after 5 warm-ups.");
  report.table({"op", "shape", "median us", "best us", "GB/s (best)"}, rows);
}

}  // namespace decodelab::bench
