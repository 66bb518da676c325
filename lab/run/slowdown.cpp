// Slowdown verdicts (see slowdown.h).
#include "lab/run/slowdown.h"

#include <cstdio>

namespace decodelab {

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, value >= 100 ? "%.0f" : value >= 10 ? "%.1f" : "%.2f", value);
  return text;
}

std::string range_text(const ExpectedSlowdown& expected) {
  char text[64];
  std::snprintf(text, sizeof text, "%g-%gx", expected.min, expected.max);
  return text;
}

std::string interval_text(const Estimate& measured) {
  return number(measured.low) + "x-" + number(measured.high) + "x";
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

const char* to_string(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::InRange: return "in range";
    case VerdictKind::Below: return "below";
    case VerdictKind::Above: return "above";
    case VerdictKind::WithinNoise: return "within noise";
    case VerdictKind::WorkloadChanged: return "workload changed";
    case VerdictKind::NoRange: return "-";
  }
  return "-";
}

std::vector<std::string> changed_workload_keys(const Scenario& scenario) {
  std::vector<std::string> keys;
  for (const std::string& key : scenario.overridden_keys) {
    if (starts_with(key, "workload") || key == "model" || key == "dtype" || starts_with(key, "bugs")) keys.push_back(key);
  }
  return keys;
}

SlowdownVerdict judge_slowdown(const Estimate& measured, SlowdownMetric metric,
                               const std::optional<ExpectedSlowdown>& expected,
                               const std::vector<std::string>& changed_keys) {
  SlowdownVerdict verdict;
  const std::string name = slowdown_words(metric);
  const std::string figure = name + " " + number(measured.median) + "x (95% interval " + interval_text(measured) + ")";
  if (!expected) {
    verdict.sentence = "the scenario states no expected range for its " + name;
    return verdict;
  }
  const std::string range = range_text(*expected);
  if (!changed_keys.empty()) {
    std::string keys;
    for (const std::string& key : changed_keys) keys += (keys.empty() ? "" : ", ") + key;
    verdict.kind = VerdictKind::WorkloadChanged;
    verdict.sentence = "the range " + range + " was written for the scenario's own workload, and --set changed " + keys +
                       ": the " + figure + " is not held against it";
    return verdict;
  }
  const bool crosses_one = measured.contains(1.0);
  const bool crosses_edge = measured.contains(expected->min) || measured.contains(expected->max);
  if (crosses_one || crosses_edge || measured.samples < kSamplesFor95) {
    verdict.kind = VerdictKind::WithinNoise;
    if (measured.samples < kSamplesFor95) {
      verdict.sentence = "only " + std::to_string(measured.samples) + " pairs of repeats (" +
                         std::to_string(kSamplesFor95) + " give a 95% interval): the " + figure +
                         " cannot be placed against " + range;
    } else if (crosses_one) {
      verdict.sentence = "the " + figure + " includes 1.0x: the repeats cannot tell the bug from no slowdown at all";
    } else {
      verdict.sentence = "the " + figure + " straddles an edge of the expected " + range +
                         ": more repeats or a quieter machine would tell which side it is on";
    }
    return verdict;
  }
  if (measured.high < expected->min) {
    verdict.kind = VerdictKind::Below;
    verdict.sentence = "the " + figure + " lies wholly below the expected " + range;
  } else if (measured.low > expected->max) {
    verdict.kind = VerdictKind::Above;
    verdict.sentence = "the " + figure + " lies wholly above the expected " + range;
  } else {
    verdict.kind = VerdictKind::InRange;
    verdict.sentence = "the " + figure + " lies within the expected " + range;
  }
  return verdict;
}

SlowdownReading read_slowdown(const Scenario& buggy, const Estimate& decode_slowdown,
                              const Estimate& end_to_end_slowdown) {
  SlowdownReading reading;
  reading.expected = buggy.expected_slowdown;
  const bool has_decode = decode_slowdown.samples > 0 && decode_slowdown.median > 0;
  reading.metric = reading.expected ? reading.expected->of : has_decode ? SlowdownMetric::Decode : SlowdownMetric::EndToEnd;
  reading.measured = reading.metric == SlowdownMetric::Decode ? decode_slowdown : end_to_end_slowdown;
  reading.verdict = judge_slowdown(reading.measured, reading.metric, reading.expected, changed_workload_keys(buggy));
  return reading;
}

const Estimate& slowdown_to_watch(const Estimate& headline, const Estimate* other) {
  return !headline.noisy && other != nullptr && other->noisy ? *other : headline;
}

std::string format_slowdown(const Estimate& slowdown) {
  if (slowdown.samples == 0) return "-";
  return slowdown_text(slowdown.median) + " " + format_interval(slowdown);
}

std::string slowdown_text(double median) { return number(median) + "x"; }

const char* slowdown_words(SlowdownMetric metric) {
  return metric == SlowdownMetric::EndToEnd ? "end-to-end slowdown" : "decode slowdown";
}

std::string slowdown_definition() {
  return "decode slowdown: the buggy run's decode time per token over the fixed run's (the fixed decode tok/s over the "
         "buggy); end-to-end slowdown: the buggy run's whole generation time over the fixed run's. Each ratio is taken "
         "within every pair of back-to-back repeats, and the median over the pairs is printed ± its 95% interval: a "
         "machine whose speed drifts between pairs slows both runs of a pair alike, so the drift cancels. Each row "
         "shows its side's median over all its repeats, so on a drifting machine the rows can divide to another ratio";
}

std::string drift_note(SlowdownMetric metric, const Estimate& slowdown, double ratio_of_row_medians) {
  if (slowdown.samples == 0 || ratio_of_row_medians <= 0 || slowdown.contains(ratio_of_row_medians)) return "";
  const std::string name = slowdown_words(metric);
  return "the rows' medians divide to " + slowdown_text(ratio_of_row_medians) + ", outside the " + name +
         "'s interval: the machine's speed drifted between pairs, and the " + name + " (" + format_slowdown(slowdown) +
         ") compares each pair's two runs, timed back to back";
}

std::string format_range(const ExpectedSlowdown& expected) {
  return range_text(expected) + (expected.of == SlowdownMetric::EndToEnd ? " end-to-end" : " decode");
}

nlohmann::json to_json(const SlowdownReading& reading) {
  nlohmann::json json = {{"metric", to_string(reading.metric)},
                         {"measured", to_json(reading.measured)},
                         {"verdict", to_string(reading.verdict.kind)},
                         {"why", reading.verdict.sentence}};
  if (reading.expected) {
    json["expected"] = {{"min", reading.expected->min}, {"max", reading.expected->max}, {"of", to_string(reading.expected->of)}};
  }
  return json;
}

SlowdownReading slowdown_reading_from_json(const nlohmann::json& json) {
  SlowdownReading reading;
  if (!json.is_object()) return reading;
  reading.metric = json.value("metric", "decode") == "end_to_end" ? SlowdownMetric::EndToEnd : SlowdownMetric::Decode;
  reading.measured = estimate_from_json(json.value("measured", nlohmann::json::object()));
  const std::string verdict = json.value("verdict", "-");
  for (VerdictKind kind : {VerdictKind::InRange, VerdictKind::Below, VerdictKind::Above, VerdictKind::WithinNoise,
                           VerdictKind::WorkloadChanged, VerdictKind::NoRange}) {
    if (verdict == to_string(kind)) reading.verdict.kind = kind;
  }
  reading.verdict.sentence = json.value("why", "");
  if (json.contains("expected") && json["expected"].is_object()) {
    const nlohmann::json& expected = json["expected"];
    reading.expected = ExpectedSlowdown{expected.value("min", 0.0), expected.value("max", 0.0),
                                        expected.value("of", "decode") == "end_to_end" ? SlowdownMetric::EndToEnd
                                                                                       : SlowdownMetric::Decode};
  }
  return reading;
}

}  // namespace decodelab
