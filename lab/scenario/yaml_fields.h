// Strict, line-aware reading of YAML mappings for scenarios and model files: every
// problem becomes an InputError naming the file, the 1-based line, the dotted key and
// what was expected. Keys set on the command line (--set) have no line in the file,
// so their errors say so instead of pointing at a line that does not hold them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace decodelab {

// Where the document came from; which dotted keys were overridden from the command line.
struct YamlSource {
  std::filesystem::path file;
  std::map<std::string, std::string> overrides;  // dotted key -> value as given: "workload.batch_size" -> "4"

  [[noreturn]] void fail(int line, const std::string& key, const std::string& problem) const;
};

// The closest candidate within a small edit distance (a transposition counts as one
// edit), else the one candidate that contains the word, or "" (for "did you mean").
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);
// " (did you mean 'x'?)" or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);
// How a node reads in an error message: 'text', the quoted text "8", a list, an empty
// list, a mapping, nothing.
std::string describe_node(const YAML::Node& node);

// One key's value with the means to complain about it.
struct YamlField {
  const YamlSource* source = nullptr;
  std::string key;  // dotted path: "workload.batch_size"
  YAML::Node node;
  int line = 0;  // 1-based; 0 when unknown

  [[noreturn]] void fail(const std::string& problem) const { source->fail(line, key, problem); }
  [[noreturn]] void expected(const std::string& what) const;  // "expected <what>, got 'x'"

  int64_t integer(int64_t min, int64_t max) const;  // plain integer scalar within [min, max]
  uint64_t unsigned_integer() const;
  double number(double min) const;  // finite, ≥ min
  bool boolean() const;
  std::string text() const;  // any scalar (null reads as "")
  std::string choice(const std::vector<std::string>& choices) const;
  bool is_null() const { return !node || node.IsNull(); }
};

// A mapping whose keys were all checked against the allowed set (unknown keys get a
// "did you mean", or the list of allowed keys; duplicates are refused), read field by field.
class YamlMapping {
 public:
  YamlMapping(const YamlSource& source, const YAML::Node& node, std::string path, int line,
              std::vector<std::string> allowed_keys);
  // The mapping a field holds (a null field reads as an empty mapping).
  static YamlMapping of(const YamlField& field, std::vector<std::string> allowed_keys);

  bool has(const std::string& key) const;
  std::optional<YamlField> optional(const std::string& key) const;
  YamlField required(const std::string& key, const std::string& expected) const;
  const std::string& path() const { return path_; }
  int line() const { return line_; }
  const YamlSource& source() const { return *source_; }
  std::string key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

 private:
  const YamlSource* source_;
  std::string path_;
  int line_;
  std::vector<YamlField> fields_;
};

// 1-based line of a node's mark, or `fallback` when the node has none.
int line_of(const YAML::Node& node, int fallback = 0);

}  // namespace decodelab
