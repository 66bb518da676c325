// Timing ops by the device's own op timings, as every roof measurement does
// (profiling/measure/roof_measure.h): warm-up runs, then timed repeats, each on its own sync.
// Non-obvious choices: a repeat of several ops is the sum of their device times, the gaps
// between them left out — what the ops themselves cost, like the ops they price; and the
// warm-ups go on past their count until they have kept the device busy for
// RoofMeasureOptions::min_warmup_seconds, because a memory path that ramps up under
// continuous traffic would otherwise read as a noisy, contended machine.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <vector>

#include "engine/backend.h"
#include "engine/model/weights.h"
#include "profiling/measure/roof_measure.h"

namespace decodelab {

// Uniform values in [-1, 1) (random data keeps a kernel honest: zeros or denormals run at
// other speeds).
inline void fill_random(Backend& backend, void* device, DType dtype, size_t elements, uint64_t seed) {
  fill_uniform(Tensor::contiguous(device, dtype, {static_cast<int64_t>(elements)}), backend, seed, 1.0f / std::sqrt(3.0f));
}

class OpTimer {
 public:
  // Enqueues a sequence of ops, taking an id from `next` for each.
  using Sequence = std::function<void(const std::function<OpId()>& next)>;

  OpTimer(Backend& backend, const RoofMeasureOptions& options) : backend_(backend), options_(options) {}

  // Warm-up runs, then the timed repeats of a sequence of ops enqueued together, each repeat
  // on its own sync (`enqueue` takes an id from `next` for each op): a repeat's time is the
  // sum of its ops' device times, the gaps between them left out.
  TimedSamples sample_sequence(const Sequence& enqueue) {
    const Warmup warmup = warm_up([&] { return time_sequence(enqueue); });
    std::vector<double> seconds;
    for (int i = 0; i < std::max(1, options_.repeats); ++i) seconds.push_back(time_sequence(enqueue));
    return warmup.annotate(TimedSamples::of(std::move(seconds), options_.noisy_spread));
  }

  // Several sequences timed in turn: the warm-ups of each, then round after round, each
  // sequence timed once per round, so that a machine whose speed moves from period to period
  // moves every sequence's samples alike (what a ratio of their rates needs). One summary
  // per sequence, in order.
  // The warm-ups are whole rounds, each counted at the round's total time. Every timed round
  // opens with its first sequence once more, untimed (the lead-in), so that the first timed
  // sequence follows one of its own kind rather than the previous round's last: the decode
  // matmuls' rounds end on a compute-bound 64-row step that leaves the memory path idle, and
  // fp32's one row timed right after it read about 4% slower than behind fp16's one row
  // (docs/prediction.md, "Long weights").
  std::vector<TimedSamples> sample_interleaved(const std::vector<Sequence>& sequences) {
    const Warmup warmup = warm_up([&] {
      double round = 0;
      for (const Sequence& sequence : sequences) round += time_sequence(sequence);
      return round;
    });
    std::vector<std::vector<double>> seconds(sequences.size());
    for (int round = 0; round < std::max(1, options_.repeats); ++round) {
      if (!sequences.empty()) time_sequence(sequences.front());  // the lead-in
      for (size_t i = 0; i < sequences.size(); ++i) seconds[i].push_back(time_sequence(sequences[i]));
    }
    std::vector<TimedSamples> samples;
    for (std::vector<double>& each : seconds)
      samples.push_back(warmup.annotate(TimedSamples::of(std::move(each), options_.noisy_spread)));
    return samples;
  }

  // The same for one op.
  TimedSamples sample(const std::function<void(OpId)>& enqueue) {
    return sample_sequence([&](const std::function<OpId()>& next) { enqueue(next()); });
  }

 private:
  struct Warmup {
    int count = 0;
    double first = 0;
    double total = 0;
    TimedSamples annotate(TimedSamples samples) const {
      samples.warmups = count;
      samples.first_warmup = first;
      samples.warmup_seconds = total;
      return samples;
    }
  };

  // options_.warmups runs of `once` (at least one), then more until those after the first
  // have taken min_warmup_seconds of device time — or four times that on the wall clock, for
  // ops so short that their syncs take most of the time.
  Warmup warm_up(const std::function<double()>& once) {
    Warmup warmup;
    double after_first = 0;
    const auto start = std::chrono::steady_clock::now();
    const auto wall_cap = std::chrono::duration<double>(4 * options_.min_warmup_seconds);
    for (int i = 0; i < std::max(1, options_.warmups) ||
                    (after_first < options_.min_warmup_seconds && std::chrono::steady_clock::now() - start < wall_cap);
         ++i) {
      const double seconds = once();
      if (i == 0) warmup.first = seconds;
      else after_first += seconds;
      warmup.total += seconds;
      ++warmup.count;
    }
    return warmup;
  }

  double time_sequence(const Sequence& enqueue) {
    if (options_.checkpoint) options_.checkpoint();  // nothing is queued here: abandoning leaves the backend idle
    const OpId first = next_id_;
    enqueue([this] { return next_id_++; });
    backend_.synchronize();
    int64_t nanoseconds = 0;
    OpId found = 0;
    for (const OpTiming& timing : backend_.take_timings()) {
      if (timing.id < first || timing.id >= next_id_) continue;
      nanoseconds += std::max<int64_t>(1, timing.end_ns - timing.begin_ns);
      ++found;
    }
    if (found != next_id_ - first)
      throw std::runtime_error("the " + backend_.name() + " backend reported no device time for a roof measurement op");
    return static_cast<double>(nanoseconds) * 1e-9;
  }

  Backend& backend_;
  const RoofMeasureOptions& options_;
  OpId next_id_ = 1;
};

}  // namespace decodelab
