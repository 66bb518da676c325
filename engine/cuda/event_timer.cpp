// Device times from CUDA event pairs, the fallback when CUPTI is unavailable. An event
// pair measures from the stream reaching the first event to it reaching the second, so
// an op's interval includes the launch gaps between its own kernels (CUPTI's does not).
// Events have no absolute time: each is placed on the host clock by its elapsed time
// from an anchor event whose host time was measured (record on an idle stream, wait,
// take the middle of the host's before/after). The anchor is renewed at most once a
// second, when the stream is idle, so float milliseconds stay precise and the two clocks
// cannot drift apart.
#include <deque>
#include <vector>

#include "engine/clock.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/op_timer.h"

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
    if (anchor_) cudaEventDestroy(anchor_);
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
      timings.push_back({op.id, host_time(op.begin), host_time(op.end)});
      free_.push_back(op.begin);
      if (op.end != op.begin) free_.push_back(op.end);
      pending_.pop_front();
    }
    if (pending_.empty() && now_ns() - anchor_host_ns_ > kAnchorRenewNs) {
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

  int64_t host_time(cudaEvent_t event) const {
    float milliseconds = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&milliseconds, anchor_, event));
    return anchor_host_ns_ + static_cast<int64_t>(static_cast<double>(milliseconds) * 1e6);
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
    if (anchor_) free_.push_back(anchor_);
    anchor_ = candidates[best];
    anchor_host_ns_ = middles[best];
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (attempt != best) free_.push_back(candidates[attempt]);
    }
  }

  cudaStream_t stream_;
  cudaEvent_t anchor_ = nullptr;
  int64_t anchor_host_ns_ = 0;
  cudaEvent_t open_begin_ = nullptr;
  std::deque<Pending> pending_;
  std::vector<cudaEvent_t> free_;
};

}  // namespace

std::unique_ptr<OpTimer> make_event_timer(cudaStream_t stream) { return std::make_unique<EventTimer>(stream); }

}  // namespace decodelab::cuda
