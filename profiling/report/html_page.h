// The frame of every HTML page decodelab writes — a run's or a comparison's report, its
// attribution page, the lab's index, a mystery's report, a sweep's page, collect's index:
// one stylesheet (page_stylesheet(), the only place the pages' CSS lives), the page's links
// to where it belongs, and tables that scroll inside their card instead of spilling out.
// Pages are self-contained: inline CSS, inline SVG, no script, font, image or other fetch.
#pragma once

#include <string>
#include <vector>

namespace decodelab {

struct PageLink {
  std::string href;  // relative to the page ("../index.html", "attribution.html")
  std::string text;
};

// The stylesheet every page embeds.
const std::string& page_stylesheet();

// A whole page: head (title, the stylesheet), a navigation line with `links` when given,
// then `body` (HTML, already escaped) inside <main>.
std::string html_page(const std::string& title, const std::string& body, const std::vector<PageLink>& links = {});

// A table (its HTML) in a box that scrolls sideways when the table is wider than the card.
std::string scrolling_table(const std::string& table);

}  // namespace decodelab
