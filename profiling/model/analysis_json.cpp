// RunAnalysis -> JSON (result.json, `--json`). Derived figures (intensity, achieved
// rates, fractions) are written out so tools need not re-derive them; units are base
// units (seconds, bytes, FLOP, per second) and fractions are 0..1.
#include "profiling/model/analysis.h"

namespace decodelab {

namespace {

nlohmann::json point_json(const RooflinePoint& point) {
  return {{"count", point.count},
          {"seconds", point.seconds},
          {"mean_op_seconds", point.mean_seconds()},
          {"flops", point.flops},
          {"bytes", point.bytes},
          {"intensity_flop_per_byte", point.intensity()},
          {"achieved_flops_per_s", point.achieved_flops()},
          {"achieved_bytes_per_s", point.achieved_bandwidth()},
          {"roof_flops_per_s", point.roof_flops()},
          {"compute_fraction", point.compute_fraction()},
          {"memory_fraction", point.memory_fraction()},
          {"roof_fraction", point.roof_fraction()}};
}

nlohmann::json timeline_json(const TimelineStats& timeline) {
  return {{"host_seconds", timeline.span_seconds},
          {"device_seconds", timeline.device_seconds()},
          {"busy_seconds", timeline.busy_seconds},
          {"idle_seconds", timeline.idle_seconds},
          {"idle_fraction", timeline.idle_fraction()},
          {"gaps", timeline.gaps},
          {"largest_gap_seconds", timeline.largest_gap_seconds},
          {"syncs", timeline.syncs},
          {"host_stall_seconds", timeline.host_stall_seconds},
          {"host_stalls", timeline.host_stalls},
          {"ops", timeline.ops}};
}

nlohmann::json group_json(const OpGroup& group) {
  nlohmann::json json = {{"phase", phase_name(group.phase)},
                         {"category", op_category_name(group.category)},
                         {"precision", group.precision},
                         {"limiter", limiter_name(group.limiter)},
                         {"near_limiter", group.near ? nlohmann::json(limiter_name(*group.near)) : nlohmann::json(nullptr)},
                         {"share_of_device_time", group.share_of_device_time}};
  if (!group.name.empty()) json["name"] = group.name;
  if (!group.name.empty()) json["label"] = group.label;
  json.update(point_json(group.point));
  return json;
}

nlohmann::json thresholds_json(const LimiterThresholds& thresholds) {
  return {{"tiny_op_seconds_gpu", thresholds.tiny_op_seconds_gpu},
          {"tiny_op_seconds_cpu", thresholds.tiny_op_seconds_cpu},
          {"busy_fraction", thresholds.busy_fraction},
          {"uncoalesced_sectors_per_request", thresholds.uncoalesced_sectors_per_request},
          {"low_occupancy_fraction", thresholds.low_occupancy_fraction},
          {"idle_overhead_fraction", thresholds.idle_overhead_fraction},
          {"above_roof_fraction", thresholds.above_roof_fraction},
          {"gap_seconds_gpu", thresholds.gap_seconds_gpu},
          {"gap_seconds_cpu", thresholds.gap_seconds_cpu},
          {"bandwidth_view_below_intensity", thresholds.bandwidth_view_below_intensity},
          {"near_margin", thresholds.near_margin}};
}

}  // namespace

nlohmann::json to_json(const RunAnalysis& analysis) {
  nlohmann::json json;
  json["schema"] = "decodelab-result";
  json["schema_version"] = RunAnalysis::kSchemaVersion;
  json["backend"] = analysis.backend;
  json["device"] = analysis.device;
  json["dtype"] = analysis.dtype;
  const ModelShape& model = analysis.model;
  json["model"] = {{"name", model.name},
                   {"hidden_size", model.hidden_size},
                   {"intermediate_size", model.intermediate_size},
                   {"num_hidden_layers", model.num_hidden_layers},
                   {"num_attention_heads", model.num_attention_heads},
                   {"num_key_value_heads", model.num_key_value_heads},
                   {"head_dim", model.head_dim},
                   {"vocab_size", model.vocab_size}};
  json["device_spec"] = to_json(analysis.device_spec);
  json["roofs"] = to_json(analysis.roofs);
  json["roofs_origin"] = analysis.device_spec.roofs_origin();
  json["above_roof"] = nlohmann::json::array();
  for (const AboveRoof& above : analysis.above_roof) {
    json["above_roof"].push_back({{"phase", phase_name(above.phase)},
                                  {"category", op_category_name(above.category)},
                                  {"roof_fraction", above.roof_fraction},
                                  {"working_set_bytes", above.working_set_bytes},
                                  {"cache_bytes", above.cache_bytes},
                                  {"cache_resident", above.cache_resident},
                                  {"explanation", above.explanation}});
  }
  json["thresholds"] = thresholds_json(analysis.thresholds);
  json["summary"] = analysis.summary;
  json["notes"] = analysis.notes;
  json["timeline"] = timeline_json(analysis.timeline);
  json["ops_without_timing"] = analysis.ops_without_timing;

  json["runs"] = nlohmann::json::array();
  for (const RunTimeline& run : analysis.runs) {
    json["runs"].push_back({{"index", run.index}, {"timeline", timeline_json(run.timeline)}, {"summary", run.summary}});
  }
  json["phases"] = nlohmann::json::array();
  for (const PhaseStats& phase : analysis.phases) {
    nlohmann::json entry = {{"phase", phase_name(phase.phase)},
                            {"steps", phase.steps},
                            {"limiter", limiter_name(phase.limiter)},
                            {"near_limiter", phase.near ? nlohmann::json(limiter_name(*phase.near)) : nlohmann::json(nullptr)},
                            {"opaque_fraction", phase.opaque_fraction},
                            {"summary", phase.summary},
                            {"timeline", timeline_json(phase.timeline)}};
    entry["work"] = point_json(phase.point);
    json["phases"].push_back(entry);
  }
  json["categories"] = nlohmann::json::array();
  for (const OpGroup& group : analysis.categories) json["categories"].push_back(group_json(group));
  json["top_ops"] = nlohmann::json::array();
  for (const OpGroup& group : analysis.top_ops) json["top_ops"].push_back(group_json(group));
  json["steps"] = nlohmann::json::array();
  for (const StepStats& step : analysis.steps) {
    nlohmann::json categories = nlohmann::json::object();
    for (size_t c = 0; c < kOpCategoryCount; ++c) {
      if (step.category_seconds[c] > 0) categories[op_category_name(static_cast<OpCategory>(c))] = step.category_seconds[c];
    }
    json["steps"].push_back({{"ordinal", step.ordinal},
                             {"index", step.index},
                             {"group", step.group},
                             {"overhead_bound", step.overhead_bound},
                             {"timeline", timeline_json(step.timeline)},
                             {"category_seconds", categories}});
  }
  return json;
}

}  // namespace decodelab
