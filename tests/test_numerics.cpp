// Numerical health: host scans of fp32/fp16/bf16 data and strided device views; a
// checkpoint whose fp16 weights overflow makes NaN/Inf logits, which a run reports as an
// error (exit 1); --check-numerics names the first op whose output went non-finite, and
// a NaN stored in the weights is named as such. A healthy run passes the check.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/cpu/cpu_backend.h"
#include "engine/device_buffer.h"
#include "engine/base/errors.h"
#include "engine/numerics.h"
#include "lab/run/runner.h"
#include "support/cli_runner.h"
#include "support/safetensors_writer.h"
#include "support/temp_dir.h"
#include "tests/support/engine_fixtures.h"

using namespace decodelab;
using namespace decodelab::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// A two-layer checkpoint in fp16 (lab-tiny's shape with a short context) in `dir`/model,
// with `edit` applied to its tensors, and a scenario using it; returns the scenario path.
template <typename Edit>
std::filesystem::path checkpoint_scenario(const TempDir& dir, Edit&& edit) {
  ModelConfig config = lab_tiny_config();
  config.max_position_embeddings = 64;
  std::vector<HostTensor> tensors = llama_tensors(config, DType::F16, 5);
  for (HostTensor& tensor : tensors) edit(tensor);
  std::filesystem::create_directories(dir.path() / "model");
  write_json(dir.path() / "model" / "config.json", hf_config_json(config, DType::F16));
  write_safetensors(dir.path() / "model" / "model.safetensors", tensors);
  return dir.write("overflow.yaml",
                   "model: model\ndtype: fp16\nbackend: cpu\n"
                   "workload: {requests: 2, batch_size: 2, prompt_tokens: 5, new_tokens: 3}\n"
                   "run: {warmup: 0, repeats: 1}\n");
}

// up_proj of layer 0 holds ±60000: finite in fp16 (max 65504), but its products with a
// normalised hidden state sum far beyond it, so the up half of the fused gate/up matmul's
// fp16 output is ±inf.
void overflowing_up_proj(HostTensor& tensor) {
  if (tensor.name != "model.layers.0.mlp.up_proj.weight") return;
  for (float& value : tensor.values) value = value >= 0 ? 60000.0f : -60000.0f;
}

}  // namespace

TEST_CASE("host scans find NaN and Inf in every float dtype", "[numerics]") {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    INFO(dtype_name(dtype));
    std::vector<uint8_t> data(8 * dtype_size(dtype));
    for (size_t i = 0; i < 8; ++i) store_from_float(data.data(), dtype, i, static_cast<float>(i) - 3.5f);
    CHECK(scan_non_finite(data.data(), dtype, 8).count == 0);
    store_from_float(data.data(), dtype, 5, -kInf);
    store_from_float(data.data(), dtype, 6, kNan);
    const NonFiniteScan scan = scan_non_finite(data.data(), dtype, 8);
    CHECK(scan.count == 2);
    CHECK(scan.first == 5);
    CHECK(non_finite_name(scan.first_value) == "-inf");
  }
  const int32_t integers[2] = {-1, 0x7fc00000};  // bit patterns of NaN mean nothing in an int tensor
  CHECK(scan_non_finite(integers, DType::I32, 2).count == 0);
}

TEST_CASE("a device scan reads a strided view in its own order and skips what lies between", "[numerics]") {
  auto backend = make_cpu_backend({});
  DeviceBuffer buffer(*backend, 4 * 6 * 4);
  std::vector<float> values(24, 1.0f);
  values[1 * 6 + 5] = kNan;  // outside the view: columns 4..5 are not part of it
  values[2 * 6 + 3] = kInf;  // inside: row 2, column 3
  backend->upload(buffer.get(), values.data(), values.size() * 4);
  Tensor view = Tensor::strided(buffer.get(), DType::F32, {4, 4}, {6, 1});
  const NonFiniteScan scan = scan_device_tensor(*backend, view, 1);
  CHECK(scan.count == 1);
  CHECK(index_string(view, scan.first) == "[2,3]");
  CHECK(non_finite_name(scan.first_value) == "inf");
}

TEST_CASE("NaN or Inf in the logits is an error naming the scenario and the way to find it", "[numerics]") {
  const TempDir dir;
  const Scenario scenario = load_scenario(checkpoint_scenario(dir, overflowing_up_proj));
  RunOptions options;
  CHECK_THROWS_AS(run_scenario(scenario, options), NumericalError);
  CHECK_THROWS_WITH(run_scenario(scenario, options),
                    StartsWith("scenario overflow (model fp16): ") && Contains("of 1024 logits are NaN or Inf") &&
                        Contains("--check-numerics"));
}

TEST_CASE("check-numerics names the first op whose output is not finite", "[numerics]") {
  const TempDir dir;
  const Scenario scenario = load_scenario(checkpoint_scenario(dir, overflowing_up_proj));
  RunOptions options;
  options.check_numerics = true;
  CHECK_THROWS_WITH(run_scenario(scenario, options),
                    Contains("(--check-numerics): the first non-finite value comes from matmul 'gate_up_proj' in "
                             "layer 0 of the prefill (group 0): its output [10,704] fp16 holds") &&
                        Contains("non-finite values (the first: "));
}

TEST_CASE("check-numerics blames a weight that is already NaN in the checkpoint", "[numerics]") {
  const TempDir dir;
  const Scenario scenario = load_scenario(checkpoint_scenario(dir, [](HostTensor& tensor) {
    if (tensor.name == "model.layers.1.self_attn.k_proj.weight") tensor.values[7] = kNan;
  }));
  RunOptions options;
  options.check_numerics = true;
  CHECK_THROWS_WITH(run_scenario(scenario, options),
                    Contains("the weights hold a non-finite value: model.layers.1.self_attn.k_proj.weight [64,128] "
                             "fp16 holds 1 non-finite value (the first: nan at [0,7])"));
}

TEST_CASE("a healthy run passes --check-numerics with the same tokens", "[numerics]") {
  const TempDir dir;
  const Scenario scenario = load_scenario(checkpoint_scenario(dir, [](HostTensor&) {}));
  RunOptions options;
  const RunResult plain = run_scenario(scenario, options);
  options.check_numerics = true;
  RunResult checked;
  REQUIRE_NOTHROW(checked = run_scenario(scenario, options));
  CHECK(checked.tokens == plain.tokens);
}

TEST_CASE("the binary exits 1 with one line for NaN logits, naming the op with --check-numerics", "[numerics][cli]") {
  const TempDir dir;
  const auto scenario = checkpoint_scenario(dir, overflowing_up_proj).string();
  const auto json = (dir.path() / "result.json").string();
  const size_t entries = dir.entry_count();

  const CommandResult plain = run_decodelab({"run", scenario, "--json", json, "--quiet"});
  CHECK(plain.exit_code == 1);
  CHECK_THAT(plain.err, StartsWith("decodelab: failed: scenario overflow") && Contains("NaN or Inf"));
  CHECK(std::count(plain.err.begin(), plain.err.end(), '\n') == 1);

  const CommandResult checked = run_decodelab({"run", scenario, "--json", json, "--quiet", "--check-numerics"});
  CHECK(checked.exit_code == 1);
  CHECK_THAT(checked.err, Contains("matmul 'gate_up_proj' in layer 0 of the prefill"));
  CHECK(dir.entry_count() == entries);  // no result file, no temporary
}
