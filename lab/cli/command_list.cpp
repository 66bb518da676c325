// `decodelab list`: the scenarios (with descriptions), the catalogue models (parameters,
// weight bytes per dtype) and the device specs found under the data root. Scenarios are
// only read for their description here, not validated: one broken file should not hide
// the rest of the list (`decodelab run` says what is wrong with it).
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "lab/scenario/byte_size.h"
#include "lab/cli/commands.h"
#include "lab/scenario/model_catalog.h"
#include "lab/paths.h"

namespace decodelab {

namespace fs = std::filesystem;

namespace {

// "description" (or another text key) of a YAML file, or a note saying why not.
std::string text_key(const fs::path& file, const char* key) {
  try {
    const YAML::Node document = YAML::LoadFile(file.string());
    if (document.IsMap() && document[key] && document[key].IsScalar()) return document[key].Scalar();
    return "";
  } catch (const YAML::Exception& error) {
    return std::string("(unreadable: ") + error.what() + ")";
  }
}

// "; expected slowdown (from the course text): 2-4x" from `expected_slowdown: {min, max}`,
// or "" where the scenario states none (or states it unreadably: `run` reports that).
std::string expected_slowdown_text(const fs::path& file) {
  try {
    const YAML::Node document = YAML::LoadFile(file.string());
    const YAML::Node range = document.IsMap() ? document["expected_slowdown"] : YAML::Node();
    if (!range || !range.IsMap() || !range["min"] || !range["max"]) return "";
    return "; expected slowdown (from the course text): " + range["min"].as<std::string>() + "-" +
           range["max"].as<std::string>() + "x";
  } catch (const YAML::Exception&) {
    return "";
  }
}

std::vector<fs::path> yaml_files(const fs::path& folder, bool recursive) {
  std::vector<fs::path> files;
  std::error_code error;
  if (!fs::is_directory(folder, error)) return files;
  auto collect = [&files](const fs::directory_entry& entry) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") files.push_back(entry.path());
  };
  if (recursive) {
    for (const auto& entry : fs::recursive_directory_iterator(folder, error)) collect(entry);
  } else {
    for (const auto& entry : fs::directory_iterator(folder, error)) collect(entry);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string padded(const std::string& text, size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

// 168.3M, 1.24B: parameters as people say them.
std::string parameter_text(int64_t count) {
  char text[32];
  if (count >= 1'000'000'000) {
    std::snprintf(text, sizeof text, "%.2fB", count / 1e9);
  } else if (count >= 1'000'000) {
    std::snprintf(text, sizeof text, "%.1fM", count / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%.1fK", count / 1e3);
  }
  return text;
}

}  // namespace

void execute_list() {
  const DataRoot root = data_root();
  std::printf("data: %s (%s)\n\n", root.path.string().c_str(), root.origin.c_str());

  const fs::path scenarios = scenarios_dir();
  std::printf("Scenarios (%s)\n", scenarios.string().c_str());
  const std::vector<fs::path> scenario_files = yaml_files(scenarios, true);
  size_t width = 0;
  for (const fs::path& file : scenario_files)
    width = std::max(width, file.lexically_relative(scenarios).string().size());
  for (const fs::path& file : scenario_files) {
    std::printf("  %s  %s%s\n", padded(file.lexically_relative(scenarios).string(), width).c_str(),
                text_key(file, "description").c_str(), expected_slowdown_text(file).c_str());
  }
  if (scenario_files.empty()) std::printf("  (none)\n");

  std::printf("\nModels (%s)\n", models_dir().string().c_str());
  std::printf("  %s  %-9s %-11s %-11s %-11s %s\n", padded("name", 10).c_str(), "params", "fp32", "fp16", "bf16",
              "description");
  for (const CatalogModel& model : catalog_models()) {
    const ModelConfig& config = model.config;
    std::printf("  %s  %-9s %-11s %-11s %-11s %s\n", padded(model.name, 10).c_str(),
                parameter_text(config.parameter_count()).c_str(), format_bytes(config.weight_bytes(DType::F32)).c_str(),
                format_bytes(config.weight_bytes(DType::F16)).c_str(),
                format_bytes(config.weight_bytes(DType::BF16)).c_str(), model.description.c_str());
  }

  std::printf("\nDevices (%s)\n", devices_dir().string().c_str());
  const std::vector<fs::path> device_files = yaml_files(devices_dir(), false);
  for (const fs::path& file : device_files) {
    std::string about = text_key(file, "name");
    const std::string description = text_key(file, "description");
    if (!description.empty()) about += (about.empty() ? "" : ": ") + description;
    std::printf("  %s  %s\n", padded(file.stem().string(), 10).c_str(), about.c_str());
  }
  if (device_files.empty()) std::printf("  (none)\n");
}

}  // namespace decodelab
