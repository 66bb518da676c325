// A slowdown and its verdict, in one place (docs/metrics.md, "Slowdowns" and "Verdicts").
// Two slowdowns are always measured — decode_slowdown (the fixed run's decode tok/s over
// the buggy run's: per-token decode time) and end_to_end_slowdown (the whole generation's
// time) — and a scenario's expected_slowdown names the one its lesson is about; the
// verdict judges that one and says why in one sentence.
//
// Non-obvious choice: "within noise" wins over below/in range/above whenever the 95%
// interval crosses an edge of the range or 1.0 — a result the repeats cannot tell from
// its neighbour is not stated as one — and "workload changed" wins over everything when a
// --set changed a key the range was written for. A prediction of the same slowdown (the
// roofline model's) is meant to sit beside `measured` in SlowdownReading.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/scenario/scenario.h"
#include "profiling/model/statistics.h"

namespace decodelab {

enum class VerdictKind { InRange, Below, Above, WithinNoise, WorkloadChanged, NoRange };
const char* to_string(VerdictKind kind);  // "in range", "below", "above", "within noise", "workload changed", "-"

struct SlowdownVerdict {
  VerdictKind kind = VerdictKind::NoRange;
  std::string sentence;  // why, with the numbers
};

// The slowdown a lesson is about, what it measured, what was expected, and the verdict.
struct SlowdownReading {
  SlowdownMetric metric = SlowdownMetric::Decode;
  Estimate measured;  // the median of the pairs' ratios, with its 95% interval
  std::optional<ExpectedSlowdown> expected;
  SlowdownVerdict verdict;
};

// The scenario's keys a --set changed that the range was written for (workload.*, model,
// dtype, bugs.*), in the order given.
std::vector<std::string> changed_workload_keys(const Scenario& scenario);

// The verdict on `measured` (the slowdown of `metric`) against the scenario's range.
SlowdownVerdict judge_slowdown(const Estimate& measured, SlowdownMetric metric,
                               const std::optional<ExpectedSlowdown>& expected,
                               const std::vector<std::string>& changed_keys);

// The reading of a scenario's slowdown: the metric its range names (decode without one),
// the matching estimate of the two, and the verdict.
SlowdownReading read_slowdown(const Scenario& buggy, const Estimate& decode_slowdown,
                              const Estimate& end_to_end_slowdown);

// What a comparison's stopping rule watches: the headline slowdown until its interval reaches
// the target, then the other slowdown while its interval has not (both are printed with
// their intervals). `other` is null when there is none (no decode steps).
const Estimate& slowdown_to_watch(const Estimate& headline, const Estimate* other);

// "2.04x ±1.8%" (noisy marked), "3.10x" when the interval is unknown.
std::string format_slowdown(const Estimate& slowdown);
// The median alone as format_slowdown prints it: "2.04x", "31.2x", "412x".
std::string slowdown_text(double median);
// What both slowdowns are, one text for every surface that prints them (compare's table and
// page, the lab's table and page; docs/metrics.md "Slowdowns").
std::string slowdown_definition();
// The slowdown in words, for text and pages meant for people ("decode slowdown", "end-to-end
// slowdown"); --json and CSV keep its name (decode_slowdown, end_to_end_slowdown).
const char* slowdown_words(SlowdownMetric metric);
// "" when the ratio of the rows' medians (each side's median over all its repeats) lies
// inside the slowdown's interval; else a sentence saying the machine's speed drifted between
// pairs, with both figures, for the slowdown of `metric`.
std::string drift_note(SlowdownMetric metric, const Estimate& slowdown, double ratio_of_row_medians);
// "2-4x decode", "1.1-1.3x end-to-end".
std::string format_range(const ExpectedSlowdown& expected);

nlohmann::json to_json(const SlowdownReading& reading);
SlowdownReading slowdown_reading_from_json(const nlohmann::json& json);

}  // namespace decodelab
