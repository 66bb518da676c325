// Strict YAML field reading. Numbers must be plain scalars: a quoted "8" is a string in
// YAML, and accepting it would hide a typo as often as it helps.
#include "lab/scenario/yaml_fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "engine/base/errors.h"

namespace decodelab {

void YamlSource::fail(int line, const std::string& key, const std::string& problem) const {
  // A key set with --set (or anything under it) has no line in the file.
  for (const auto& [overridden, value] : overrides) {
    if (key == overridden || key.rfind(overridden + ".", 0) == 0 || key.rfind(overridden + "[", 0) == 0) {
      throw InputError(file.string(), 0, key, problem + " (from --set " + overridden + "=" + value + ")");
    }
  }
  throw InputError(file.string(), line, key, problem);
}

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and adjacent
// transpositions ("modle" -> "model" is one edit).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string joined_names(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) {
    if (!text.empty()) text += ", ";
    text += name;
  }
  return text;
}

bool is_plain_scalar(const YAML::Node& node) { return node && node.IsScalar() && node.Tag() != "!"; }

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(1, word.size() / 3) + 1;  // ~1 typo per 3 letters, at least 1
  for (const std::string& candidate : candidates) {
    const size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  if (!best.empty() || word.size() < 3) return best;
  // A key missing a word ("kv_cache" for "no_kv_cache"): the one candidate that contains it.
  for (const std::string& candidate : candidates) {
    if (candidate.find(word) == std::string::npos) continue;
    if (!best.empty()) return "";  // ambiguous
    best = candidate;
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string match = closest_match(word, candidates);
  return match.empty() ? "" : " (did you mean '" + match + "'?)";
}

std::string describe_node(const YAML::Node& node) {
  if (!node || node.IsNull()) return "nothing";
  if (node.IsSequence()) return node.size() == 0 ? "an empty list" : "a list";
  if (node.IsMap()) return "a mapping";
  if (node.Tag() == "!") return "the quoted text \"" + node.Scalar() + "\"";
  return "'" + node.Scalar() + "'";
}

int line_of(const YAML::Node& node, int fallback) {
  if (!node) return fallback;
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? fallback : mark.line + 1;
}

void YamlField::expected(const std::string& what) const { fail("expected " + what + ", got " + describe_node(node)); }

int64_t YamlField::integer(int64_t min, int64_t max) const {
  std::string range = "an integer";
  if (max == INT64_MAX || max == INT32_MAX) {
    range += " ≥ " + std::to_string(min);
  } else {
    range += " in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  }
  if (!is_plain_scalar(node)) expected(range);
  const std::string& text = node.Scalar();
  int64_t value = 0;
  const char* begin = text.data() + (!text.empty() && text[0] == '+' ? 1 : 0);
  const auto [end, error] = std::from_chars(begin, text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < min || value > max) expected(range);
  return value;
}

uint64_t YamlField::unsigned_integer() const {
  const char* what = "an integer in [0, 2^64)";
  if (!is_plain_scalar(node)) expected(what);
  const std::string& text = node.Scalar();
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) expected(what);
  return value;
}

double YamlField::number(double min) const {
  const std::string what = "a number ≥ " + YAML::Node(min).Scalar();
  if (!is_plain_scalar(node)) expected(what);
  const std::string& text = node.Scalar();
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || value < min) expected(what);
  return value;
}

bool YamlField::boolean() const {
  if (is_plain_scalar(node)) {
    const std::string& text = node.Scalar();
    if (text == "true" || text == "True" || text == "TRUE") return true;
    if (text == "false" || text == "False" || text == "FALSE") return false;
  }
  expected("true or false");
}

std::string YamlField::text() const {
  if (is_null()) return "";
  if (!node.IsScalar()) expected("text");
  return node.Scalar();
}

std::string YamlField::choice(const std::vector<std::string>& choices) const {
  std::string listing;
  for (const std::string& choice : choices) listing += (listing.empty() ? "" : " | ") + choice;
  if (!is_plain_scalar(node)) expected("one of " + listing);
  const std::string& text = node.Scalar();
  if (std::find(choices.begin(), choices.end(), text) == choices.end()) {
    fail("expected one of " + listing + ", got '" + text + "'" + did_you_mean(text, choices));
  }
  return text;
}

YamlMapping::YamlMapping(const YamlSource& source, const YAML::Node& node, std::string path, int line,
                         std::vector<std::string> allowed_keys)
    : source_(&source), path_(std::move(path)), line_(line) {
  if (!node || node.IsNull()) return;  // an empty mapping
  if (!node.IsMap()) {
    source.fail(
        line_, path_, "expected a mapping of " + [&] {
          std::string keys;
          for (const std::string& key : allowed_keys) keys += (keys.empty() ? "" : ", ") + key;
          return keys;
        }() + ", got " + describe_node(node));
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    // Copies, not references: the iterator yields a temporary key/value pair.
    const YAML::Node key_node = it->first;
    const YAML::Node value_node = it->second;
    const int key_line = line_of(key_node, line_);
    if (!key_node.IsScalar()) source.fail(key_line, path_, "keys must be plain names, got " + describe_node(key_node));
    const std::string key = key_node.Scalar();
    if (std::find(allowed_keys.begin(), allowed_keys.end(), key) == allowed_keys.end()) {
      const std::string hint = did_you_mean(key, allowed_keys);
      source.fail(key_line, key_path(key),
                  "unknown key" + (hint.empty() ? " (expected one of " + joined_names(allowed_keys) + ")" : hint));
    }
    if (has(key)) source.fail(key_line, key_path(key), "duplicate key");
    fields_.push_back(YamlField{source_, key_path(key), value_node, key_line});
  }
}

YamlMapping YamlMapping::of(const YamlField& field, std::vector<std::string> allowed_keys) {
  return YamlMapping(*field.source, field.node, field.key, field.line, std::move(allowed_keys));
}

bool YamlMapping::has(const std::string& key) const { return optional(key).has_value(); }

std::optional<YamlField> YamlMapping::optional(const std::string& key) const {
  const std::string full = key_path(key);
  for (const YamlField& field : fields_) {
    if (field.key == full) return field;
  }
  return std::nullopt;
}

YamlField YamlMapping::required(const std::string& key, const std::string& expected) const {
  if (auto field = optional(key)) return *field;
  source_->fail(line_, key_path(key), "missing (expected " + expected + ")");
}

}  // namespace decodelab
