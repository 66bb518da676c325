// Device times from CUDA event pairs, the fallback when CUPTI is unavailable. An event
// pair measures from the stream reaching the first event to it reaching the second, so
// an op's interval includes the launch gaps between its own kernels (CUPTI's does not).
// Events have no absolute time: an op's duration is the elapsed time between its own two
// events, and its begin is placed after the previous op's end by the elapsed time between
// them (host/event_clock.h: short intervals, exact to the nanosecond, however long the run).
// The chain starts at an anchor event whose host time was measured (recorded on an idle
// stream, waited for, placed at the middle of the host's before/after); the anchor is
// renewed at most once a second, at a take() that finds the stream idle, so that the
// host and device clocks cannot drift apart.
#include <deque>
#include <vector>

#include "engine/base/clock.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/host/event_clock.h"
#include "engine/cuda/timing/op_timer.h"

namespace decodelab::cuda {

namespace {

constexpr int64_t kAnchorRenewNs = 1'000'000'000;

class EventTimer final : public OpTimer {
 public:
  explicit EventTimer(cudaStream_t stream) : stream_(stream) { renew_anchor(); }

  ~EventTimer() override {
    for (Pending& op : pending_) {
      cudaEventDestroy(op.begin);
      if (op.end != op.begin) cudaEventDestroy(op.end);
    }
    for (cudaEvent_t event : free_) cudaEventDestroy(event);
    if (chain_end_) cudaEventDestroy(chain_end_);
    if (open_begin_) cudaEventDestroy(open_begin_);
  }

  const char* source() const override { return "CUDA events"; }

  void begin(OpId /*id*/) override {
    open_begin_ = acquire();
    CUDA_CHECK(cudaEventRecord(open_begin_, stream_));
  }

  void end(OpId id) override {
    cudaEvent_t finish = acquire();
    CUDA_CHECK(cudaEventRecord(finish, stream_));
    pending_.push_back({id, open_begin_, finish});
    open_begin_ = nullptr;
  }

  void cancel(OpId /*id*/) noexcept override {
    if (open_begin_) free_.push_back(open_begin_);
    open_begin_ = nullptr;
  }

  void marker(OpId id) override {
    cudaEvent_t point = acquire();
    CUDA_CHECK(cudaEventRecord(point, stream_));
    pending_.push_back({id, point, point});
  }

  std::vector<OpTiming> take() override {
    std::vector<OpTiming> timings;
    while (!pending_.empty()) {
      Pending& op = pending_.front();
      const cudaError_t status = cudaEventQuery(op.end);
      if (status == cudaErrorNotReady) {
        cudaGetLastError();  // "not ready" is an answer: keep it out of the next launch check
        break;               // later ops are later on the stream too
      }
      CUDA_CHECK(status);
      const float gap_ms = elapsed_ms(chain_end_, op.begin);
      const float duration_ms = op.end == op.begin ? 0.0f : elapsed_ms(op.begin, op.end);
      const EventClock::Interval interval = clock_.place(gap_ms, duration_ms);
      timings.push_back({op.id, interval.begin_ns, interval.end_ns});
      // op.end now ends the chain; the event that did is free again.
      free_.push_back(chain_end_);
      if (op.end != op.begin) free_.push_back(op.begin);
      chain_end_ = op.end;
      pending_.pop_front();
    }
    if (pending_.empty() && now_ns() - anchored_at_ns_ > kAnchorRenewNs) {
      if (cudaStreamQuery(stream_) == cudaSuccess) {
        renew_anchor();
      } else {
        cudaGetLastError();  // busy ("not ready"): renew at a later take
      }
    }
    return timings;
  }

 private:
  struct Pending {
    OpId id;
    cudaEvent_t begin;
    cudaEvent_t end;
  };

  cudaEvent_t acquire() {
    if (!free_.empty()) {
      cudaEvent_t event = free_.back();
      free_.pop_back();
      return event;
    }
    cudaEvent_t event = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDefault));
    return event;
  }

  static float elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
    float milliseconds = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&milliseconds, from, to));
    return milliseconds;
  }

  // Three recordings on the idle stream, each bracketed by host times; the one with the
  // tightest bracket becomes the anchor, placed at the middle of its bracket.
  void renew_anchor() {
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    cudaEvent_t candidates[3] = {acquire(), acquire(), acquire()};
    int64_t middles[3] = {};
    int64_t widths[3] = {};
    for (int attempt = 0; attempt < 3; ++attempt) {
      const int64_t before = now_ns();
      CUDA_CHECK(cudaEventRecord(candidates[attempt], stream_));
      CUDA_CHECK(cudaEventSynchronize(candidates[attempt]));
      const int64_t after = now_ns();
      middles[attempt] = before + (after - before) / 2;
      widths[attempt] = after - before;
    }
    int best = 0;
    for (int attempt = 1; attempt < 3; ++attempt) {
      if (widths[attempt] < widths[best]) best = attempt;
    }
    if (chain_end_) free_.push_back(chain_end_);
    chain_end_ = candidates[best];
    clock_.anchor(middles[best]);
    anchored_at_ns_ = middles[best];
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (attempt != best) free_.push_back(candidates[attempt]);
    }
  }

  cudaStream_t stream_;
  cudaEvent_t chain_end_ = nullptr;  // the anchor, then the last event placed
  EventClock clock_;
  int64_t anchored_at_ns_ = 0;
  cudaEvent_t open_begin_ = nullptr;
  std::deque<Pending> pending_;
  std::vector<cudaEvent_t> free_;
};

}  // namespace

std::unique_ptr<OpTimer> make_event_timer(cudaStream_t stream) { return std::make_unique<EventTimer>(stream); }

}  // namespace decodelab::cuda
