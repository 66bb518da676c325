// What the dry-run device (engine/dry_run_backend.h) records of each op's operands: plain
// data, apart from the device itself, so that what reads it (profiling's cache residency)
// knows no Backend.
#pragma once

#include <cstdint>

namespace decodelab {

// One operand of one op: where it starts and how many bytes it spans logically
// (elements × dtype size, whatever the strides).
struct OperandAccess {
  uintptr_t address = 0;
  int64_t bytes = 0;
  bool written = false;
};

}  // namespace decodelab
