// Parsing and printing byte sizes (see byte_size.h for the suffix convention).
#include "lab/scenario/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace decodelab {

std::optional<int64_t> parse_byte_size(std::string_view text) {
  const std::string input(text);
  char* end = nullptr;
  const double number = std::strtod(input.c_str(), &end);
  if (end == input.c_str() || !std::isfinite(number) || number < 0) return std::nullopt;
  std::string suffix(end);
  while (!suffix.empty() && suffix.front() == ' ') suffix.erase(0, 1);
  static const std::pair<const char*, double> kUnits[] = {{"", 1.0},
                                                          {"B", 1.0},
                                                          {"KiB", 1024.0},
                                                          {"MiB", 1048576.0},
                                                          {"GiB", 1073741824.0},
                                                          {"TiB", 1099511627776.0},
                                                          {"kB", 1e3},
                                                          {"KB", 1e3},
                                                          {"MB", 1e6},
                                                          {"GB", 1e9},
                                                          {"TB", 1e12},
                                                          {"K", 1024.0},
                                                          {"M", 1048576.0},
                                                          {"G", 1073741824.0},
                                                          {"T", 1099511627776.0}};
  for (const auto& [unit, scale] : kUnits) {
    if (suffix == unit) {
      const double bytes = std::round(number * scale);
      if (bytes > 9.2e18) return std::nullopt;
      return static_cast<int64_t>(bytes);
    }
  }
  return std::nullopt;
}

std::string format_bytes(int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (std::fabs(value) >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, "%.2f %s", value, kUnits[unit]);
  }
  return text;
}

}  // namespace decodelab
