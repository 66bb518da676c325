// The LRU stack walk. Each overlapped range's depth is found by walking from the most
// recent range and stops once the bytes above exceed the horizon (nothing is resident
// there), so the cost per access is bounded by what the cache can hold any of.
#include "profiling/model/cache_residency.h"

#include <algorithm>
#include <cmath>

namespace decodelab {

double CacheResidency::touch(const std::vector<OperandAccess>& operands) {
  double resident = 0;
  for (const OperandAccess& operand : operands) resident += touch(operand.address, static_cast<double>(operand.bytes));
  return resident;
}

double CacheResidency::bytes_above(Position entry) const {
  double above = 0;
  for (auto it = recent_.begin(); it != entry && above <= horizon_; ++it) above += static_cast<double>(it->end - it->address);
  return above;
}

void CacheResidency::insert(Position before, uintptr_t address, uintptr_t end) {
  by_address_[address] = recent_.insert(before, Entry{address, end});
}

double CacheResidency::touch(uintptr_t address, double bytes, double* seen) {
  if (seen) *seen = 0;
  if (bytes <= 0) return 0;
  const uintptr_t end = address + static_cast<uintptr_t>(std::ceil(bytes));
  // The ranges overlapping [address, end): from the last one starting at or before it.
  std::vector<Position> overlapped;
  auto it = by_address_.upper_bound(address);
  if (it != by_address_.begin() && std::prev(it)->second->end > address) --it;
  for (; it != by_address_.end() && it->first < end; ++it) overlapped.push_back(it->second);
  // Of each range's overlapped bytes, those within the capacity below what came after the
  // range are still there (depths taken before anything moves).
  double resident = 0;
  for (const Position entry : overlapped) {
    const double overlap = static_cast<double>(std::min(entry->end, end) - std::max(entry->address, address));
    const double above = bytes_above(entry);
    resident += cache_.resident_bytes(above, above + overlap);
    if (seen) *seen += overlap;
  }
  for (const Position entry : overlapped) {
    const Entry range = *entry;
    by_address_.erase(range.address);
    // What lies outside this access keeps the range's place in the order.
    if (range.address < address) insert(entry, range.address, address);
    if (range.end > end) insert(entry, end, range.end);
    recent_.erase(entry);
  }
  recent_.push_front(Entry{address, end});
  by_address_[address] = recent_.begin();
  return resident;
}

}  // namespace decodelab
