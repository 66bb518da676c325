// How the CPU matmul streams a weight matrix from memory when it reads each weight once
// (batch-1 and batched decode, the first pass of a prefill panel). Two variants:
//   hardware      x86's hardware prefetchers do the streaming: one x row reads W as
//                 kStreams long sequential streams (a near prefetch into L1 per stream for
//                 16-bit rows), a few x rows read W in blocks with no software prefetch
//   non-temporal  W read in blocks of interleaved rows, each block prefetched far ahead
//                 with prefetchnta, as one sequential stream
// The one non-obvious choice: the variant is a machine's property, not an instruction
// set's. prefetchnta's fills are kept out of the outer caches, and how far that helps or
// hurts a stream differs by vendor and core: the non-temporal blocks were the faster on
// an AMD core, and read a third of the hardware variant's bandwidth on an Intel AVX-512
// core (bench/results/2026-12-06-intel-weight-stream.md). The default is
// the hardware variant, whose only assumption is a hardware prefetcher that follows long
// sequential streams; DECODELAB_WEIGHT_STREAM=hardware|non-temporal picks one, and the
// variant in use is part of the CPU backend's device description (so of every result).
#pragma once

#include <string>

namespace decodelab::cpu {

enum class WeightStream { kHardware, kNonTemporal };

// The variant this process uses: DECODELAB_WEIGHT_STREAM, read once; throws InputError
// naming the variable and the values it takes when it holds anything else.
WeightStream weight_stream();
// "hardware" or "non-temporal": the variable's own spelling.
const char* weight_stream_name(WeightStream stream);
// The parse behind weight_stream(), for tests: nullptr or "" means the default.
WeightStream parse_weight_stream(const char* value);

// For tests and A/B measurements in one process: weight_stream() answers `stream` while
// this lives (no matmul may be in flight when it is made or ends).
class ScopedWeightStream {
 public:
  explicit ScopedWeightStream(WeightStream stream);
  ~ScopedWeightStream();
  ScopedWeightStream(const ScopedWeightStream&) = delete;
  ScopedWeightStream& operator=(const ScopedWeightStream&) = delete;

 private:
  int previous_;
};

}  // namespace decodelab::cpu
