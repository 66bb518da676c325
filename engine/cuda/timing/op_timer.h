// Device times of ops: begin()/end() bracket the launches of one op, marker() times a
// point on the stream, take() returns the intervals of ops finished since the last call,
// on the host's now_ns() clock. An op made of several kernels reports its first start
// and its last end. Two implementations: CUPTI activity records (exact kernel times,
// correlated to ops by external correlation ids) and, where CUPTI is unavailable (no
// library, another profiler attached, a sandbox that refuses it), CUDA event pairs.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/events/event_sink.h"

namespace decodelab::cuda {

class OpTimer {
 public:
  virtual ~OpTimer() = default;
  virtual const char* source() const = 0;  // "CUPTI" or "CUDA events"
  virtual void begin(OpId id) = 0;
  virtual void end(OpId id) = 0;
  virtual void cancel(OpId id) noexcept = 0;  // the op failed between begin and end
  virtual void marker(OpId id) = 0;
  virtual std::vector<OpTiming> take() = 0;  // call after the stream is synchronised
};

// nullptr, with the reason in `why_not`, when CUPTI cannot be used in this process.
std::unique_ptr<OpTimer> make_cupti_timer(cudaStream_t stream, std::string& why_not);
std::unique_ptr<OpTimer> make_event_timer(cudaStream_t stream);
// After a CUPTI timer failed its self-test: later calls of make_cupti_timer return nullptr.
void abandon_cupti(const std::string& reason);

}  // namespace decodelab::cuda
