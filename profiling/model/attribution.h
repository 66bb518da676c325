// Attribution: why is the buggy run slower? The extra time is split into four causes,
// each with its roofline explanation, and the parts add up to the measured difference
// up to a stated residual:
//   extra work       more roof time of op groups whose FLOPs grew (a recomputation), on
//                    either side of the roof
//   extra bytes      more roof time of groups whose bytes grew without more FLOPs: the same
//                    arithmetic over wider data (fp32 weights), or data moved by ops without
//                    arithmetic (copies and casts the fixed run does not make)
//   idle device      more time with nothing to run (gaps behind the host, syncs)
//   lost efficiency  the buggy run's own work done further from its roof than the fixed
//                    run managed for the same kind of op (e.g. strided reads)
// The names are what a profiler counts: work is FLOPs, bytes are DRAM traffic. A copy does
// no arithmetic, so the time of a copy the fixed run does not make is extra bytes — "extra
// work" beside "+0 FLOP" would contradict its own figures.
// Non-obvious choice: per (op category, phase) a group's time is t = R · c (R its roof
// time, c = t / R its cost per unit of roof time). The change splits symmetrically, each
// factor's change weighted by the mean of the other (the midpoint split of a product):
// t' - t = (R' - R) · (c + c') / 2  +  (c' - c) · (R + R') / 2. The first term is the extra
// roof time at the average cost (work or bytes, by the side of the roof the group sits
// on); the second the lost efficiency (negative when the buggy run did its work closer to
// its roofs). Neither run is the yardstick, so neither term is inflated by the other
// run's efficiency; the split is exact, and only the measured difference against the
// traced one is left as residual.
//
// A comparison attributes every pair of repeats and reports each cause's median over the
// pairs (median_attribution): the parts explain the difference of the medians the rows
// show, not one repeat, with the residual what the medians leave over. A part whose
// interval over the pairs holds 0 is within the noise; a part larger than the whole
// difference is printed with the parts that take it back beside it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiling/model/analysis.h"

namespace decodelab {

// Which time the split explains: the decode phase (decode_slowdown) or the whole run.
enum class AttributionScope { Decode, EndToEnd };

struct AttributionPart {
  std::string cause;         // "extra work", "extra bytes", "idle device", "lost efficiency"
  double ms = 0;             // over one repeat's scope
  double ms_per_token = 0;
  std::string explanation;   // the roofline reason, with numbers (no e-notation, units people use)
  std::string sign_note;     // for a negative part: what it means; else empty
  // median_attribution: the interval of the part's median over the pairs (per token), and
  // whether it holds 0 — the part is within the noise: the pairs disagree on its sign, and
  // it is printed as such, never named as the cause.
  double low_ms_per_token = 0, high_ms_per_token = 0;
  bool within_noise = false;
};

struct Attribution {
  AttributionScope scope = AttributionScope::EndToEnd;
  double measured_delta_ms = 0;      // what the caller measured, per repeat (e.g. the medians' difference)
  double delta_ms_per_token = 0;
  int pairs = 1;                     // pairs of repeats whose parts' medians these are
  int64_t tokens = 0;                // the tokens of the scope in one run (per-token figures divide by it)
  std::vector<AttributionPart> parts;  // the four causes, in a fixed order
  double residual_ms = 0;            // measured - sum(parts)
  double residual_ms_per_token = 0;
  std::string headline;              // one sentence naming the top cause
  // |residual| / |measured delta|: the parts are trusted when under 10%.
  double residual_fraction() const;
};

// fixed/buggy: analyses of one traced repeat of each run; measured_delta_ms: the measured
// difference of the scope's time (decode phase or whole run); tokens: the tokens of that
// scope in one run (decode tokens, or every generated token).
Attribution attribute_slowdown(const RunAnalysis& fixed, const RunAnalysis& buggy, double measured_delta_ms,
                               int64_t tokens, AttributionScope scope = AttributionScope::EndToEnd);

// Each cause's median over the pairs' attributions, explained by the pair whose part is
// that median; `delta_ms_per_token`, the difference of the medians the rows show,
// is what they add up to with the residual.
Attribution median_attribution(const std::vector<Attribution>& pairs, double delta_ms_per_token);

nlohmann::json to_json(const Attribution& attribution);
std::string format_attribution(const Attribution& attribution);
// A self-contained HTML fragment: one horizontal bar per cause (and the residual), scaled
// to the largest, with its time per token, explanation and, for a negative part, what it means.
std::string attribution_html(const Attribution& attribution);

}  // namespace decodelab
