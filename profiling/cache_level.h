// The last-level cache a CPU measurement prices (RoofMeasurement's cache_* fields): the
// capacity the OS reports (sysfs, else CPUID), kept only where an fp16 matrix-vector product
// over a quarter of it reads at cache speed — 2x the same product over a weight no cache
// holds, timed just before it, since a VM's memory bandwidth moves from period to period and
// its CPUID can report the host's whole socket; otherwise the weight is halved until a read
// is that fast, and the capacity is that weight. Its bandwidth: that read, again and again
// while the weight stays resident.
#pragma once

#include <functional>
#include <iosfwd>

#include "engine/backend.h"
#include "profiling/roof_measure.h"

namespace decodelab {

// Measures the cache level into `measurement` (a CPU backend; nothing where the OS reports
// no cache).
void measure_cache_level(Backend& backend, const RoofMeasureOptions& options, RoofMeasurement& measurement,
                         std::ostream* progress);

// The search itself: `read` times the product over a weight of about the bytes it is given,
// and just before it the product over a weight streamed from DRAM; first a quarter of
// `reported_bytes` (at most `largest_weight_bytes`), and while a read is not at cache speed
// half as much, down to 256 KiB. The first read at cache speed sets the capacity: the
// reported one when it was the first tried, else its weight; none: no cache level.
void find_cache_level(double reported_bytes, double largest_weight_bytes,
                      const std::function<RoofMeasurement::CacheRead(double weight_bytes)>& read,
                      RoofMeasurement& measurement);

// This machine's last-level cache in bytes (sysfs, else sysconf), 0 when unknown.
double host_cache_bytes();

}  // namespace decodelab
