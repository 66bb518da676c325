// The last-level cache a CPU measurement prices (RoofMeasurement's cache_* fields): the
// capacity the OS reports (sysfs, else CPUID), checked by reads, since a VM's CPUID can
// report its host's whole socket. fp16 matrix-vector products over weights halving from a
// quarter of the reported capacity are timed in turn (after the same product over a weight
// no cache holds): the capacity is the largest weight that reads on the cache's plateau — as
// fast, within kCachePlateau, as the faster of the weights half and a quarter its size — and
// well above DRAM speed; the reported capacity itself where that is the first weight. Its
// bandwidth: the fastest of those three reads. Where the weights below the last level read
// much faster from a level nearer the core (an L2 twice as fast as the L3), the search finds
// that level: the one a small working set is priced at.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>

#include "engine/backend.h"
#include "profiling/measure/roof_measure.h"

namespace decodelab {

// A weight reads on the cache's plateau when it reads at least this fraction as fast as the
// faster of the kCachePlateauReads weights below it (half and a quarter its size). A ratio of
// reads taken back to back, not one to a DRAM reading: a DRAM reading moves by up to 3x as a
// memory path ramps and vCPUs move, so a weight read from DRAM can read twice the DRAM
// product timed just before it, while reads taken back to back agree closely on the plateau
// and a weight beyond the cache reads well below the two under it.
constexpr double kCachePlateau = 0.85;
constexpr size_t kCachePlateauReads = 2;
// ... and at least this much faster than the product over a weight no cache holds, timed
// (warmed) before the search: what tells a plateau of cache reads from one of DRAM reads
// (every weight beyond the cache reads alike).
constexpr double kCacheAboveDram = 1.25;

// Measures the cache level into `measurement` (a CPU backend; nothing where the OS reports
// no cache).
void measure_cache_level(Backend& backend, const RoofMeasureOptions& options, RoofMeasurement& measurement,
                         std::ostream* progress);

// The search itself, over `dram_bandwidth` (the product over a weight no cache holds): `read`
// times the product over a weight of about the bytes it is given, first a quarter of
// `reported_bytes` (at most `largest_weight_bytes`), then half as much each time, down to
// 256 KiB, each weight judged once the two below it are read (the last but one against its
// half alone). The first weight on the plateau and above DRAM sets the capacity: the reported
// one when it was the first tried, else its weight; none: no cache level. Before the first
// weight claims the reported capacity (four times anything read), `dram_again`, when given,
// times the DRAM product once more, back to back with the reads, and returns its bandwidth;
// the weight must also read kCacheAboveDram above the faster of the two readings. A first
// DRAM reading held up (a memory path still ramping, a neighbour) can let a weight read from
// DRAM pass as cached, and the prediction would then price a model's weights as resident in
// a cache they do not fit.
void find_cache_level(double reported_bytes, double largest_weight_bytes, double dram_bandwidth,
                      const std::function<RoofMeasurement::CacheRead(double weight_bytes)>& read,
                      RoofMeasurement& measurement,
                      const std::function<double()>& dram_again = nullptr);

// This machine's last-level cache in bytes (sysfs, else sysconf), 0 when unknown.
double host_cache_bytes();

}  // namespace decodelab
