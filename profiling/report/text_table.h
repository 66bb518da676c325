// A console table: each column sized to its widest cell, the first column (names)
// left-aligned and the numbers right-aligned, so a 120-column terminal shows every table
// without wrapping. Widths count UTF-8 code points, not bytes (µ is two bytes).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace decodelab {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t rows() const { return rows_.size() - 1; }

  std::string str(const std::string& indent = "  ") const {
    std::vector<size_t> widths(rows_.front().size(), 0);
    for (const auto& row : rows_) {
      for (size_t c = 0; c < row.size() && c < widths.size(); ++c) widths[c] = std::max(widths[c], display_width(row[c]));
    }
    std::string out;
    for (size_t r = 0; r < rows_.size(); ++r) {
      std::string line = indent;
      for (size_t c = 0; c < rows_[r].size() && c < widths.size(); ++c) {
        const std::string& cell = rows_[r][c];
        const std::string pad(widths[c] - display_width(cell), ' ');
        line += c == 0 ? cell + pad : pad + cell;
        if (c + 1 < rows_[r].size()) line += "  ";
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    return out;
  }

  static size_t display_width(const std::string& text) {
    return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

// `text` cut to `width` characters with "..." at the end (long kernel names in tables).
inline std::string truncated(const std::string& text, size_t width) {
  if (TextTable::display_width(text) <= width || width < 4) return text;
  return text.substr(0, width - 3) + "...";
}

}  // namespace decodelab
