// The four-way split of a slowdown (see attribution.h).
#include "profiling/attribution.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

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

std::map<GroupKey, GroupPair> pair_groups(const RunAnalysis& fixed, const RunAnalysis& buggy) {
  std::map<GroupKey, GroupPair> groups;
  for (const OpGroup& group : fixed.categories) groups[{group.phase, group.category}].fixed.add(group.point);
  for (const OpGroup& group : buggy.categories) groups[{group.phase, group.category}].buggy.add(group.point);
  return groups;
}

std::string format(const char* pattern, double a, double b = 0, double c = 0) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, a, b, c);
  return text;
}

// "copy +1.80 GB, matmul +0.10 GB" — the largest contributions first.
std::string contributions(std::vector<std::pair<std::string, double>> items, double scale, const char* unit) {
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return std::abs(a.second) > std::abs(b.second); });
  std::string text;
  int shown = 0;
  for (const auto& [name, value] : items) {
    if (value == 0 || shown == 3) continue;
    text += (shown++ ? ", " : "") + name + format(" %+.3g ", value * scale) + unit;
  }
  return text;
}

}  // namespace

double Attribution::residual_fraction() const {
  return measured_delta_ms != 0 ? std::abs(residual_ms) / std::abs(measured_delta_ms) : 0.0;
}

Attribution attribute_slowdown(const RunAnalysis& fixed, const RunAnalysis& buggy, double measured_delta_ms,
                               int64_t tokens) {
  const double per_token = tokens > 0 ? 1.0 / static_cast<double>(tokens) : 0.0;
  double work_s = 0, bytes_s = 0, efficiency_s = 0;
  double extra_flops = 0, extra_bytes = 0;
  std::vector<std::pair<std::string, double>> flops_by_group, bytes_by_group, efficiency_by_group;

  for (const auto& [key, pair] : pair_groups(fixed, buggy)) {
    const std::string name = std::string(phase_name(key.phase)) + " " + op_category_name(key.category);
    // The fixed run's efficiency for this kind of op; a new kind is held to its own.
    const RooflinePoint& reference = pair.fixed.seconds > 0 && pair.fixed.roof_seconds > 0 ? pair.fixed : pair.buggy;
    const double efficiency = reference.seconds > 0 && reference.roof_seconds > 0
                                  ? reference.roof_seconds / reference.seconds
                                  : 1.0;
    const double roof_delta = pair.buggy.roof_seconds - pair.fixed.roof_seconds;
    const double more_roof_time = roof_delta / efficiency;
    const double worse_efficiency = pair.buggy.seconds - pair.buggy.roof_seconds / efficiency;
    // Which side of the roof the (buggy) group sits on decides work or bytes.
    const bool compute_side = !pair.buggy.memory_side() || (pair.buggy.count == 0 && !pair.fixed.memory_side());
    if (compute_side) {
      work_s += more_roof_time;
      flops_by_group.emplace_back(name, pair.buggy.flops - pair.fixed.flops);
    } else {
      bytes_s += more_roof_time;
      bytes_by_group.emplace_back(name, pair.buggy.bytes - pair.fixed.bytes);
    }
    extra_flops += pair.buggy.flops - pair.fixed.flops;
    extra_bytes += pair.buggy.bytes - pair.fixed.bytes;
    efficiency_s += worse_efficiency;
    if (pair.fixed.seconds > 0 && pair.buggy.seconds > 0)
      efficiency_by_group.emplace_back(name + format(" at %.0f%% of roof (fixed %.0f%%)",
                                                     100 * pair.buggy.roof_fraction(), 100 * pair.fixed.roof_fraction()),
                                       worse_efficiency);
  }
  const double idle_s = buggy.timeline.idle_seconds - fixed.timeline.idle_seconds;

  Attribution attribution;
  attribution.measured_delta_ms = measured_delta_ms;
  attribution.delta_ms_per_token = measured_delta_ms * per_token;
  const PhaseStats* fixed_decode = fixed.phase(Phase::Decode);
  const double fixed_flops_rate = fixed_decode ? fixed_decode->point.achieved_flops() : 0;
  const double fixed_bandwidth = fixed_decode ? fixed_decode->point.achieved_bandwidth() : 0;

  auto add_part = [&](const char* cause, double seconds, std::string explanation) {
    attribution.parts.push_back({cause, seconds * 1e3, seconds * 1e3 * per_token, std::move(explanation)});
  };
  add_part("extra work", work_s,
           format("%+.3f GFLOP/token", extra_flops * per_token / 1e9) +
               (flops_by_group.empty() ? "" : " (" + contributions(flops_by_group, per_token / 1e9, "GFLOP") + ")") +
               format(", done at the fixed run's efficiency (its decode ran at %.1f GFLOP/s)", fixed_flops_rate / 1e9));
  add_part("extra bytes", bytes_s,
           format("%+.3f GB/token of DRAM traffic", extra_bytes * per_token / 1e9) +
               (bytes_by_group.empty() ? "" : " (" + contributions(bytes_by_group, per_token / 1e9, "GB") + ")") +
               format(", moved at the fixed run's efficiency (its decode streamed %.1f GB/s)", fixed_bandwidth / 1e9));
  add_part("idle device", idle_s,
           format("device idle %.2f ms/token vs %.2f ms/token", buggy.timeline.idle_seconds * 1e3 * per_token,
                  fixed.timeline.idle_seconds * 1e3 * per_token) +
               format("; syncs and device-to-host reads: %.2f/token vs %.2f/token",
                      static_cast<double>(buggy.timeline.syncs) * per_token,
                      static_cast<double>(fixed.timeline.syncs) * per_token) +
               format("; gaps: %.0f vs %.0f", static_cast<double>(buggy.timeline.gaps),
                      static_cast<double>(fixed.timeline.gaps)));
  add_part("lost efficiency", efficiency_s,
           efficiency_by_group.empty()
               ? std::string("no kind of op ran further from its roof")
               : "the same kinds of op further from their roofs: " +
                     contributions(efficiency_by_group, 1e3 * per_token, "ms/token"));

  double sum = 0;
  for (const AttributionPart& part : attribution.parts) sum += part.ms;
  attribution.residual_ms = measured_delta_ms - sum;
  attribution.residual_ms_per_token = attribution.residual_ms * per_token;

  const auto top = std::max_element(attribution.parts.begin(), attribution.parts.end(),
                                    [](const auto& a, const auto& b) { return a.ms < b.ms; });
  if (top != attribution.parts.end() && measured_delta_ms > 0) {
    attribution.headline = format("%+.3f ms/token, %.0f%% from ", attribution.delta_ms_per_token,
                                  100 * top->ms / measured_delta_ms) +
                           top->cause + ": " + top->explanation;
  } else {
    attribution.headline = format("%+.3f ms/token: the buggy run is not slower", attribution.delta_ms_per_token);
  }
  return attribution;
}

nlohmann::json to_json(const Attribution& attribution) {
  nlohmann::json parts = nlohmann::json::array();
  for (const AttributionPart& part : attribution.parts)
    parts.push_back({{"cause", part.cause},
                     {"ms", part.ms},
                     {"ms_per_token", part.ms_per_token},
                     {"explanation", part.explanation}});
  return {{"delta_ms", attribution.measured_delta_ms},
          {"delta_ms_per_token", attribution.delta_ms_per_token},
          {"parts", parts},
          {"residual_ms", attribution.residual_ms},
          {"residual_ms_per_token", attribution.residual_ms_per_token},
          {"residual_fraction", attribution.residual_fraction()},
          {"headline", attribution.headline}};
}

std::string format_attribution(const Attribution& attribution) {
  std::ostringstream out;
  out << "why slower: " << attribution.headline << "\n\n"
      << "| cause | ms/token | share | explanation |\n| --- | ---: | ---: | --- |\n";
  for (const AttributionPart& part : attribution.parts) {
    const double share = attribution.measured_delta_ms != 0 ? part.ms / attribution.measured_delta_ms : 0;
    out << "| " << part.cause << " | " << format("%+.3f", part.ms_per_token) << " | "
        << format("%.0f%%", 100 * share) << " | " << part.explanation << " |\n";
  }
  out << "| residual | " << format("%+.3f", attribution.residual_ms_per_token) << " | "
      << format("%.0f%%", 100 * (attribution.measured_delta_ms != 0 ? attribution.residual_ms / attribution.measured_delta_ms : 0))
      << " | measured difference minus the parts" << (attribution.residual_fraction() > 0.10 ? " (over 10%: noisy)" : "")
      << " |\n";
  return out.str();
}

}  // namespace decodelab
