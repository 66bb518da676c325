// Printers for a Diagnosis: the JSON file for tools and the console lines for people.
// They only format; every number was decided in diagnosis.cpp.
#include <cstdio>

#include "profiling/diagnosis.h"

namespace decodelab {

nlohmann::json to_json(const Diagnosis& diagnosis) {
  const DiagnosedShape& shape = diagnosis.shape;
  nlohmann::json bugs = nlohmann::json::array();
  for (const Finding& finding : diagnosis.bugs) {
    nlohmann::json entry = {{"name", finding.name}, {"evidence", finding.evidence}, {"confidence", finding.confidence}};
    if (!finding.variant.empty()) entry["variant"] = finding.variant;
    bugs.push_back(std::move(entry));
  }
  return {{"schema", "decodelab-diagnosis"},
          {"schema_version", kDiagnosisSchemaVersion},
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
          {"limits", diagnosis.limits}};
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
  if (diagnosis.bugs.empty()) {
    text += "no bugs found\n";
    for (const std::string& line : diagnosis.checked) text += "  checked " + line + "\n";
  } else {
    for (const Finding& finding : diagnosis.bugs) {
      char confidence[16];
      std::snprintf(confidence, sizeof confidence, "%.2f", finding.confidence);
      const std::string name = finding.variant.empty() ? finding.name : finding.name + " (" + finding.variant + ")";
      text += name + " [confidence " + confidence + "]: " + finding.evidence + "\n";
    }
    for (const std::string& line : diagnosis.checked) text += "  clean: " + line + "\n";
  }
  for (const std::string& line : diagnosis.limits) text += "  note: " + line + "\n";
  return text;
}

}  // namespace decodelab
