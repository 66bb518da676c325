// Byte sizes as people write them: "8GiB", "512MiB", "2.5GB", "1000000" (plain bytes).
// Binary suffixes (KiB, MiB, GiB, TiB) are powers of 1024; decimal ones (kB, MB, GB, TB)
// powers of 1000, as storage vendors and `ls --si` use them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace decodelab {

std::optional<int64_t> parse_byte_size(std::string_view text);
// "1.50 GiB", "512.0 MiB", "900 B".
std::string format_bytes(int64_t bytes);

}  // namespace decodelab
