// Device specs as JSON: what results, traces and `roofline --json` carry, and reading a
// spec back from a result file (the schema docs/metrics.md names, base units throughout).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/base/errors.h"
#include "profiling/device_spec.h"

namespace decodelab {

namespace {

nlohmann::json efficiency_json(const Efficiency& row) {
  return {{"category", row.category}, {"precision", precision_name(row.precision)}, {"rows_from", row.rows_from},
          {"size_log2", row.size_log2}, {"flops", row.flops}, {"bytes", row.bytes}, {"timed", row.timed}};
}

}  // namespace

nlohmann::json to_json(const Roofs& roofs) {
  nlohmann::json json = {{"source", roofs.source},
                         {"bandwidth_bytes_per_s", roofs.bandwidth},
                         {"flops_per_s", {{"fp32", roofs.fp32_flops}, {"tf32", roofs.tf32_flops},
                                          {"fp16", roofs.fp16_flops}, {"bf16", roofs.bf16_flops}}}};
  if (roofs.fp64_flops > 0) json["flops_per_s"]["fp64"] = roofs.fp64_flops;
  if (!roofs.efficiency.empty()) {
    json["efficiency_table"] = nlohmann::json::array();
    for (const Efficiency& row : roofs.efficiency) json["efficiency_table"].push_back(efficiency_json(row));
  }
  if (!roofs.efficiency_source.empty()) {
    json["efficiency"] = {{"flops", roofs.default_flops_efficiency}, {"bytes", roofs.default_bytes_efficiency},
                          {"source", roofs.efficiency_source}};
  }
  if (roofs.measured_at > 0) {
    json["measured_at"] = roofs.measured_at;
    json["spread"] = roofs.spread;
    json["noisy"] = roofs.noisy;
  }
  if (roofs.probe_bandwidth > 0) json["probe_bandwidth_bytes_per_s"] = roofs.probe_bandwidth;
  if (roofs.core_round_trip_ns > 0) json["core_round_trip_ns"] = roofs.core_round_trip_ns;
  return json;
}

nlohmann::json to_json(const FixedCosts& costs) {
  return {{"source", costs.source},
          {"host_launch_s", costs.host_launch},
          {"op_overhead_s", costs.op_overhead},
          {"parallel_region_s", costs.parallel_region},
          {"sync_round_trip_s", costs.sync_round_trip},
          {"host_link_bytes_per_s", costs.host_link_bandwidth}};
}

nlohmann::json to_json(const CacheLevel& cache) {
  nlohmann::json json = {{"source", cache.source}, {"bytes", cache.bytes}, {"bandwidth_bytes_per_s", cache.bandwidth}};
  if (!cache.beyond.empty()) {
    json["beyond"] = nlohmann::json::array();
    for (const CacheHit& point : cache.beyond)
      json["beyond"].push_back({{"reuse_bytes", point.reuse_bytes}, {"resident", point.resident}});
  }
  return json;
}

nlohmann::json to_json(const DeviceSpec& spec) {
  nlohmann::json json = {{"name", spec.name}, {"description", spec.description}, {"sm_count", spec.sm_count},
                         {"match", spec.match}};
  if (!spec.compute_capability.empty()) json["compute_capability"] = spec.compute_capability;
  if (spec.cache_bytes > 0) json["cache_bytes"] = spec.cache_bytes;
  if (spec.datasheet) json["datasheet"] = to_json(*spec.datasheet);
  if (spec.measured) json["measured"] = to_json(*spec.measured);
  if (spec.fixed_costs) json["fixed_costs"] = to_json(*spec.fixed_costs);
  if (spec.cache) json["cache"] = to_json(*spec.cache);
  if (spec.measured_fixed_costs) json["measured_fixed_costs"] = to_json(*spec.measured_fixed_costs);
  if (spec.measured_cache) json["measured_cache"] = to_json(*spec.measured_cache);
  if (spec.machine) {
    json["machine"] = {{"hostname", spec.machine->hostname},
                       {"cpu_model", spec.machine->cpu_model},
                       {"threads", spec.machine->threads}};
  }
  return json;
}

namespace {

Roofs roofs_from_json(const nlohmann::json& json, const std::string& where) {
  try {
    Roofs roofs;
    roofs.source = json.at("source").get<std::string>();
    roofs.bandwidth = json.at("bandwidth_bytes_per_s").get<double>();
    const nlohmann::json& flops = json.at("flops_per_s");
    roofs.fp32_flops = flops.at("fp32").get<double>();
    roofs.tf32_flops = flops.at("tf32").get<double>();
    roofs.fp16_flops = flops.at("fp16").get<double>();
    roofs.bf16_flops = flops.at("bf16").get<double>();
    roofs.fp64_flops = flops.value("fp64", 0.0);
    if (json.contains("efficiency_table")) {
      for (const nlohmann::json& entry : json.at("efficiency_table")) {
        Efficiency row;
        row.category = entry.at("category").get<std::string>();
        const std::optional<Precision> precision = parse_precision(entry.at("precision").get<std::string>());
        if (!precision) throw InputError(where, 0, "efficiency_table", "unknown precision " + entry.at("precision").dump());
        row.precision = *precision;
        row.rows_from = entry.at("rows_from").get<int>();
        row.size_log2 = entry.at("size_log2").get<int>();
        row.flops = entry.at("flops").get<double>();
        row.bytes = entry.at("bytes").get<double>();
        row.timed = entry.value("timed", std::string());
        if (!(row.flops > 0) || !(row.bytes > 0))
          throw InputError(where, 0, "efficiency_table", "expected positive efficiencies, not " + entry.dump());
        roofs.efficiency.push_back(row);
      }
    }
    if (json.contains("efficiency")) {
      const nlohmann::json& defaults = json.at("efficiency");
      roofs.default_flops_efficiency = defaults.at("flops").get<double>();
      roofs.default_bytes_efficiency = defaults.at("bytes").get<double>();
      roofs.efficiency_source = defaults.at("source").get<std::string>();
    }
    roofs.measured_at = json.value("measured_at", int64_t{0});
    roofs.spread = json.value("spread", 0.0);
    roofs.noisy = json.value("noisy", false);
    roofs.probe_bandwidth = json.value("probe_bandwidth_bytes_per_s", 0.0);
    roofs.core_round_trip_ns = json.value("core_round_trip_ns", 0.0);
    return roofs;
  } catch (const nlohmann::json::exception& error) {
    throw InputError(where, 0, "", std::string("malformed roofs: ") + error.what());
  }
}

FixedCosts fixed_costs_from_json(const nlohmann::json& json) {
  FixedCosts costs;
  costs.source = json.at("source").get<std::string>();
  costs.host_launch = json.at("host_launch_s").get<double>();
  costs.op_overhead = json.at("op_overhead_s").get<double>();
  costs.sync_round_trip = json.at("sync_round_trip_s").get<double>();
  costs.parallel_region = json.value("parallel_region_s", 0.0);
  costs.host_link_bandwidth = json.at("host_link_bytes_per_s").get<double>();
  return costs;
}

CacheLevel cache_from_json(const nlohmann::json& json) {
  CacheLevel cache{json.at("bytes").get<double>(), json.at("bandwidth_bytes_per_s").get<double>(),
                   json.at("source").get<std::string>(), {}};
  if (json.contains("beyond")) {
    for (const nlohmann::json& point : json.at("beyond"))
      cache.beyond.push_back({point.at("reuse_bytes").get<double>(), point.at("resident").get<double>()});
  }
  return cache;
}

}  // namespace

DeviceSpec device_spec_from_json(const nlohmann::json& json, const std::string& where) {
  try {
    DeviceSpec spec;
    spec.name = json.at("name").get<std::string>();
    spec.description = json.at("description").get<std::string>();
    spec.sm_count = json.at("sm_count").get<int>();
    spec.match = json.at("match").get<std::vector<std::string>>();
    spec.cache_bytes = json.value("cache_bytes", 0.0);
    spec.compute_capability = json.value("compute_capability", std::string());
    if (json.contains("datasheet")) spec.datasheet = roofs_from_json(json["datasheet"], where + ".datasheet");
    if (json.contains("measured")) spec.measured = roofs_from_json(json["measured"], where + ".measured");
    if (json.contains("fixed_costs")) spec.fixed_costs = fixed_costs_from_json(json["fixed_costs"]);
    if (json.contains("cache")) spec.cache = cache_from_json(json["cache"]);
    if (json.contains("measured_fixed_costs")) spec.measured_fixed_costs = fixed_costs_from_json(json["measured_fixed_costs"]);
    if (json.contains("measured_cache")) spec.measured_cache = cache_from_json(json["measured_cache"]);
    if (json.contains("machine")) {
      const nlohmann::json& machine = json["machine"];
      spec.machine = MachineIdentity{machine.at("hostname").get<std::string>(),
                                     machine.at("cpu_model").get<std::string>(), machine.at("threads").get<int>()};
    }
    return spec;
  } catch (const nlohmann::json::exception& error) {
    throw InputError(where, 0, "", std::string("malformed device spec: ") + error.what());
  }
}

}  // namespace decodelab
