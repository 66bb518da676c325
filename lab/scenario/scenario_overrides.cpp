// --set key.path=value: edits the scenario document before validation, so an override
// is checked exactly like the file's own keys; an empty value removes the key, and setting
// one of two keys that exclude each other (run.repeats or run.min/max_repeats,
// workload.prompt_tokens or workload.prompt_ids) removes the other, as an override
// replaces what the file said. The walk rebinds with Node::reset(),
// because assigning one yaml-cpp Node to another would overwrite the tree being walked.
#include <string>
#include <vector>

#include "engine/base/errors.h"
#include "lab/scenario/scenario.h"
#include "lab/scenario/yaml_fields.h"

namespace decodelab {

namespace {

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    const size_t dot = key.find('.', begin);
    parts.push_back(key.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin));
    if (dot == std::string::npos) return parts;
    begin = dot + 1;
  }
}

// Keys of one mapping that exclude each other: setting a key of one side removes the other side's.
struct ExclusiveKeys {
  const char* mapping;
  std::vector<std::string> one;
  std::vector<std::string> other;
};

const std::vector<ExclusiveKeys>& exclusive_keys() {
  static const std::vector<ExclusiveKeys> table = {
      {"run", {"repeats"}, {"min_repeats", "max_repeats"}},
      {"workload", {"prompt_tokens"}, {"prompt_ids"}},
  };
  return table;
}

bool contains(const std::vector<std::string>& keys, const std::string& key) {
  for (const std::string& each : keys) {
    if (each == key) return true;
  }
  return false;
}

// Removes, from `mapping` (the node `path` names), the keys that `key` excludes.
void remove_excluded_keys(YAML::Node& mapping, const std::string& path, const std::string& key) {
  for (const ExclusiveKeys& keys : exclusive_keys()) {
    if (path != keys.mapping) continue;
    const std::vector<std::string>* excluded = contains(keys.one, key) ? &keys.other
                                               : contains(keys.other, key) ? &keys.one
                                                                           : nullptr;
    if (excluded == nullptr) continue;
    for (const std::string& each : *excluded) mapping.remove(each);
  }
}

bool is_boolean(const YAML::Node& node) {
  if (!node.IsScalar() || node.Tag() == "!") return false;
  const std::string& text = node.Scalar();
  return text == "true" || text == "false" || text == "True" || text == "False" || text == "TRUE" || text == "FALSE";
}

}  // namespace

ScenarioOverride parse_override(const std::string& assignment) {
  const size_t equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw InputError("--set", 0, assignment, "expected key.path=value, e.g. workload.batch_size=4");
  }
  ScenarioOverride result{assignment.substr(0, equals), assignment.substr(equals + 1)};
  for (const std::string& part : split_key(result.key)) {
    if (part.empty()) throw InputError("--set", 0, result.key, "expected a dotted key such as bugs.host_sync");
  }
  return result;
}

void apply_override(YAML::Node& document, const ScenarioOverride& override_value, const std::filesystem::path& file) {
  YAML::Node value;
  try {
    value = YAML::Load(override_value.value);
  } catch (const YAML::ParserException& error) {
    throw InputError(file.string(), 0, override_value.key,
                     "--set value '" + override_value.value + "' is not valid YAML: " + error.msg);
  }
  if (!document || document.IsNull()) document = YAML::Node(YAML::NodeType::Map);
  if (!document.IsMap()) throw InputError(file.string(), 1, "", "--set needs the scenario to be a mapping");

  const std::vector<std::string> parts = split_key(override_value.key);
  YAML::Node current;
  current.reset(document);
  std::string walked;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    walked += (walked.empty() ? "" : ".") + parts[i];
    YAML::Node child = current[parts[i]];
    // Absent or null becomes a mapping; so does a bug's true/false, so that
    // --set bugs.host_sync.per=layer means {per: layer} whatever the file said.
    if (!child || child.IsNull() || is_boolean(child)) {
      current[parts[i]] = YAML::Node(YAML::NodeType::Map);
      child.reset(current[parts[i]]);
    } else if (!child.IsMap()) {
      throw InputError(file.string(), line_of(child), override_value.key,
                       "cannot set it: " + walked + " is " + describe_node(child) +
                           ", not a mapping (set the whole value instead, e.g. --set " + walked + "={...})");
    }
    current.reset(child);
  }
  if (override_value.value.empty()) {
    current.remove(parts.back());  // "key=" removes the key (e.g. prompt_tokens before prompt_ids)
  } else {
    remove_excluded_keys(current, walked, parts.back());
    current[parts.back()] = value;
  }
}

}  // namespace decodelab
