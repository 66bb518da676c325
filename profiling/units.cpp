// Decimal prefixes (k, M, G, T), as datasheets quote bandwidth and FLOP/s.
#include "profiling/units.h"

#include <cmath>
#include <cstdio>

namespace decodelab {

std::string format_number(double value, int significant) {
  if (value == 0 || !std::isfinite(value)) return value == 0 ? "0" : "-";
  const int digits_before_point = static_cast<int>(std::floor(std::log10(std::fabs(value)))) + 1;
  const int decimals = significant - digits_before_point;
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals > 0 ? decimals : 0, value);
  return buffer;
}

namespace {

std::string with_prefix(double value, const char* unit) {
  static const char* const prefixes[] = {"", "k", "M", "G", "T", "P"};
  int prefix = 0;
  double scaled = value;
  while (std::fabs(scaled) >= 999.5 && prefix < 5) {
    scaled /= 1000.0;
    ++prefix;
  }
  return format_number(scaled) + " " + prefixes[prefix] + unit;
}

}  // namespace

std::string format_seconds(double seconds) {
  const double magnitude = std::fabs(seconds);
  if (magnitude == 0) return "0 s";
  if (magnitude < 1e-6) return format_number(seconds * 1e9) + " ns";
  if (magnitude < 1e-3) return format_number(seconds * 1e6) + " µs";
  if (magnitude < 1.0) return format_number(seconds * 1e3) + " ms";
  return format_number(seconds) + " s";
}

std::string format_bytes(double bytes) { return with_prefix(bytes, "B"); }
std::string format_bandwidth(double bytes_per_s) { return with_prefix(bytes_per_s, "B/s"); }
std::string format_flop_rate(double flops_per_s) { return with_prefix(flops_per_s, "FLOP/s"); }
std::string format_flops(double flops) { return with_prefix(flops, "FLOP"); }

std::string with_sign(double value, const std::string& formatted) { return value > 0 ? "+" + formatted : formatted; }

std::string format_percent(double fraction) {
  char buffer[32];
  const double percent = fraction * 100.0;
  if (percent != 0 && std::fabs(percent) < 0.05) return "<0.1%";
  std::snprintf(buffer, sizeof buffer, std::fabs(percent) < 1.0 ? "%.1f%%" : "%.0f%%", percent);
  return buffer;
}

std::string format_list(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

}  // namespace decodelab
