// One decode step's matvecs against the triad around them (see matvec_step.h). Op times
// are the backend's device intervals; "step" rows add them (every matvec's bytes over
// their summed time) and, for the wall row, the gaps between ops as well.
#include "bench/matvec_step.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "bench/kernel_benches.h"
#include "bench/yardsticks.h"
#include "engine/base/clock.h"
#include "engine/device_buffer.h"

namespace decodelab::bench {

namespace {

constexpr int kLayers = 8;          // lab-small's decoder layers
constexpr int kStepsPerTurn = 3;    // steps run back to back between two triad passes
const char* const kStepRow = "step (matvec time)";
const char* const kWallRow = "step (wall)";

// One dtype's step: distinct weights for every layer's projections and the lm_head.
struct Step {
  DType dtype;
  std::vector<DeviceBuffer> buffers;
  std::vector<Tensor> weights;            // in the order the step runs them
  std::vector<const char*> layers;        // each weight's projection name
  std::map<int64_t, Tensor> x_by_k;       // one activation row per K
  DeviceBuffer out_buffer;
  Tensor out_for(int64_t n) const { return Tensor::contiguous(out_buffer.get(), dtype, {1, n}); }
};

Step make_step(Backend& backend, DType dtype) {
  Step step{dtype, {}, {}, {}, {}, DeviceBuffer(backend, 32000 * sizeof(float))};
  const std::vector<ProjectionShape>& shapes = lab_small_projections();
  uint32_t seed = 1;
  auto add = [&](const ProjectionShape& shape) {
    step.buffers.emplace_back(backend, static_cast<size_t>(shape.n * shape.k) * dtype_size(dtype));
    fill_random(backend, step.buffers.back().get(), dtype, static_cast<size_t>(shape.n * shape.k), seed++);
    step.weights.push_back(Tensor::contiguous(step.buffers.back().get(), dtype, {shape.n, shape.k}));
    step.layers.push_back(shape.layer);
    if (!step.x_by_k.count(shape.k)) {
      step.buffers.emplace_back(backend, static_cast<size_t>(shape.k) * dtype_size(dtype));
      fill_random(backend, step.buffers.back().get(), dtype, static_cast<size_t>(shape.k), 99);
      step.x_by_k.emplace(shape.k, Tensor::contiguous(step.buffers.back().get(), dtype, {1, shape.k}));
    }
  };
  for (int layer = 0; layer < kLayers; ++layer)
    for (const ProjectionShape& shape : shapes)
      if (std::string(shape.layer) != "lm_head") add(shape);
  for (const ProjectionShape& shape : shapes)
    if (std::string(shape.layer) == "lm_head") add(shape);
  return step;
}

// GB/s per row name over one turn of kStepsPerTurn steps.
std::map<std::string, double> run_turn(Backend& backend, const Step& step) {
  std::map<std::string, double> bytes, seconds;
  OpId id = 1;
  backend.synchronize();
  backend.take_timings();
  const int64_t begin = now_ns();
  for (int repeat = 0; repeat < kStepsPerTurn; ++repeat)
    for (const Tensor& weight : step.weights)
      backend.matmul(step.x_by_k.at(weight.shape[1]), weight, step.out_for(weight.shape[0]), id++);
  backend.synchronize();
  const double wall = (now_ns() - begin) * 1e-9;
  const std::vector<OpTiming> timings = backend.take_timings();
  double total_bytes = 0, total_seconds = 0;
  for (const OpTiming& timing : timings) {
    const size_t index = static_cast<size_t>(timing.id - 1) % step.weights.size();
    const Tensor& weight = step.weights[index];
    const double op_bytes = static_cast<double>(weight.shape[0] * weight.shape[1]) * dtype_size(step.dtype);
    const double op_seconds = (timing.end_ns - timing.begin_ns) * 1e-9;
    bytes[step.layers[index]] += op_bytes;
    seconds[step.layers[index]] += op_seconds;
    total_bytes += op_bytes;
    total_seconds += op_seconds;
  }
  std::map<std::string, double> gbs;
  for (const auto& [layer, layer_bytes] : bytes) gbs[layer] = layer_bytes / seconds[layer] / 1e9;
  gbs[kStepRow] = total_bytes / total_seconds / 1e9;
  gbs[kWallRow] = total_bytes / wall / 1e9;
  return gbs;
}

std::string range_of(const std::vector<double>& values) {
  return percent(*std::min_element(values.begin(), values.end())) + " - " +
         percent(*std::max_element(values.begin(), values.end()));
}

}  // namespace

void bench_matvec_step(BenchReport& report, Backend& backend, int threads, int rounds) {
  const DType dtypes[] = {DType::F16, DType::BF16, DType::F32};
  std::vector<Step> steps;
  for (DType dtype : dtypes) {
    steps.push_back(make_step(backend, dtype));
    run_turn(backend, steps.back());  // warm-up
  }
  // samples[dtype][row]: GB/s and GB/s over the triad around the turn, one per round.
  std::map<std::string, std::vector<double>> gbs[3], of_triad[3];
  std::map<std::string, std::vector<double>> fp16_over_fp32;
  for (int round = 0; round < rounds; ++round) {
    std::map<std::string, double> round_gbs[3];
    double triad_before = triad_gbs(threads, 1);
    for (int turn = 0; turn < 3; ++turn) {
      const int which = (turn + round) % 3;  // rotate the order: no dtype always runs first
      round_gbs[which] = run_turn(backend, steps[static_cast<size_t>(which)]);
      const double triad_after = triad_gbs(threads, 1);
      const double triad = (triad_before + triad_after) / 2;
      for (const auto& [row, value] : round_gbs[which]) {
        gbs[which][row].push_back(value);
        of_triad[which][row].push_back(value / triad);
      }
      triad_before = triad_after;
    }
    for (const auto& [row, value] : round_gbs[0]) fp16_over_fp32[row].push_back(value / round_gbs[2][row]);
  }

  std::vector<std::string> order;
  for (const ProjectionShape& shape : lab_small_projections()) order.push_back(shape.layer);
  order.push_back(kStepRow);
  order.push_back(kWallRow);
  std::vector<std::vector<std::string>> rows;
  nlohmann::json& json = report.section("matvec_step") = nlohmann::json::object();
  json["threads"] = threads;
  json["rounds"] = rounds;
  for (const std::string& row : order) {
    std::vector<std::string> cells{row};
    for (int i = 0; i < 3; ++i) {
      cells.push_back(fixed(median_of(gbs[i][row])));
      cells.push_back(percent(median_of(of_triad[i][row])));
      cells.push_back(range_of(of_triad[i][row]));
      json[row][dtype_name(dtypes[i])] = {{"gbs", gbs[i][row]}, {"of_triad", of_triad[i][row]}};
    }
    cells.push_back(fixed(median_of(fp16_over_fp32[row]), 2) + "x");
    json[row]["fp16_over_fp32_gbs"] = fp16_over_fp32[row];
    rows.push_back(cells);
  }
  report.heading("one decode step's matvecs against the triad around them (lab-small, batch 1, " +
                     std::to_string(threads) + (threads == 1 ? " thread)" : " threads)"),
                 "Per round, each dtype runs " + std::to_string(kStepsPerTurn) + " steps (" +
                     std::to_string(kLayers) +
                     " layers' projections and the lm_head, each its own weights) between two triad passes; "
                     "\"of triad\" is its GB/s over their mean: medians over " + std::to_string(rounds) +
                     " rounds with their ranges. Weight bytes only; GB/s from the ops' device time, the wall row "
                     "also counts the gaps between ops.");
  report.table({"matvec", "fp16 GB/s", "of triad", "range", "bf16 GB/s", "of triad", "range", "fp32 GB/s", "of triad",
                "range", "fp16 ÷ fp32 GB/s"},
               rows);
  report.check({"step matvecs fp16: GB/s of STREAM triad", 100.0 * median_of(of_triad[0][kStepRow]), 85, "%",
                "median over interleaved rounds, ops' device time, against the triad around each turn"});
}

}  // namespace decodelab::bench
