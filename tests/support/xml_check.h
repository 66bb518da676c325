// A small well-formedness checker for the SVG and HTML the printers write: every tag
// closes in order, attributes are quoted, entities are known. HTML void elements (meta,
// br, ...) may stay open. Returns "" or the first problem with its byte offset. And a count
// of a needle in a page.
#pragma once

#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace decodelab::testing {

inline std::string xml_problem(std::string_view text, bool html = false) {
  static const std::set<std::string> void_elements = {"meta", "br", "img", "input", "link", "hr"};
  std::vector<std::string> open;
  auto fail = [](size_t at, const std::string& what) { return "at byte " + std::to_string(at) + ": " + what; };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '&') {
      const size_t end = text.find(';', i);
      if (end == std::string_view::npos || end - i > 8) return fail(i, "unterminated entity");
      const std::string_view entity = text.substr(i + 1, end - i - 1);
      if (entity != "amp" && entity != "lt" && entity != "gt" && entity != "quot" && entity != "#39") {
        return fail(i, "unknown entity &" + std::string(entity) + ";");
      }
      continue;
    }
    if (c == '>') return fail(i, "stray '>'");
    if (c != '<') continue;
    if (text.substr(i, 4) == "<!--") {
      const size_t end = text.find("-->", i);
      if (end == std::string_view::npos) return fail(i, "unterminated comment");
      i = end + 2;
      continue;
    }
    if (text.substr(i, 2) == "<!" || text.substr(i, 2) == "<?") {  // doctype, declaration
      i = text.find('>', i);
      if (i == std::string_view::npos) return fail(i, "unterminated declaration");
      continue;
    }
    const bool closing = i + 1 < text.size() && text[i + 1] == '/';
    size_t at = i + (closing ? 2 : 1);
    size_t name_end = at;
    while (name_end < text.size() && (std::isalnum(static_cast<unsigned char>(text[name_end])) || text[name_end] == '-' ||
                                      text[name_end] == ':')) {
      ++name_end;
    }
    const std::string name(text.substr(at, name_end - at));
    if (name.empty()) return fail(i, "a tag without a name");
    at = name_end;
    bool self_closing = false;
    for (;;) {  // attributes
      while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
      if (at >= text.size()) return fail(i, "unterminated tag <" + name);
      if (text[at] == '>') break;
      if (text.substr(at, 2) == "/>") {
        self_closing = true;
        ++at;
        break;
      }
      const size_t attribute = at;
      while (at < text.size() && text[at] != '=' && text[at] != '>' && !std::isspace(static_cast<unsigned char>(text[at]))) ++at;
      if (at >= text.size() || text[at] != '=') return fail(attribute, "attribute without a value in <" + name);
      ++at;
      if (at >= text.size() || (text[at] != '"' && text[at] != '\'')) return fail(at, "unquoted attribute in <" + name);
      const size_t close = text.find(text[at], at + 1);
      if (close == std::string_view::npos) return fail(at, "unterminated attribute in <" + name);
      if (text.substr(at + 1, close - at - 1).find('<') != std::string_view::npos) return fail(at, "'<' inside an attribute");
      at = close + 1;
    }
    i = at;
    if (closing) {
      if (open.empty() || open.back() != name) {
        return fail(at, "</" + name + "> closes " + (open.empty() ? std::string("nothing") : "<" + open.back() + ">"));
      }
      open.pop_back();
    } else if (!self_closing && !(html && void_elements.count(name))) {
      open.push_back(name);
      if (name == "style" || name == "script") {  // raw text up to the end tag
        const size_t end = text.find("</" + name, i);
        if (end == std::string_view::npos) return fail(i, "unterminated <" + name + ">");
        i = end - 1;
      }
    }
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return "";
}

// How many times `needle` occurs in `text` (overlapping occurrences counted).
inline size_t occurrences(std::string_view text, std::string_view needle) {
  size_t found = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) ++found;
  return found;
}

}  // namespace decodelab::testing
