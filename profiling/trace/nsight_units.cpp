// Number and unit parsing for Nsight exports. Decimal prefixes for bytes follow the tools
// (Kbyte = 1000 bytes); the "i" forms (KiB, Kibyte) are binary.
#include "profiling/trace/nsight_units.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

namespace decodelab {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Removes thousands separators from the integer part, checking their grouping.
bool strip_thousands(std::string_view text, std::string& out) {
  size_t position = 0;
  if (position < text.size() && (text[position] == '-' || text[position] == '+')) out += text[position++];
  size_t integer_end = position;
  while (integer_end < text.size() && (is_digit(text[integer_end]) || text[integer_end] == ',')) ++integer_end;
  const std::string_view integer = text.substr(position, integer_end - position);
  if (integer.find(',') != std::string_view::npos) {
    size_t group_start = 0;
    bool first = true;
    while (group_start <= integer.size()) {
      const size_t comma = integer.find(',', group_start);
      const size_t length = (comma == std::string_view::npos ? integer.size() : comma) - group_start;
      if (first ? (length < 1 || length > 3) : length != 3) return false;
      first = false;
      if (comma == std::string_view::npos) break;
      group_start = comma + 1;
    }
    for (char c : integer) {
      if (c != ',') out += c;
    }
  } else {
    out.append(integer);
  }
  out.append(text.substr(integer_end));
  return true;
}

struct NamedScale {
  const char* name;
  double scale;
};

std::optional<double> lookup(std::string_view unit, const NamedScale* begin, const NamedScale* end) {
  for (const NamedScale* entry = begin; entry != end; ++entry) {
    if (unit == entry->name) return entry->scale;
  }
  return std::nullopt;
}

constexpr std::array<NamedScale, 8> kTimeUnits = {{{"second", 1.0}, {"msecond", 1e-3}, {"usecond", 1e-6}, {"nsecond", 1e-9},
                                                   {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}}};
constexpr std::array<NamedScale, 17> kByteUnits = {{{"byte", 1.0}, {"Kbyte", 1e3}, {"Mbyte", 1e6}, {"Gbyte", 1e9}, {"Tbyte", 1e12},
                                                    {"B", 1.0}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
                                                    {"Kibyte", 1024.0}, {"Mibyte", 1048576.0}, {"Gibyte", 1073741824.0},
                                                    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
                                                    {"bytes", 1.0}}};
constexpr std::array<const char*, 12> kCountUnits = {"inst", "sector", "request", "warp", "thread", "block",
                                                     "op", "ops", "flop", "cycle", "instruction", "wavefront"};

std::optional<double> time_scale(std::string_view unit) { return lookup(unit, kTimeUnits.begin(), kTimeUnits.end()); }
std::optional<double> byte_scale(std::string_view unit) { return lookup(unit, kByteUnits.begin(), kByteUnits.end()); }

std::optional<double> count_scale(std::string_view unit) {
  if (unit.empty()) return 1.0;
  if (unit.size() > 1 && (unit[0] == 'K' || unit[0] == 'M' || unit[0] == 'G')) {
    const std::string_view rest = unit.substr(1);
    for (const char* base : kCountUnits) {
      if (rest == base) return unit[0] == 'K' ? 1e3 : unit[0] == 'M' ? 1e6 : 1e9;
    }
  }
  for (const char* base : kCountUnits) {
    if (unit == base) return 1.0;
  }
  return std::nullopt;
}

}  // namespace

ParsedNumber parse_export_number(std::string_view text) {
  text = trim(text);
  if (text.empty() || equals_ignoring_case(text, "n/a")) return {NumberStatus::Missing, 0};
  std::string plain;
  if (!strip_thousands(text, plain)) return {NumberStatus::Malformed, 0};
  const char* begin = plain.data();
  const char* end = plain.data() + plain.size();
  if (begin != end && *begin == '+') ++begin;
  double value = 0;
  const auto [stop, error] = std::from_chars(begin, end, value);
  if (error != std::errc() || stop != end || !std::isfinite(value)) return {NumberStatus::Malformed, 0};
  return {NumberStatus::Value, value};
}

const char* quantity_name(Quantity quantity) {
  switch (quantity) {
    case Quantity::Time: return "a time (nsecond, usecond, msecond, second)";
    case Quantity::Bytes: return "a byte count (byte, Kbyte, Mbyte, Gbyte)";
    case Quantity::ByteRate: return "a byte rate (byte/second, Gbyte/second, ...)";
    case Quantity::Count: return "a count (inst, sector, request, ...)";
    case Quantity::Percent: return "a percentage (%)";
    case Quantity::Frequency: return "a frequency (cycle/second, cycle/nsecond, Ghz, ...)";
  }
  return "a value";
}

std::optional<UnitScale> ncu_unit(std::string_view unit) {
  unit = trim(unit);
  if (unit == "%") return UnitScale{Quantity::Percent, 1.0};
  if (const auto scale = time_scale(unit)) return UnitScale{Quantity::Time, *scale};
  if (const auto scale = byte_scale(unit)) return UnitScale{Quantity::Bytes, *scale};
  static constexpr std::array<NamedScale, 4> hertz = {{{"hz", 1.0}, {"khz", 1e3}, {"mhz", 1e6}, {"ghz", 1e9}}};
  for (const NamedScale& entry : hertz) {
    if (equals_ignoring_case(unit, entry.name)) return UnitScale{Quantity::Frequency, entry.scale};
  }
  if (const size_t slash = unit.find('/'); slash != std::string_view::npos) {
    if (unit.substr(0, slash) == "cycle") {
      if (const auto per = time_scale(unit.substr(slash + 1))) return UnitScale{Quantity::Frequency, 1.0 / *per};
      return std::nullopt;
    }
    const auto bytes = byte_scale(unit.substr(0, slash));
    const auto per = time_scale(unit.substr(slash + 1));
    if (bytes && per) return UnitScale{Quantity::ByteRate, *bytes / *per};
    return std::nullopt;
  }
  if (const auto scale = count_scale(unit)) return UnitScale{Quantity::Count, *scale};
  return std::nullopt;
}

HeaderUnit split_header_unit(std::string_view header) {
  header = trim(header);
  HeaderUnit result;
  if (!header.empty() && header.back() == ')') {
    const size_t open = header.rfind('(');
    if (open != std::string_view::npos) {
      result.name = std::string(trim(header.substr(0, open)));
      result.unit = std::string(trim(header.substr(open + 1, header.size() - open - 2)));
      return result;
    }
  }
  result.name = std::string(header);
  return result;
}

std::optional<double> nsys_time_unit_to_ns(std::string_view unit) {
  static constexpr std::array<NamedScale, 8> units = {{{"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9},
                                                       {"nsec", 1.0}, {"usec", 1e3}, {"msec", 1e6}, {"sec", 1e9}}};
  if (unit.empty()) return 1.0;  // nsys times are nanoseconds unless the header says otherwise
  return lookup(unit, units.begin(), units.end());
}

std::optional<double> nsys_byte_unit_to_bytes(std::string_view unit) {
  if (unit.empty()) return 1.0;
  return byte_scale(unit);
}

}  // namespace decodelab
