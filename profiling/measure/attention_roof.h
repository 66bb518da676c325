// The decode attention ceiling of a roof measurement (RoofMeasurement::DecodeAttention): the
// engine's own attention kernel timed in decode — one query row per sequence — over KV
// caches of a few context lengths, streamed from memory as in a decode step.
// The one non-obvious choice: the rate is counted in the bytes the cost model declares for
// the op (keys, values, queries, outputs; profiling/model/cost_model.h), so that the prediction
// prices an attention op as declared bytes over it and gets the time measured at its shape.
#pragma once

#include <cstddef>
#include <iosfwd>

#include "engine/backend.h"
#include "profiling/measure/op_timer.h"
#include "profiling/measure/roof_measure.h"

namespace decodelab {

// Per dtype of options.matmul_dtypes and context of options.decode_attention_contexts: as
// many layers' K and V caches ([sequences, heads, context, 64], head-major as the engine
// keeps them) carved one after another out of `memory` as stream four times the last-level
// cache (64 MiB at least) and fit, each layer's attention its own op, heads of 64 dimensions
// at options.decode_step_width / 64 heads (lab-small's 16), one KV head per query head.
void measure_decode_attention(Backend& backend, OpTimer& timer, void* memory, size_t memory_bytes,
                              const RoofMeasureOptions& options, RoofMeasurement& measurement, std::ostream* progress);

}  // namespace decodelab
