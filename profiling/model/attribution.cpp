// The four-way split of a slowdown (see attribution.h).
#include "profiling/model/attribution.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "profiling/report/report.h"
#include "profiling/model/statistics.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

struct GroupKey {
  Phase phase;
  OpCategory category;
  bool operator<(const GroupKey& other) const {
    return std::tie(phase, category) < std::tie(other.phase, other.category);
  }
};

struct GroupPair {
  RooflinePoint fixed;
  RooflinePoint buggy;
};

bool in_scope(Phase phase, AttributionScope scope) { return scope == AttributionScope::EndToEnd || phase == Phase::Decode; }

std::map<GroupKey, GroupPair> pair_groups(const RunAnalysis& fixed, const RunAnalysis& buggy, AttributionScope scope) {
  std::map<GroupKey, GroupPair> groups;
  for (const OpGroup& group : fixed.categories)
    if (in_scope(group.phase, scope)) groups[{group.phase, group.category}].fixed.add(group.point);
  for (const OpGroup& group : buggy.categories)
    if (in_scope(group.phase, scope)) groups[{group.phase, group.category}].buggy.add(group.point);
  return groups;
}

// The scope's device timeline: the decode phase, or the whole trace.
const TimelineStats& scope_timeline(const RunAnalysis& analysis, AttributionScope scope) {
  static const TimelineStats none;
  if (scope == AttributionScope::EndToEnd) return analysis.timeline;
  const PhaseStats* decode = analysis.phase(Phase::Decode);
  return decode ? decode->timeline : none;
}

// "copy +1.80 GB, matmul +100 MB" — the largest contributions first, each formatted by
// `format` (a unit people use), at most three; "" when every one is zero.
std::string contributions(std::vector<std::pair<std::string, double>> items,
                          std::string (*format)(double)) {
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return std::abs(a.second) > std::abs(b.second); });
  std::string text;
  int shown = 0;
  for (const auto& [name, value] : items) {
    if (value == 0 || shown == 3) continue;
    text += (shown++ ? ", " : "") + name + " " + with_sign(value, format(value));
  }
  return text;
}

std::string in_parentheses(const std::string& text) { return text.empty() ? "" : " (" + text + ")"; }
std::string per_token_time(double ms) { return ms == 0 ? "0 µs/token" : with_sign(ms, format_seconds(ms / 1e3)) + "/token"; }
std::string per_token_time_unsigned(double ms) { return ms == 0 ? "0 µs/token" : format_seconds(ms / 1e3) + "/token"; }

// "; of it while the host was stalled (it had lost its core): 12.0 µs/token vs 0 µs/token
// (41 vs 0 stalls)" where
// either side's idle time holds host stalls (profiling/model/host_stalls.h), else "".
std::string host_stall_text(const TimelineStats& buggy, const TimelineStats& fixed, double per_token) {
  if (buggy.host_stalls == 0 && fixed.host_stalls == 0) return "";
  return "; of it while the host was stalled (it had lost its core): " +
         per_token_time_unsigned(buggy.host_stall_seconds * 1e3 * per_token) + " vs " +
         per_token_time_unsigned(fixed.host_stall_seconds * 1e3 * per_token) + " (" + std::to_string(buggy.host_stalls) +
         " vs " + std::to_string(fixed.host_stalls) + " stalls)";
}

// What a negative part means, per cause.
std::string negative_note(const std::string& cause) {
  if (cause == "extra work") return "negative: the buggy run did fewer FLOPs here than the fixed run";
  if (cause == "extra bytes") return "negative: the buggy run moved fewer bytes here than the fixed run";
  if (cause == "idle device") return "negative: the device sat idle less in the buggy run";
  if (cause == "lost efficiency") {
    return "negative: the buggy run's ops ran closer to their roofs than the fixed run's (bigger or fewer ops amortise "
           "fixed costs better), which hides part of what the other causes cost";
  }
  return "negative: the parts add up to more than the measured difference (repeat-to-repeat noise, or host time "
         "outside the device timeline)";
}

std::string headline_of(const Attribution& attribution);

// "1 pair of repeats", "6 pairs of repeats".
std::string pairs_of_repeats(int pairs) {
  return std::to_string(pairs) + (pairs == 1 ? " pair of repeats" : " pairs of repeats");
}

// The share of a group's extra roof time that is extra work (the rest is extra bytes): in
// proportion to how much its work (FLOPs) grew and how much its bytes per unit of work grew,
// as log ratios (the two add up to the bytes' own log ratio), counting only those that moved
// the way the roof time did. A decode step that re-runs its prefix does several times the
// work, its matmuls at fewer bytes per FLOP and its elementwise ops at the same: extra work,
// though a CPU's matvec sits on the memory side of the roof. fp32 weights are the same work
// over twice the bytes: extra bytes. A group without FLOPs in either run (copies, casts, the
// KV cache's stores) only moves data: extra bytes, whatever it costs. A group only one run
// has goes by the side of the roof it sits on.
double work_share_of_growth(const GroupPair& pair, double more_roof_time) {
  const GroupPair& p = pair;
  if (p.fixed.flops <= 0 && p.buggy.flops <= 0) return 0.0;
  const bool compute_side = !pair.buggy.memory_side() || (pair.buggy.count == 0 && !pair.fixed.memory_side());
  const double by_side = compute_side ? 1.0 : 0.0;
  if (!(p.fixed.flops > 0 && p.buggy.flops > 0 && p.fixed.bytes > 0 && p.buggy.bytes > 0)) return by_side;
  const double sign = more_roof_time >= 0 ? 1.0 : -1.0;
  const double work = std::max(0.0, sign * std::log(p.buggy.flops / p.fixed.flops));
  const double bytes_per_work =
      std::max(0.0, sign * std::log((p.buggy.bytes / p.buggy.flops) / (p.fixed.bytes / p.fixed.flops)));
  if (work + bytes_per_work < 1e-9) return by_side;
  return work / (work + bytes_per_work);
}

}  // namespace

double Attribution::residual_fraction() const {
  return measured_delta_ms != 0 ? std::abs(residual_ms) / std::abs(measured_delta_ms) : 0.0;
}

Attribution attribute_slowdown(const RunAnalysis& fixed, const RunAnalysis& buggy, double measured_delta_ms,
                               int64_t tokens, AttributionScope scope) {
  const double per_token = tokens > 0 ? 1.0 / static_cast<double>(tokens) : 0.0;
  double work_s = 0, bytes_s = 0, efficiency_s = 0;
  double extra_flops = 0, extra_bytes = 0;
  std::vector<std::pair<std::string, double>> flops_by_group, bytes_by_group, efficiency_by_group;

  for (const auto& [key, pair] : pair_groups(fixed, buggy, scope)) {
    const std::string name = std::string(phase_name(key.phase)) + " " + op_category_name(key.category);
    // Cost per unit of roof time, c = t / R; a side without the group borrows the other's.
    auto cost_of = [](const RooflinePoint& point) {
      return point.seconds > 0 && point.roof_seconds > 0 ? point.seconds / point.roof_seconds : 0.0;
    };
    double fixed_cost = cost_of(pair.fixed), buggy_cost = cost_of(pair.buggy);
    if (fixed_cost == 0) fixed_cost = buggy_cost;
    if (buggy_cost == 0) buggy_cost = fixed_cost;
    double more_roof_time = 0, worse_efficiency = pair.buggy.seconds - pair.fixed.seconds;
    if (fixed_cost > 0) {  // the midpoint split of t = R · c (see the header)
      more_roof_time = (pair.buggy.roof_seconds - pair.fixed.roof_seconds) * (fixed_cost + buggy_cost) / 2;
      worse_efficiency = (buggy_cost - fixed_cost) * (pair.fixed.roof_seconds + pair.buggy.roof_seconds) / 2;
      // Where a side lacks the group its time is not R · c: keep the split exact.
      worse_efficiency += (pair.buggy.seconds - pair.fixed.seconds) - (more_roof_time + worse_efficiency);
    }
    // What grew names the mechanism: the extra roof time is split between work and bytes
    // (work_share_of_growth), so that a recomputation is extra work even where its ops sit
    // on the memory side of the roof, and fp32 weights are extra bytes at any intensity.
    const double work_share = work_share_of_growth(pair, more_roof_time);
    work_s += more_roof_time * work_share;
    bytes_s += more_roof_time * (1 - work_share);
    if (work_share > 0) flops_by_group.emplace_back(name, pair.buggy.flops - pair.fixed.flops);
    if (work_share < 1) bytes_by_group.emplace_back(name, pair.buggy.bytes - pair.fixed.bytes);
    extra_flops += pair.buggy.flops - pair.fixed.flops;
    extra_bytes += pair.buggy.bytes - pair.fixed.bytes;
    efficiency_s += worse_efficiency;
    if (pair.fixed.seconds > 0 && pair.buggy.seconds > 0)
      efficiency_by_group.emplace_back(name + " at " + format_percent(pair.buggy.roof_fraction()) + " of roof (fixed " +
                                           format_percent(pair.fixed.roof_fraction()) + ")",
                                       worse_efficiency * 1e3 * per_token);
  }
  const TimelineStats& fixed_time = scope_timeline(fixed, scope);
  const TimelineStats& buggy_time = scope_timeline(buggy, scope);
  const double idle_s = buggy_time.idle_seconds - fixed_time.idle_seconds;

  Attribution attribution;
  attribution.scope = scope;
  attribution.tokens = tokens;
  attribution.measured_delta_ms = measured_delta_ms;
  attribution.delta_ms_per_token = measured_delta_ms * per_token;
  const PhaseStats* fixed_decode = fixed.phase(Phase::Decode);
  const double fixed_flops_rate = fixed_decode ? fixed_decode->point.achieved_flops() : 0;
  const double fixed_bandwidth = fixed_decode ? fixed_decode->point.achieved_bandwidth() : 0;
  auto flops_text = [](double value) { return format_flops(value); };
  auto bytes_text = [](double value) { return format_bytes(value); };

  auto add_part = [&](const char* cause, double seconds, std::string explanation) {
    AttributionPart part{cause, seconds * 1e3, seconds * 1e3 * per_token, std::move(explanation), ""};
    if (part.ms < 0) part.sign_note = negative_note(cause);
    attribution.parts.push_back(std::move(part));
  };
  std::vector<std::pair<std::string, double>> flops_per_token = flops_by_group, bytes_per_token = bytes_by_group;
  for (auto& item : flops_per_token) item.second *= per_token;
  for (auto& item : bytes_per_token) item.second *= per_token;
  add_part("extra work", work_s,
           with_sign(extra_flops, format_flops(extra_flops * per_token)) + "/token" +
               in_parentheses(contributions(flops_per_token, +flops_text)) + ", at the runs' average cost per FLOP" +
               (fixed_flops_rate > 0 ? " (the fixed decode ran at " + format_flop_rate(fixed_flops_rate) + ")" : ""));
  add_part("extra bytes", bytes_s,
           with_sign(extra_bytes, format_bytes(extra_bytes * per_token)) + "/token of DRAM traffic" +
               in_parentheses(contributions(bytes_per_token, +bytes_text)) + ", at the runs' average cost per byte" +
               (fixed_bandwidth > 0 ? " (the fixed decode streamed " + format_bandwidth(fixed_bandwidth) + ")" : ""));
  add_part("idle device", idle_s,
           "device idle " + per_token_time_unsigned(buggy_time.idle_seconds * 1e3 * per_token) + " vs " +
               per_token_time_unsigned(fixed_time.idle_seconds * 1e3 * per_token) +
               "; syncs and device-to-host reads: " + format_number(static_cast<double>(buggy_time.syncs) * per_token, 2) +
               " vs " + format_number(static_cast<double>(fixed_time.syncs) * per_token, 2) + " per token; gaps: " +
               std::to_string(buggy_time.gaps) + " vs " + std::to_string(fixed_time.gaps) +
               host_stall_text(buggy_time, fixed_time, per_token));
  add_part("lost efficiency", efficiency_s,
           efficiency_by_group.empty()
               ? std::string("no kind of op ran further from its roof")
               : "the same kinds of op further from their roofs: " +
                     contributions(efficiency_by_group, +[](double ms) { return per_token_time_unsigned(ms); }));

  double sum = 0;
  for (const AttributionPart& part : attribution.parts) sum += part.ms;
  attribution.residual_ms = measured_delta_ms - sum;
  attribution.residual_ms_per_token = attribution.residual_ms * per_token;
  attribution.headline = headline_of(attribution);
  return attribution;
}

namespace {

// "+5.78 ms/token, 82% from extra bytes: ..." naming the top cause of the parts that stand
// out of the noise; when the top cause is more than the whole difference (other parts
// offset it), it says so instead of quoting a share above 100%.
std::string headline_of(const Attribution& attribution) {
  const auto by_time = [](const AttributionPart* a, const AttributionPart* b) { return a->ms_per_token < b->ms_per_token; };
  std::vector<const AttributionPart*> clear;
  for (const AttributionPart& part : attribution.parts)
    if (!part.within_noise) clear.push_back(&part);
  if (attribution.delta_ms_per_token <= 0) {
    return per_token_time(attribution.delta_ms_per_token) + ": the buggy run is not slower";
  }
  const auto top = std::max_element(clear.begin(), clear.end(), by_time);
  if (top == clear.end()) {
    return per_token_time(attribution.delta_ms_per_token) + ": no part stands out of the noise over " +
           pairs_of_repeats(attribution.pairs);
  }
  if ((*top)->ms_per_token <= 0) {
    return per_token_time(attribution.delta_ms_per_token) + ": no part adds time; the difference is what the parts " +
           "leave unexplained";
  }
  const double share = (*top)->ms_per_token / attribution.delta_ms_per_token;
  if (share <= 1.0) {
    return per_token_time(attribution.delta_ms_per_token) + ", " + format_percent(share) + " from " + (*top)->cause +
           ": " + (*top)->explanation;
  }
  const auto bottom = std::min_element(clear.begin(), clear.end(), by_time);
  const std::string top_text = per_token_time(attribution.delta_ms_per_token) + ": " + (*top)->cause + " " +
                               per_token_time((*top)->ms_per_token) + " (" + (*top)->explanation + ")";
  if ((*bottom)->ms_per_token < 0) return top_text + ", offset by " + (*bottom)->cause + " " + per_token_time((*bottom)->ms_per_token);
  return top_text + ", more than the measured difference by what is left unexplained (" +
         per_token_time(attribution.residual_ms_per_token) + ")";
}

// Beside a part: "within the noise (the pairs read -3.10 to +25.0 µs/token)" when its
// interval holds 0, and for a part larger than the whole difference, the parts that take
// it back — no share above 100% without its reason. "" when neither.
std::string part_note(const Attribution& attribution, const AttributionPart& part) {
  std::string note;
  if (part.within_noise) {
    note = "within the noise: over the " + std::to_string(attribution.pairs) + " pairs it reads " +
           per_token_time(part.low_ms_per_token) + " to " + per_token_time(part.high_ms_per_token);
  }
  const double delta = attribution.delta_ms_per_token;
  if (delta > 0 && part.ms_per_token > delta) {
    std::string back;
    for (const AttributionPart& other : attribution.parts) {
      if (other.ms_per_token >= 0) continue;
      back += (back.empty() ? "" : ", ") + other.cause + " " + format_percent(other.ms_per_token / delta);
    }
    if (attribution.residual_ms_per_token < 0)
      back += (back.empty() ? "" : ", ") + std::string("unexplained ") + format_percent(attribution.residual_ms_per_token / delta);
    note += (note.empty() ? "" : "; ") + std::string("more than the whole difference: ") +
            (back.empty() ? "the other parts" : back) + " take" + (back.find(", ") == std::string::npos ? "s" : "") +
            " back the rest";
  }
  return note;
}

}  // namespace

Attribution median_attribution(const std::vector<Attribution>& pairs, double delta_ms_per_token) {
  Attribution result;
  result.pairs = static_cast<int>(pairs.size());
  result.delta_ms_per_token = delta_ms_per_token;
  if (pairs.empty()) return result;
  result.scope = pairs.front().scope;
  result.tokens = pairs.front().tokens;
  // Per-token figures are what compare across pairs; per-repeat ms follow from the tokens.
  const double ms_per_token_to_ms = static_cast<double>(result.tokens);
  result.measured_delta_ms = delta_ms_per_token * ms_per_token_to_ms;
  double sum = 0;
  for (size_t cause = 0; cause < pairs.front().parts.size(); ++cause) {
    std::vector<double> values;
    for (const Attribution& pair : pairs) values.push_back(pair.parts[cause].ms_per_token);
    const double median = median_of(values);
    // The explanation of the pair whose part is closest to the median.
    size_t closest = 0;
    for (size_t i = 1; i < pairs.size(); ++i) {
      if (std::abs(values[i] - median) < std::abs(values[closest] - median)) closest = i;
    }
    AttributionPart part = pairs[closest].parts[cause];
    const Estimate spread = median_estimate(values, 0.0);
    part.ms_per_token = median;
    part.ms = median * ms_per_token_to_ms;
    part.low_ms_per_token = spread.low;
    part.high_ms_per_token = spread.high;
    part.within_noise = pairs.size() > 1 && median != 0 && spread.low <= 0 && spread.high >= 0;
    part.sign_note = median < 0 && !part.within_noise ? negative_note(part.cause) : "";
    sum += median;
    result.parts.push_back(std::move(part));
  }
  result.residual_ms_per_token = delta_ms_per_token - sum;
  result.residual_ms = result.residual_ms_per_token * ms_per_token_to_ms;
  result.headline = headline_of(result);
  return result;
}

nlohmann::json to_json(const Attribution& attribution) {
  nlohmann::json parts = nlohmann::json::array();
  for (const AttributionPart& part : attribution.parts) {
    nlohmann::json entry = {{"cause", part.cause},
                            {"ms", part.ms},
                            {"ms_per_token", part.ms_per_token},
                            {"explanation", part.explanation}};
    if (!part.sign_note.empty()) entry["sign_note"] = part.sign_note;
    if (attribution.pairs > 1) {
      entry["low_ms_per_token"] = part.low_ms_per_token;
      entry["high_ms_per_token"] = part.high_ms_per_token;
      entry["within_noise"] = part.within_noise;
    }
    if (const std::string note = part_note(attribution, part); !note.empty()) entry["note"] = note;
    parts.push_back(entry);
  }
  return {{"scope", attribution.scope == AttributionScope::Decode ? "decode" : "end_to_end"},
          {"pairs", attribution.pairs},
          {"tokens", attribution.tokens},
          {"delta_ms", attribution.measured_delta_ms},
          {"delta_ms_per_token", attribution.delta_ms_per_token},
          {"parts", parts},
          {"residual_ms", attribution.residual_ms},
          {"residual_ms_per_token", attribution.residual_ms_per_token},
          {"residual_fraction", attribution.residual_fraction()},
          {"headline", attribution.headline}};
}

std::string format_attribution(const Attribution& attribution) {
  std::ostringstream out;
  const std::string scope = attribution.scope == AttributionScope::Decode ? "decode time" : "end-to-end time";
  out << "why slower (" << scope << ", medians over " << pairs_of_repeats(attribution.pairs) << "): "
      << (attribution.headline.empty() ? headline_of(attribution) : attribution.headline) << "\n\n"
      << "| cause | per token | share | explanation |\n| --- | ---: | ---: | --- |\n";
  auto share = [&](double ms_per_token) {
    return attribution.delta_ms_per_token != 0 ? format_percent(ms_per_token / attribution.delta_ms_per_token) : "-";
  };
  for (const AttributionPart& part : attribution.parts) {
    const std::string note = part_note(attribution, part);
    out << "| " << part.cause << " | " << per_token_time(part.ms_per_token) << " | " << share(part.ms_per_token) << " | "
        << (note.empty() ? "" : "(" + note + ") ") << part.explanation
        << (part.sign_note.empty() ? "" : ". " + part.sign_note) << " |\n";
  }
  out << "| unexplained | " << per_token_time(attribution.residual_ms_per_token) << " | "
      << share(attribution.residual_ms_per_token) << " | the medians' difference minus the parts"
      << (attribution.residual_fraction() > 0.10 ? " (over 10%: the parts explain the difference only roughly)" : "")
      << " |\n";
  out << "| total | " << per_token_time(attribution.delta_ms_per_token)
      << " | 100% | the difference of the medians the rows show |\n";
  return out.str();
}

}  // namespace decodelab

namespace decodelab {

std::string attribution_html(const Attribution& attribution) {
  struct Bar {
    std::string cause;
    double ms_per_token;
    std::string sentence;
    bool within_noise = false;
  };
  auto share = [&](double ms_per_token) {
    return attribution.delta_ms_per_token != 0 ? format_percent(ms_per_token / attribution.delta_ms_per_token) : "-";
  };
  std::vector<Bar> bars;
  for (const AttributionPart& part : attribution.parts) {
    const std::string verb = part.ms_per_token > 0 ? " adds " : part.ms_per_token < 0 ? " takes back " : " adds ";
    const std::string note = part_note(attribution, part);
    bars.push_back({part.cause, part.ms_per_token,
                    part.cause + verb + per_token_time_unsigned(std::abs(part.ms_per_token)) +
                        (note.empty() ? "" : " (" + note + ")") + ": " + part.explanation +
                        (part.sign_note.empty() ? "" : ". " + part.sign_note) + ".",
                    part.within_noise});
  }
  bars.push_back({"unexplained", attribution.residual_ms_per_token,
                  "what the medians' difference leaves after the parts: host time outside the device timeline, "
                  "repeat-to-repeat noise" +
                      std::string(attribution.residual_fraction() > 0.10
                                      ? " (over 10%: the parts explain the difference only roughly)."
                                      : ".")});
  // One scale for every bar, with the zero line where 0 falls between the most negative
  // and the most positive part.
  double lowest = 0, highest = 0;
  for (const Bar& bar : bars) lowest = std::min(lowest, bar.ms_per_token), highest = std::max(highest, bar.ms_per_token);
  const double span = highest - lowest;
  auto percent = [&](double ms) { return span > 0 ? format_number(100.0 * (ms - lowest) / span, 4) + "%" : std::string("0%"); };
  const std::string zero = percent(0);
  const std::string headline = attribution.headline.empty() ? headline_of(attribution) : attribution.headline;
  const std::string scope = attribution.scope == AttributionScope::Decode ? "decode time" : "end-to-end time";
  std::ostringstream html;
  html << "<div class=\"attribution\"><p><b>Why slower:</b> " << xml_escape(headline) << "</p>";
  html << "<div class=\"table-scroll\"><table class=\"bars\"><tr class=\"scale\"><th>cause</th><th>per token</th>"
          "<th>share</th><th class=\"text\">← faster (hatched) · 0 · slower (solid) →; dotted: within the noise</th><th class=\"text\">what it "
          "means</th></tr>";
  for (const Bar& bar : bars) {
    const bool residual = bar.cause == "unexplained";
    const char* kind = residual ? "residual" : bar.within_noise ? "noise" : bar.ms_per_token < 0 ? "faster" : "slower";
    const std::string left = percent(std::min(bar.ms_per_token, 0.0));
    const std::string width = span > 0 ? format_number(100.0 * std::abs(bar.ms_per_token) / span, 4) + "%" : "0%";
    html << "<tr class=\"" << kind << "\"><td class=\"part\">" << xml_escape(bar.cause) << "</td><td class=\"value\">"
         << xml_escape(per_token_time(bar.ms_per_token)) << "</td><td>" << xml_escape(share(bar.ms_per_token))
         << "</td><td class=\"track-cell\"><div class=\"track\" data-ms-per-token=\"" << format_number(bar.ms_per_token, 6)
         << "\"><span class=\"bar " << kind << "\" style=\"left:" << left << ";width:" << width
         << "\"></span><span class=\"zero\" style=\"left:" << zero << "\"></span></div></td><td class=\"text\">"
         << xml_escape(bar.sentence) << "</td></tr>";
  }
  html << "<tr class=\"total\"><td>measured difference</td><td class=\"value\">"
       << xml_escape(per_token_time(attribution.delta_ms_per_token)) << "</td><td>100%</td><td></td><td class=\"text\">"
       << "the difference of the medians the rows show (" << xml_escape(scope) << " per token, medians over "
       << pairs_of_repeats(attribution.pairs) << "): the parts plus what they leave unexplained</td></tr>";
  html << "</table></div></div>";
  return html.str();
}

}  // namespace decodelab
