// Scenario predictions (see predict.h): record, price, read the metrics a run reports.
#include "lab/predict/predict.h"

#include "engine/backend.h"
#include "engine/events/op_stream.h"
#include "lab/predict/row_prediction.h"
#include "profiling/measure/calibration.h"
#include "profiling/measure/default_roofs.h"

namespace decodelab {

ScenarioPrediction predict_scenario(const Scenario& scenario, const DeviceSpec& device) {
  const OpStream stream =
      record_generation(scenario.model_config, scenario.dtype, scenario.workload, scenario.bugs);
  ScenarioPrediction result;
  result.scenario = scenario;
  result.prediction = predict_op_stream(stream, prediction_inputs(device, scenario.workload.host_overhead_us * 1e-6));
  result.metrics = repeat_metrics(result.prediction.timing, scenario.model_config, scenario.dtype, scenario.workload);
  return result;
}

SlowdownPrediction predict_slowdown(const Scenario& buggy, const DeviceSpec& device) {
  SlowdownPrediction result;
  result.buggy = predict_scenario(buggy, device);
  result.fixed = predict_scenario(fixed_twin(buggy), device);
  const double buggy_rate = result.buggy.metrics.decode_tokens_per_s;
  result.decode_slowdown = buggy_rate > 0 ? result.fixed.metrics.decode_tokens_per_s / buggy_rate : 0.0;
  const double fixed_total = result.fixed.prediction.timing.total_ms;
  result.end_to_end_slowdown = fixed_total > 0 ? result.buggy.prediction.timing.total_ms / fixed_total : 0.0;
  return result;
}

DeviceSpec prediction_device(const std::string& name_or_measured, int threads, std::ostream* progress) {
  if (name_or_measured != "measured") return named_device(name_or_measured, "--device");
  BackendOptions options;
  options.threads = threads;
  options.cpu_kernels = calibrated_cpu_kernels(threads);  // the kernels the calibration measured
  const std::unique_ptr<Backend> cpu = make_backend(BackendKind::Cpu, options);
  return default_device_spec(*cpu, threads, progress);
}

}  // namespace decodelab
