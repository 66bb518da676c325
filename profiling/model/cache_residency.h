// Which operand bytes an op finds in a cache, by reuse distance: an LRU stack of disjoint
// address ranges, each sized by the bytes last touched there. Each part of an access that
// overlaps a range touched before is at a reuse distance of the distinct bytes touched
// since that range's last use (plus its own place in the part); the cache's hit curve
// (CacheLevel::resident_bytes) says which share of the bytes at those distances is found
// resident: all within the capacity, then what was measured beyond it, or none for a cache
// known only by its capacity. Cold where nothing was touched before. Writes count like
// reads: a write-back cache keeps what was just written.
//
// Non-obvious choice: ranges are views, not allocations — an access covers [start, start
// + its logical bytes) — and a later access takes over exactly the bytes it overlaps,
// leaving the rest of an older range where it was in the order. So the layers of a KV
// cache or the rows of an activation buffer are tracked apart exactly as the engine
// addresses them, and a column slice of a fused projection's output (k and v after q)
// finds the bytes the matmul just wrote.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <utility>
#include <vector>

#include "engine/operand_access.h"
#include "profiling/device_spec.h"

namespace decodelab {

class CacheResidency {
 public:
  // Every byte within the capacity resident, none beyond.
  explicit CacheResidency(double capacity_bytes) : CacheResidency(CacheLevel{capacity_bytes, 0, "", {}}) {}
  explicit CacheResidency(CacheLevel cache) : cache_(std::move(cache)), horizon_(cache_.horizon()) {}

  // Touches the operands in order; returns how many of their bytes were resident.
  double touch(const std::vector<OperandAccess>& operands);
  // One access: the resident part of its bytes, then it becomes the most recent. With
  // `seen`, also how many of its bytes were touched before (resident or evicted since).
  double touch(uintptr_t address, double bytes, double* seen = nullptr);

 private:
  struct Entry {
    uintptr_t address = 0;
    uintptr_t end = 0;  // one past the range's last byte
  };
  using Position = std::list<Entry>::iterator;
  // Bytes of the ranges more recent than `entry` (the walk stops once past the horizon, the
  // distance past which nothing is resident).
  double bytes_above(Position entry) const;
  void insert(Position before, uintptr_t address, uintptr_t end);

  CacheLevel cache_;
  double horizon_;
  std::list<Entry> recent_;                  // most recent first
  std::map<uintptr_t, Position> by_address_;  // the same ranges by start address
};

}  // namespace decodelab
