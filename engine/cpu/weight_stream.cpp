// The weight-stream variant of the CPU matmul (weight_stream.h), read once from the
// environment.
#include "engine/cpu/weight_stream.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "engine/base/errors.h"

namespace decodelab::cpu {

const char* weight_stream_name(WeightStream stream) {
  return stream == WeightStream::kNonTemporal ? "non-temporal" : "hardware";
}

WeightStream parse_weight_stream(const char* value) {
  if (value == nullptr || *value == '\0' || std::strcmp(value, "hardware") == 0) return WeightStream::kHardware;
  if (std::strcmp(value, "non-temporal") == 0) return WeightStream::kNonTemporal;
  throw InputError("environment", 0, "DECODELAB_WEIGHT_STREAM",
                   std::string("expected hardware or non-temporal, got '") + value + "'");
}

namespace {
constexpr int kNoOverride = -1;
std::atomic<int> override_stream{kNoOverride};
}  // namespace

WeightStream weight_stream() {
  const int forced = override_stream.load(std::memory_order_relaxed);
  if (forced != kNoOverride) return static_cast<WeightStream>(forced);
  static const WeightStream stream = parse_weight_stream(std::getenv("DECODELAB_WEIGHT_STREAM"));
  return stream;
}

ScopedWeightStream::ScopedWeightStream(WeightStream stream)
    : previous_(override_stream.exchange(static_cast<int>(stream))) {}
ScopedWeightStream::~ScopedWeightStream() { override_stream.store(previous_); }

}  // namespace decodelab::cpu
