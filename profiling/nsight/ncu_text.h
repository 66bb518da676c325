// Text helpers shared by the Nsight Compute reading (ncu_reading.cpp) and its printers
// (ncu_report_print.cpp): a precision's slot in per-precision arrays, printf-style formatting
// and joining.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "profiling/nsight/ncu_reading.h"

namespace decodelab::ncu_text {

inline size_t slot(Precision precision) { return static_cast<size_t>(precision); }

template <typename... Args>
inline std::string ncu_format(const char* pattern, Args... args) {
  char buffer[320];
  std::snprintf(buffer, sizeof buffer, pattern, args...);
  return buffer;
}

inline std::string ncu_join(const std::vector<std::string>& items, const char* separator) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

}  // namespace decodelab::ncu_text
