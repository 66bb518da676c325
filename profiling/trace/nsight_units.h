// Numbers and units as Nsight Compute and Nsight Systems print them: values with
// thousands separators ("1,234,567.5"), "n/a" for a metric the GPU cannot collect, and
// unit names — ncu's per-value units ("nsecond", "Kbyte", "%", "inst", "Gbyte/second")
// and nsys's units in column headers ("Duration (us)", "Bytes (MB)").
// Non-obvious choice: a comma is accepted only as a thousands separator (groups of
// exactly three digits), so "9,00" from a decimal-comma locale is refused, not read as 900.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace decodelab {

enum class NumberStatus : uint8_t { Value, Missing, Malformed };

struct ParsedNumber {
  NumberStatus status = NumberStatus::Missing;
  double value = 0;
};

// "" and "n/a" (any case) are Missing; anything else must be a whole number.
ParsedNumber parse_export_number(std::string_view text);

// What a unit measures; values are converted to the base unit of their quantity.
enum class Quantity : uint8_t { Time, Bytes, ByteRate, Count, Percent, Frequency };
const char* quantity_name(Quantity quantity);  // "a time", "a byte count", ...

struct UnitScale {
  Quantity quantity = Quantity::Count;
  double to_base = 1;  // multiply a value by this: seconds, bytes, bytes/s, counts, percent, hertz
};

// ncu units: second, msecond, usecond, nsecond (or s, ms, us, ns); byte, Kbyte, Mbyte,
// Gbyte, Tbyte (decimal, or KB, MB ..., KiB, MiB ... binary); "<bytes>/second"; %; and counts
// ("", inst, sector, request, warp, op, cycle ..., each with an optional K, M or G prefix);
// frequencies: hz, khz, mhz, ghz (any case, as the details page's "Ghz") or "cycle/<time>".
std::optional<UnitScale> ncu_unit(std::string_view unit);

// "Duration (us)" -> {"Duration", "us"}; "Name" -> {"Name", ""}.
struct HeaderUnit {
  std::string name;
  std::string unit;
};
HeaderUnit split_header_unit(std::string_view header);

// nsys header units: ns, us, ms, s (or nsec, usec, msec, sec) to nanoseconds; B, byte,
// KB, MB, GB (decimal), KiB, MiB, GiB (binary) to bytes. nullopt for an unknown unit.
std::optional<double> nsys_time_unit_to_ns(std::string_view unit);
std::optional<double> nsys_byte_unit_to_bytes(std::string_view unit);

}  // namespace decodelab
