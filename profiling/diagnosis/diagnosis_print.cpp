// Printers for a Diagnosis: the JSON file for tools and the console lines for people.
// They only format; every number was decided in diagnosis.cpp.
#include <cstdio>

#include "profiling/diagnosis/diagnosis.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

// The evidence sentence as a short list: its clauses, split where it says "; ".
std::vector<std::string> evidence_items(const std::string& evidence) {
  std::vector<std::string> items;
  size_t begin = 0;
  while (begin <= evidence.size()) {
    const size_t end = evidence.find("; ", begin);
    items.push_back(evidence.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    begin = end + 2;
  }
  return items;
}

}  // namespace

nlohmann::json to_json(const Diagnosis& diagnosis) {
  const DiagnosedShape& shape = diagnosis.shape;
  nlohmann::json bugs = nlohmann::json::array();
  for (const Finding& finding : diagnosis.bugs) {
    nlohmann::json entry = {{"name", finding.name}, {"evidence", finding.evidence}, {"confidence", finding.confidence}};
    if (!finding.variant.empty()) entry["variant"] = finding.variant;
    entry["evidence_list"] = evidence_items(finding.evidence);
    bugs.push_back(std::move(entry));
  }
  nlohmann::json root = {{"schema", "decodelab-diagnosis"},
          {"schema_version", kDiagnosisSchemaVersion},
          {"diagnosed", diagnosis.diagnosed},
          {"trace",
           {{"source", shape.source},
            {"backend", shape.backend},
            {"device", shape.device},
            {"dtype", shape.dtype},
            {"model", shape.model},
            {"runs", shape.runs},
            {"requests_per_run", shape.requests_per_run},
            {"groups_per_run", shape.groups_per_run},
            {"decode_steps", shape.decode_steps},
            {"layers", shape.layers}}},
          {"bugs", std::move(bugs)},
          {"checked", diagnosis.checked},
          {"not_checked", diagnosis.not_checked},
          {"limits", diagnosis.limits}};
  if (!diagnosis.diagnosed) root["not_diagnosed"] = diagnosis.not_diagnosed;
  if (shape.device_span_seconds > 0) {
    root["trace"]["device_timeline"] = {{"span_seconds", shape.device_span_seconds},
                                        {"busy_seconds", shape.device_busy_seconds},
                                        {"kernel_seconds", shape.kernel_busy_seconds},
                                        {"idle_seconds", shape.device_span_seconds - shape.device_busy_seconds},
                                        {"idle_gaps", shape.idle_gaps}};
  }
  return root;
}

std::string format_diagnosis(const Diagnosis& diagnosis) {
  const DiagnosedShape& shape = diagnosis.shape;
  auto counted = [](int count, const char* noun) { return std::to_string(count) + " " + noun + (count == 1 ? "" : "s"); };
  const std::string source = shape.source.empty() || shape.source == "decodelab" ? "" : " (" + shape.source + ")";
  std::string text = "trace" + source + ": " + (shape.model.empty() ? std::string("model ?") : shape.model) +
                     (shape.dtype.empty() ? "" : " " + shape.dtype) +
                     " on " + (shape.backend.empty() ? std::string("?") : shape.backend) + "; " +
                     counted(shape.runs, "run") + " of " +
                     (shape.requests_per_run > 0 ? counted(shape.requests_per_run, "request") : std::string("? requests")) + " in " +
                     counted(shape.groups_per_run, "group") + "; " + counted(shape.decode_steps, "decode step") +
                     " in all\n";
  if (shape.device_span_seconds > 0) {
    const double span = shape.device_span_seconds;
    text += "device: busy " + format_percent(shape.device_busy_seconds / span) + " of " + format_seconds(span) +
            " (kernels " + format_percent(shape.kernel_busy_seconds / span) + "), idle " +
            format_seconds(span - shape.device_busy_seconds) + " in " + std::to_string(shape.idle_gaps) + " gaps\n";
  }
  if (!diagnosis.diagnosed) {
    text += "not diagnosed: " + diagnosis.not_diagnosed + "\n";
  } else if (diagnosis.bugs.empty()) {
    text += diagnosis.not_checked.empty() ? "no bugs found\n"
                                          : "no bugs found by the " + std::to_string(5 - diagnosis.not_checked.size()) +
                                                " checks that could run\n";
    for (const std::string& line : diagnosis.checked) text += "  checked " + line + "\n";
  } else {
    for (const Finding& finding : diagnosis.bugs) {
      char confidence[16];
      std::snprintf(confidence, sizeof confidence, "%.2f", finding.confidence);
      const std::string name = finding.variant.empty() ? finding.name : finding.name + " (" + finding.variant + ")";
      const std::vector<std::string> items = evidence_items(finding.evidence);
      text += name + " [confidence " + confidence + "]: " + items.front() + "\n";
      for (size_t i = 1; i < items.size(); ++i) text += "    - " + items[i] + "\n";
    }
    for (const std::string& line : diagnosis.checked) text += "  clean: " + line + "\n";
  }
  for (const std::string& line : diagnosis.not_checked) text += "  not checked: " + line + "\n";
  for (const std::string& line : diagnosis.limits) text += "  note: " + line + "\n";
  return text;
}

}  // namespace decodelab
