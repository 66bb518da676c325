// The efficiency table's measurement (RoofMeasurement::kernels): the CPU backend's matmul
// and attention kernels timed on the engine's own op shapes of the shipped models' layers,
// one sequence per (category, dtype, shape bucket, rows), the bytes streamed from memory.
//
// Non-obvious choices: a bucket is timed once, on the smallest shipped model whose layer
// has a shape in it (the buckets are a rule, efficiency.h; the models only say which buckets
// a run of theirs meets); a weight is cut to at most 16 MiB of rows (N), so that a large
// model's projections stream as several ops the way a step's do and a compute-bound
// sequence can stop within its FLOP budget; and every dtype and row count of one bucket is
// timed in turn, round after round (OpTimer::sample_interleaved), so that the ratios the
// bugs turn on (fp32 against fp16 weights, a prefix's rows against one) come from the same
// periods of the machine.
#pragma once

#include <iosfwd>

#include "engine/backend.h"
#include "profiling/measure/op_timer.h"
#include "profiling/measure/roof_measure.h"

namespace decodelab {

// Every matmul bucket of the options' layer shapes (shipped_layer_shapes() when empty) at
// each of options.efficiency_rows, and decode attention of each distinct head layout at
// each of options.efficiency_contexts, into measurement.kernels; `memory_bytes` bounds
// the bytes one dtype's sequence streams.
void measure_efficiency(Backend& backend, size_t memory_bytes, const RoofMeasureOptions& options,
                        RoofMeasurement& measurement, std::ostream* progress);

}  // namespace decodelab
