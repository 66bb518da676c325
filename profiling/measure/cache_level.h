// The last-level cache a CPU measurement prices (RoofMeasurement's cache_* fields): what
// reads show, from below the capacity the OS reports (sysfs, else CPUID), since a VM's CPUID
// can report its host's whole socket, and a cache's share of a larger working set depends on
// its replacement policy and its neighbours. fp16 matrix-vector products over weights halving
// from a quarter of the reported capacity are timed in turn (after the same product over a
// weight no cache holds): the capacity is the largest weight that reads on the cache's
// plateau — as fast, within kCachePlateau, as the faster of the weights half and a quarter
// its size — and well above DRAM speed: never more than was read. Its bandwidth: the fastest
// of those three reads. Weights beyond the capacity, doubling up to the bandwidth roof's own
// read, are read too: they give the hit curve (RoofMeasurement::cache_hits_beyond). Where the weights below the last level read
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
// half alone). The first weight on the plateau and above DRAM sets the capacity; none: no
// cache level. Once it is found, weights above the largest read so far, doubling, are read
// up to (not including) `beyond_until_bytes`, and kept with the others in decreasing size.
void find_cache_level(double reported_bytes, double largest_weight_bytes, double dram_bandwidth,
                      const std::function<RoofMeasurement::CacheRead(double weight_bytes)>& read,
                      RoofMeasurement& measurement, double beyond_until_bytes = 0);

// This machine's last-level cache in bytes (sysfs, else sysconf), 0 when unknown.
double host_cache_bytes();

}  // namespace decodelab
