// Which operand bytes an op finds in a cache, by reuse distance: an LRU stack of the
// memory ranges touched so far (keyed by start address, sized by the bytes last touched
// there). An access is resident when the distinct bytes touched since its last use, plus
// its own, fit in the capacity; partly resident when only some of it fits; cold the first
// time. Writes count like reads: a write-back cache keeps what was just written.
//
// Non-obvious choice: the key is the start address of the view, not the allocation, so
// the layers of a KV cache or the rows of an activation buffer are tracked apart exactly
// as the engine addresses them; a view that starts where another did takes its place.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "engine/dry_run_backend.h"

namespace decodelab {

class CacheResidency {
 public:
  explicit CacheResidency(double capacity_bytes) : capacity_(capacity_bytes) {}

  // Touches the operands in order; returns how many of their bytes were resident.
  double touch(const std::vector<OperandAccess>& operands);
  // One access: the resident part of its bytes, then it becomes the most recent.
  double touch(uintptr_t address, double bytes);

 private:
  struct Entry {
    uintptr_t address = 0;
    double bytes = 0;
  };
  double capacity_;
  std::list<Entry> recent_;  // most recent first
  std::unordered_map<uintptr_t, std::list<Entry>::iterator> where_;
};

}  // namespace decodelab
