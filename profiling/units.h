// Human-readable quantities for printers: seconds, bytes, rates, percentages, lists. The unit
// prefix is chosen per value (GB/s on a CPU, TB/s on an H200) with three significant digits.
#pragma once

#include <string>
#include <vector>

namespace decodelab {

std::string format_seconds(double seconds);          // "412 µs", "3.05 ms", "1.20 s"
std::string format_bytes(double bytes);              // "512 B", "1.50 MB", "3.20 GB"
std::string format_bandwidth(double bytes_per_s);    // "45.2 GB/s", "2.84 TB/s"
std::string format_flop_rate(double flops_per_s);    // "688 TFLOP/s", "91.4 GFLOP/s"
std::string format_flops(double flops);              // "1.10 TFLOP", "2.0 MFLOP"
std::string format_percent(double fraction);         // "70%", "0.4%"
std::string format_number(double value, int significant = 3);
// The formatted text of `value` with an explicit "+" when it is positive ("+412 µs").
std::string with_sign(double value, const std::string& formatted);
// Names in prose: "a, b, c" ("" for none).
std::string format_list(const std::vector<std::string>& items);

}  // namespace decodelab
