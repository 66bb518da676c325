// The LRU stack walk. The walk stops once the bytes above an entry exceed the capacity
// (it cannot be resident then), so its cost is bounded by what fits in the cache.
#include "profiling/cache_residency.h"

#include <algorithm>

namespace decodelab {

double CacheResidency::touch(const std::vector<OperandAccess>& operands) {
  double resident = 0;
  for (const OperandAccess& operand : operands) resident += touch(operand.address, static_cast<double>(operand.bytes));
  return resident;
}

double CacheResidency::touch(uintptr_t address, double bytes) {
  if (bytes <= 0) return 0;
  double resident = 0;
  auto found = where_.find(address);
  if (found != where_.end()) {
    double above = 0;  // distinct bytes touched since this range's last use
    for (auto entry = recent_.begin(); entry != found->second && above <= capacity_; ++entry) above += entry->bytes;
    // Of its bytes, those within the capacity below what came after it are still there.
    const double cached = std::min(found->second->bytes, bytes);
    resident = std::clamp(capacity_ - above, 0.0, cached);
    recent_.erase(found->second);
  }
  recent_.push_front({address, bytes});
  where_[address] = recent_.begin();
  return resident;
}

}  // namespace decodelab
