// config.json -> ModelConfig, for Llama checkpoints in the Hugging Face layout.
// Errors carry the line of the offending key, found by searching the text for it: JSON
// parsers keep no positions, and a line number is what a person needs to fix the file.
// Rope settings are read from `rope_theta` + `rope_scaling`, or from the newer
// `rope_parameters` object (which holds both) when a config has it.
#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/base/errors.h"
#include "engine/base/json_errors.h"
#include "engine/checkpoint/hf_checkpoint.h"

namespace decodelab {

namespace {

using nlohmann::json;

std::string describe_value(const json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return std::string(value.type_name()) + " " + text;
}

// Reads typed fields of one JSON object (the root, or a nested one such as rope_scaling).
class FieldReader {
 public:
  FieldReader(const std::string& file, const std::string& text, const json& object, std::string prefix,
              size_t search_from, int object_line)
      : file_(file),
        text_(text),
        object_(object),
        prefix_(std::move(prefix)),
        search_from_(search_from),
        object_line_(object_line) {}

  bool has(const char* key) const { return object_.contains(key) && !object_.at(key).is_null(); }

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw InputError(file_, line_of(key), prefix_ + key, problem);
  }

  int integer(const char* key, std::optional<int> fallback) const {
    if (!has(key)) {
      if (fallback) return *fallback;
      fail(key, "missing (expected a positive integer)");
    }
    const json& value = object_.at(key);
    if (!value.is_number_integer()) fail(key, "expected an integer, got " + describe_value(value));
    constexpr int64_t largest = std::numeric_limits<int>::max();
    const bool in_range = value.is_number_unsigned()
                              ? value.get<uint64_t>() >= 1 && value.get<uint64_t>() <= uint64_t{largest}
                              : value.get<int64_t>() >= 1 && value.get<int64_t>() <= largest;
    if (!in_range) fail(key, "expected a positive integer, got " + value.dump());
    return value.get<int>();
  }

  double number(const char* key, std::optional<double> fallback) const {
    if (!has(key)) {
      if (fallback) return *fallback;
      fail(key, "missing (expected a number)");
    }
    const json& value = object_.at(key);
    if (!value.is_number()) fail(key, "expected a number, got " + describe_value(value));
    return value.get<double>();
  }

  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& value = object_.at(key);
    if (!value.is_boolean()) fail(key, "expected true or false, got " + describe_value(value));
    return value.get<bool>();
  }

  std::optional<std::string> string(const char* key) const {
    if (!has(key)) return std::nullopt;
    const json& value = object_.at(key);
    if (!value.is_string()) fail(key, "expected a string, got " + describe_value(value));
    return value.get<std::string>();
  }

  // A nested object's reader; its keys are searched for after the parent key's position.
  FieldReader nested(const char* key) const {
    const json& value = object_.at(key);
    if (!value.is_object()) fail(key, "expected an object or null, got " + describe_value(value));
    return FieldReader(file_, text_, value, prefix_ + key + ".", key_position(key), line_of(key));
  }

  // 1-based line of `"key":` in the text; for a key that is not there, the line of the
  // object that should hold it (0 for the root).
  int line_of(const std::string& key) const {
    const size_t position = key_position(key);
    if (position == std::string::npos) return object_line_;
    return 1 + static_cast<int>(std::count(text_.begin(), text_.begin() + static_cast<ptrdiff_t>(position), '\n'));
  }

 private:
  size_t key_position(const std::string& key) const {
    if (search_from_ == std::string::npos) return std::string::npos;
    const std::string quoted = "\"" + key + "\"";
    for (size_t at = text_.find(quoted, search_from_); at != std::string::npos; at = text_.find(quoted, at + 1)) {
      const size_t colon = text_.find_first_not_of(" \t\r\n", at + quoted.size());
      if (colon != std::string::npos && text_[colon] == ':') return at;
    }
    return std::string::npos;
  }

  const std::string& file_;
  const std::string& text_;
  const json& object_;
  std::string prefix_;
  size_t search_from_;
  int object_line_;
};

// rope_type "llama3" fills the scaling; "default" (or no object) is plain RoPE.
RopeScaling read_rope_scaling(const FieldReader& rope) {
  RopeScaling scaling;
  std::optional<std::string> rope_type = rope.string("rope_type");
  const char* type_key = "rope_type";
  if (!rope_type) {
    rope_type = rope.string("type");  // the name older configs used
    type_key = "type";
  }
  if (!rope_type) rope.fail("rope_type", "missing (expected \"llama3\")");
  if (*rope_type == "default") return scaling;
  if (*rope_type != "llama3")
    rope.fail(type_key, "\"" + *rope_type + "\" is not supported (expected \"llama3\", or no rope scaling)");
  scaling.enabled = true;
  scaling.factor = rope.number("factor", std::nullopt);
  scaling.low_freq_factor = rope.number("low_freq_factor", std::nullopt);
  scaling.high_freq_factor = rope.number("high_freq_factor", std::nullopt);
  scaling.original_max_position_embeddings = rope.integer("original_max_position_embeddings", std::nullopt);
  return scaling;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw InputError(path.string(), 0, "", "cannot open (expected a Hugging Face config.json)");
  std::ostringstream buffer;
  buffer << stream.rdbuf();
  return buffer.str();
}

}  // namespace

bool is_hf_checkpoint_directory(const std::filesystem::path& directory) {
  std::error_code error;
  return std::filesystem::is_directory(directory, error) &&
         std::filesystem::is_regular_file(directory / "config.json", error);
}

ModelConfig read_hf_config(const std::filesystem::path& config_json) {
  const std::string file = config_json.string();
  const std::string text = read_text(config_json);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& error) {
    throw InputError(file, json_error_line(error, text), "", json_parse_problem(error, text.size()));
  }
  if (!root.is_object()) throw InputError(file, 0, "", "expected a JSON object of model settings");
  const FieldReader fields(file, text, root, "", 0, 0);

  if (const auto model_type = fields.string("model_type"); model_type && *model_type != "llama")
    fields.fail("model_type", "\"" + *model_type + "\" is not supported (expected \"llama\")");
  if (const auto activation = fields.string("hidden_act"); activation && *activation != "silu")
    fields.fail("hidden_act", "\"" + *activation + "\" is not supported (expected \"silu\")");
  for (const char* bias_key : {"attention_bias", "mlp_bias"}) {
    if (fields.boolean(bias_key, false)) fields.fail(bias_key, "bias tensors are not supported (expected false)");
  }

  ModelConfig config;
  config.name = std::filesystem::absolute(config_json).parent_path().filename().string();
  config.vocab_size = fields.integer("vocab_size", std::nullopt);
  config.hidden_size = fields.integer("hidden_size", std::nullopt);
  config.intermediate_size = fields.integer("intermediate_size", std::nullopt);
  config.num_hidden_layers = fields.integer("num_hidden_layers", std::nullopt);
  config.num_attention_heads = fields.integer("num_attention_heads", std::nullopt);
  config.num_key_value_heads = fields.integer("num_key_value_heads", config.num_attention_heads);
  // 0 asks finalize_and_validate() for hidden_size / num_attention_heads.
  config.head_dim = fields.has("head_dim") ? fields.integer("head_dim", std::nullopt) : 0;
  config.max_position_embeddings = fields.integer("max_position_embeddings", std::nullopt);
  config.rms_norm_eps = fields.number("rms_norm_eps", 1e-6);  // LlamaConfig's default
  config.tie_word_embeddings = fields.boolean("tie_word_embeddings", false);

  if (fields.has("rope_parameters")) {
    const FieldReader rope = fields.nested("rope_parameters");
    config.rope_theta = rope.number("rope_theta", fields.number("rope_theta", 10000.0));
    config.rope_scaling = read_rope_scaling(rope);
  } else {
    config.rope_theta = fields.number("rope_theta", 10000.0);
    if (fields.has("rope_scaling")) config.rope_scaling = read_rope_scaling(fields.nested("rope_scaling"));
  }

  if (const std::string problem = config.finalize_and_validate(); !problem.empty()) {
    // Problems start with the field they are about ("rope_scaling.factor must ...").
    const std::string key = problem.substr(0, problem.find(' '));
    const std::string leaf = key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1);
    throw InputError(file, fields.line_of(leaf), "", problem);
  }
  return config;
}

}  // namespace decodelab
