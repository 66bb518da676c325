// Label widths and greedy placement for the SVG charts (see svg_labels.h).
#include "profiling/report/svg_labels.h"

#include <algorithm>
#include <cstdio>

namespace decodelab {

namespace {

// Advance width in em of one character in a wide sans-serif (DejaVu Sans, rounded up).
double advance_em(char32_t c) {
  if (c == ' ' || c == '.' || c == ',' || c == ':' || c == ';' || c == '\'' || c == '|' || c == '!' || c == 0xB7) return 0.34;
  if (c == 'i' || c == 'j' || c == 'l') return 0.30;
  if (c == 'f' || c == 't' || c == 'r' || c == '(' || c == ')' || c == '[' || c == ']' || c == '/' || c == '-') return 0.42;
  if (c == 'm' || c == 'w' || c == 'M' || c == 'W' || c == '%' || c == 0x2014 /* — */) return 1.0;
  if (c == 0x2192 /* → */ || c == 0x00D7 /* × */ || c == 0x2212 /* − */) return 0.86;
  if (c >= 'A' && c <= 'Z') return 0.78;
  return 0.64;  // lowercase, digits, most symbols
}

}  // namespace

FittedText fit_text(std::string_view text, double max_width, double font_px, double min_font_px, bool bold) {
  const double weight = bold ? 1.1 : 1.0;
  for (double px = font_px; px >= min_font_px; px -= 0.5) {
    if (text_width(text, px) * weight <= max_width) return {std::string(text), px, false};
  }
  std::string shown(text);
  while (!shown.empty() && text_width(shown + "\u2026", min_font_px) * weight > max_width) {
    while (!shown.empty() && (static_cast<unsigned char>(shown.back()) & 0xC0) == 0x80) shown.pop_back();  // continuation bytes
    if (!shown.empty()) shown.pop_back();  // then the lead byte (or an ASCII one)
  }
  while (!shown.empty() && shown.back() == ' ') shown.pop_back();
  return {shown + "\u2026", min_font_px, true};
}

double text_width(std::string_view text, double font_px) {
  double em = 0;
  for (size_t i = 0; i < text.size();) {  // one code point at a time
    const auto byte = static_cast<unsigned char>(text[i]);
    char32_t c = byte;
    size_t length = 1;
    if (byte >= 0xF0) {
      length = 4;
      c = byte & 0x07;
    } else if (byte >= 0xE0) {
      length = 3;
      c = byte & 0x0F;
    } else if (byte >= 0xC0) {
      length = 2;
      c = byte & 0x1F;
    }
    for (size_t k = 1; k < length && i + k < text.size(); ++k) c = (c << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    em += advance_em(c);
    i += length;
  }
  return em * font_px;
}

LabelBox text_box(double left, double baseline, std::string_view text, double font_px) {
  // Ascenders reach about 0.95 em above the baseline, descenders 0.25 em below.
  return {left, baseline - 0.95 * font_px, left + text_width(text, font_px), baseline + 0.25 * font_px};
}

std::string svg_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", value);
  return buffer;
}

double svg_wrapped_list(std::ostream& svg, double left, double baseline, double width, const std::string& heading,
                        const std::vector<SvgListItem>& items) {
  svg << "<text x=\"" << left << "\" y=\"" << svg_number(baseline)
      << "\" font-size=\"11\" fill=\"#374151\" font-weight=\"600\">" << heading << "</text>\n";
  std::string line, line_text;
  auto flush = [&] {
    if (line.empty()) return;
    baseline += 16;
    svg << "<text x=\"" << left + 10 << "\" y=\"" << svg_number(baseline) << "\" font-size=\"11\" fill=\"#374151\">"
        << line << "</text>\n";
    line.clear();
    line_text.clear();
  };
  for (const SvgListItem& item : items) {
    const std::string joined = line_text + (line_text.empty() ? "" : "; ") + item.text;
    if (!line.empty() && text_width(joined, 11) > width) flush();
    line += (line.empty() ? "" : "; ") + item.markup;
    line_text += (line_text.empty() ? "" : "; ") + item.text;
  }
  flush();
  return baseline + 22;
}

bool LabelPlacer::is_free(const LabelBox& box) const {
  return box.inside(bounds_) &&
         std::none_of(placed_.begin(), placed_.end(), [&](const LabelBox& other) { return box.overlaps(other); });
}

std::optional<std::pair<double, double>> LabelPlacer::place(double x, double y, std::string_view text, double font_px) {
  const double width = text_width(text, font_px);
  const double half = 0.35 * font_px;  // from the baseline to the text's middle
  for (const double gap : {9.0, 20.0}) {
    const std::pair<double, double> spots[] = {
        {x + gap, y + half},                 {x - gap - width, y + half},
        {x - width / 2, y - gap},            {x - width / 2, y + gap + 2 * half},
        {x + gap * 0.7, y - gap * 0.7},      {x + gap * 0.7, y + gap * 0.7 + 2 * half},
        {x - gap * 0.7 - width, y - gap * 0.7}, {x - gap * 0.7 - width, y + gap * 0.7 + 2 * half}};
    for (const auto& [left, baseline] : spots) {
      const LabelBox box = text_box(left, baseline, text, font_px);
      if (!is_free(box)) continue;
      placed_.push_back(box);
      return std::pair{left, baseline};
    }
  }
  return std::nullopt;
}

}  // namespace decodelab
