// Label placement for the SVG charts (roofline, step timeline, sweep): how wide a label
// will be, and a greedy placer that puts each label in the first candidate spot around its
// anchor that stays inside the plot and hits nothing placed before it. A label with no
// free spot is left for the caller to list elsewhere (a legend under the chart).
//
// Non-obvious choice: widths are estimated per character from the advance widths of a
// wide sans-serif (DejaVu Sans, the usual fallback for system-ui on Linux), so that the
// estimate is an upper bound in narrower fonts too: a label placed by it never overlaps
// another in the browser, it only keeps a little more space free than needed.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace decodelab {

struct LabelBox {
  double left = 0, top = 0, right = 0, bottom = 0;
  bool overlaps(const LabelBox& other) const {
    return left < other.right && other.left < right && top < other.bottom && other.top < bottom;
  }
  bool inside(const LabelBox& bounds) const {
    return left >= bounds.left && right <= bounds.right && top >= bounds.top && bottom <= bounds.bottom;
  }
};

// Estimated width in px of `text` (UTF-8) at `font_px`.
double text_width(std::string_view text, double font_px);

// The box of a left-aligned label whose baseline starts at (left, baseline).
LabelBox text_box(double left, double baseline, std::string_view text, double font_px);

// A title fitted to `max_width` px: its font shrinks from `font_px` down to `min_font_px`,
// then its end is cut at a code point and ends in "…" (the caller keeps the whole text as
// the element's <title>, shown on hover). Bold text is about a tenth wider: `bold`.
struct FittedText {
  std::string text;
  double font_px = 0;
  bool cut = false;
};
FittedText fit_text(std::string_view text, double max_width, double font_px, double min_font_px, bool bold);

// A coordinate as the charts write it: one decimal ("12.0").
std::string svg_number(double value);

// Where labels with no room go: a list under the chart, a bold heading (markup) at
// `baseline`, then the items "; "-joined and wrapped at `width` px, drawn from `left` + 10.
// Returns the baseline for whatever follows, 22 px below the list.
struct SvgListItem {
  std::string text;    // plain, for the width
  std::string markup;  // what is drawn
};
double svg_wrapped_list(std::ostream& svg, double left, double baseline, double width, const std::string& heading,
                        const std::vector<SvgListItem>& items);

class LabelPlacer {
 public:
  explicit LabelPlacer(const LabelBox& bounds) : bounds_(bounds) {}
  // Something drawn that labels must keep off (a legend, a marker, another label).
  void block(const LabelBox& box) { placed_.push_back(box); }
  bool is_free(const LabelBox& box) const;
  // The baseline origin of a left-aligned label next to the anchor (x, y): right, left,
  // above, below, the diagonals, then the same farther out; nothing when every spot is taken.
  std::optional<std::pair<double, double>> place(double x, double y, std::string_view text, double font_px = 11);

 private:
  LabelBox bounds_;
  std::vector<LabelBox> placed_;
};

}  // namespace decodelab
