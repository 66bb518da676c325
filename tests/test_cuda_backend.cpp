// [cuda] The CUDA backend as a device: memory, host transfers, device timings (CUPTI or
// events), the debug sync switch and CUDA graph capture/replay. Op results are compared
// with the CPU backend in test_cuda_ops.cpp; here a captured graph must reproduce what
// the same ops compute eagerly. Without a CUDA device every case returns early.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <set>

#include "engine/base/clock.h"
#include "tests/cuda_test_support.h"
#include "tests/support/scoped_env.h"

namespace decodelab {
namespace {

using cuda_test::expect_close;
using cuda_test::make_twin;
using cuda_test::random_twin;
using cuda_test::read_cuda;
using cuda_test::Twin;

TEST_CASE("cuda availability is answered without throwing, device or not", "[cuda]") {
  bool available = false;
  REQUIRE_NOTHROW(available = cuda_device_available());
  if (!available) {
    CHECK_FALSE(cuda_unavailable_reason().empty());
    CHECK_THROWS_WITH(make_backend(BackendKind::Cuda, BackendOptions{}),
                      Catch::Contains(cuda_unavailable_reason(), Catch::CaseSensitive::Yes));
    cuda_test::report_missing_device();  // fails under DECODELAB_REQUIRE_CUDA=1
    return;
  }
  CHECK(cuda_unavailable_reason().empty());
  CHECK(cuda_backend_compiled());
  std::unique_ptr<Backend> cuda = make_backend(BackendKind::Cuda, BackendOptions{});
  CHECK(cuda->name() == "cuda");
  CHECK_FALSE(cuda->supports_graphs());  // graphs are used only when asked for
  BackendOptions with_graphs;
  with_graphs.cuda_graphs = true;
  CHECK(make_backend(BackendKind::Cuda, with_graphs)->supports_graphs());
  CHECK_FALSE(cuda->device_description().empty());
  WARN("CUDA device: " << cuda->device_description());  // in every log: the device, and CUPTI or events
}

TEST_CASE("cuda memory and host transfers round-trip", "[cuda]") {
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  Backend& cuda = *devices.cuda;
  CHECK(cuda.allocate(0) == nullptr);
  CHECK(cuda.available_memory() > 0);

  std::vector<int32_t> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<int32_t>(i * 7 - 300);
  const size_t bytes = host.size() * sizeof(int32_t);
  DeviceBuffer first(cuda, bytes);
  DeviceBuffer second(cuda, bytes);
  cuda.upload(first.get(), host.data(), bytes);

  // upload_async copies the host bytes at enqueue: overwriting them afterwards is safe.
  std::vector<int32_t> scratch = host;
  cuda.upload_async(second.get(), scratch.data(), bytes, devices.id());
  std::fill(scratch.begin(), scratch.end(), -1);

  for (bool pinned : {true, false}) {
    std::vector<int32_t> back(host.size(), 0);
    cuda.copy_to_host(back.data(), first.get(), bytes, pinned, devices.id());
    CHECK(back == host);
    std::fill(back.begin(), back.end(), 0);
    cuda.copy_to_host(back.data(), second.get(), bytes, pinned, devices.id());
    CHECK(back == host);
  }
}

TEST_CASE("cuda device timings cover every op once, inside the host's window", "[cuda]") {
  // "default": whatever the environment chose (events under compute-sanitizer); the
  // choice is restored after each pass, so later tests see it too.
  for (const char* timer : {"default", "events"}) {
    INFO("timer " << timer);
    const bool events = std::string(timer) == "events";
    const testing::ScopedEnv choice("DECODELAB_CUDA_TIMER", events ? "events" : std::getenv("DECODELAB_CUDA_TIMER"));
    DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
    Backend& cuda = *devices.cuda;
    if (events) {
      CHECK(cuda.device_description().find("CUDA events") != std::string::npos);
    }
    Twin x = random_twin(devices, DType::BF16, {4, 512}, 1);
    Twin weight = random_twin(devices, DType::BF16, {256, 512}, 2);
    Twin out = random_twin(devices, DType::BF16, {4, 256}, 3);
    Twin positions = make_twin(devices, DType::I32, {4}, {}, {0, 1, 2, 3});
    cuda.synchronize();
    cuda.take_timings();  // drop the set-up's records

    const int64_t before = now_ns();
    const OpId first_marker = devices.id();
    cuda.marker(first_marker);
    std::set<OpId> ops;
    for (int repeat = 0; repeat < 3; ++repeat) {
      const OpId matmul = devices.id();
      cuda.matmul(x.on_cuda(), weight.on_cuda(), out.on_cuda(), matmul);
      const OpId advance = devices.id();
      cuda.advance_positions(positions.on_cuda(), advance);
      ops.insert({matmul, advance});
    }
    const OpId last_marker = devices.id();
    cuda.marker(last_marker);
    cuda.synchronize();
    const int64_t after = now_ns();

    const std::vector<OpTiming> timings = cuda.take_timings();
    std::map<OpId, OpTiming> by_id;
    for (const OpTiming& timing : timings) {
      CHECK(by_id.count(timing.id) == 0);
      by_id[timing.id] = timing;
      CHECK(timing.begin_ns <= timing.end_ns);
      // The clocks are matched by calibration; allow a few milliseconds either side.
      CHECK(timing.begin_ns >= before - 5'000'000);
      CHECK(timing.end_ns <= after + 5'000'000);
    }
    for (OpId id : ops) CHECK(by_id.count(id) == 1);
    REQUIRE(by_id.count(first_marker) == 1);
    REQUIRE(by_id.count(last_marker) == 1);
    for (OpId id : ops) CHECK(by_id[id].begin_ns >= by_id[first_marker].begin_ns);
    for (OpId id : ops) CHECK(by_id[id].end_ns <= by_id[last_marker].end_ns);
    CHECK(cuda.take_timings().empty());
  }
}

TEST_CASE("cuda sync_after_launch runs ops to completion one by one", "[cuda]") {
  BackendOptions options;
  options.sync_after_launch = true;
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices, options);
  Twin a = random_twin(devices, DType::F16, {3, 100}, 4);
  Twin b = random_twin(devices, DType::F16, {3, 100}, 5);
  Twin out = random_twin(devices, DType::F16, {3, 100}, 6);
  devices.cpu->add(a.on_cpu(), b.on_cpu(), out.on_cpu(), devices.id());
  devices.cuda->add(a.on_cuda(), b.on_cuda(), out.on_cuda(), devices.id());
  expect_close(cuda_test::read_cpu(devices, out), read_cuda(devices, out), cuda_test::rounding_tolerance(DType::F16),
               "add with sync_after_launch");
}

// One decode-like step: norm, projection, attention over a long cache, greedy token,
// position advance. Run on buffers `set` of a Step.
struct Step {
  Twin hidden, norm_weight, normed, projection, query, k_cache, v_cache, attended, tokens, positions;
};

Step make_step(cuda_test::Devices& devices) {
  const int64_t capacity = 3000;
  return Step{random_twin(devices, DType::BF16, {2, 256}, 11),
              make_twin(devices, DType::BF16, {256}, {}, std::vector<float>(256, 1.0f)),
              random_twin(devices, DType::BF16, {2, 256}, 12),
              random_twin(devices, DType::BF16, {256, 256}, 13),
              random_twin(devices, DType::BF16, {2, 256}, 14),
              random_twin(devices, DType::BF16, {2, 2, capacity, 64}, 15),
              random_twin(devices, DType::BF16, {2, 2, capacity, 64}, 16),
              random_twin(devices, DType::BF16, {2, 256}, 17),
              make_twin(devices, DType::I32, {2, capacity + 8}, {}, std::vector<float>(2 * (capacity + 8), 0.0f)),
              make_twin(devices, DType::I32, {2}, {}, {2500, 2990})};
}

void run_step(Backend& cuda, const Step& step, cuda_test::Devices& devices) {
  cuda.rmsnorm(step.hidden.on_cuda(), step.norm_weight.on_cuda(), 1e-5f, step.normed.on_cuda(), devices.id());
  cuda.matmul(step.normed.on_cuda(), step.projection.on_cuda(), step.query.on_cuda(), devices.id());
  cuda.attention(step.query.on_cuda(), step.k_cache.on_cuda(), step.v_cache.on_cuda(), step.positions.on_cuda(), 1,
                 0.125f, step.attended.on_cuda(), devices.id());
  cuda.add(step.hidden.on_cuda(), step.attended.on_cuda(), step.hidden.on_cuda(), devices.id());
  cuda.argmax(step.hidden.on_cuda(), step.tokens.on_cuda(), step.positions.on_cuda(), devices.id());
  cuda.advance_positions(step.positions.on_cuda(), devices.id());
}

TEST_CASE("cuda graph replays reproduce the eager ops", "[cuda]") {
  // Either way the captured attention runs the eager plan, so replays are bit-exact:
  // after an eager step (its workspace exists), or first of all after reserve_attention
  // (what Model::reserve does before a decode step is captured).
  for (bool warm_up_first : {true, false}) {
    INFO((warm_up_first ? "eager step before capture" : "capture first, workspace reserved"));
    DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
    Backend& cuda = *devices.cuda;
    Step eager = make_step(devices);
    Step graphed = make_step(devices);
    if (warm_up_first) {
      run_step(cuda, eager, devices);
      run_step(cuda, graphed, devices);
    } else {
      const Tensor cache = graphed.k_cache.on_cuda();
      cuda.reserve_attention({graphed.query.shape[0], static_cast<int>(graphed.query.shape[1] / cache.shape[3]),
                              static_cast<int>(cache.shape[1]), static_cast<int>(cache.shape[3]), cache.shape[2]});
    }

    const std::vector<float> before_capture = read_cuda(devices, graphed.hidden);
    const OpId first_captured = devices.next_id;
    cuda.begin_capture();
    run_step(cuda, graphed, devices);
    cuda.end_capture();
    const OpId last_captured = devices.next_id - 1;
    // Capturing records; it runs nothing.
    expect_close(before_capture, read_cuda(devices, graphed.hidden), {0.0, 0.0}, "hidden after capture");

    std::set<OpId> replays;
    for (int step = 0; step < 3; ++step) {
      run_step(cuda, eager, devices);
      const OpId replay = devices.id();
      cuda.replay_captured(replay);
      replays.insert(replay);
    }
    cuda.synchronize();
    for (Twin Step::*member : {&Step::hidden, &Step::query, &Step::attended}) {
      expect_close(read_cuda(devices, eager.*member), read_cuda(devices, graphed.*member), {0.0, 0.0},
                   "graph replay vs eager");
    }
    expect_close(read_cuda(devices, eager.positions), read_cuda(devices, graphed.positions), {0.0, 0.0}, "positions");
    expect_close(read_cuda(devices, eager.tokens), read_cuda(devices, graphed.tokens), {0.0, 0.0}, "tokens");
    cuda.synchronize();
    std::set<OpId> timed;
    for (const OpTiming& timing : cuda.take_timings()) timed.insert(timing.id);
    for (OpId replay : replays) CHECK(timed.count(replay) == 1);
    for (OpId id = first_captured; id <= last_captured; ++id) CHECK(timed.count(id) == 0);
  }
}

TEST_CASE("cuda refuses host transfers and syncs during a capture, and recovers", "[cuda]") {
  DECODELAB_CUDA_DEVICES_OR_SKIP(devices);
  Backend& cuda = *devices.cuda;
  Twin positions = make_twin(devices, DType::I32, {4}, {}, {1, 2, 3, 4});
  cuda.begin_capture();
  std::vector<int32_t> host(4);
  CHECK_THROWS_AS(cuda.copy_to_host(host.data(), positions.cuda_buffer.get(), 16, true, devices.id()),
                  std::logic_error);
  CHECK_THROWS_AS(cuda.synchronize(), std::logic_error);
  cuda.advance_positions(positions.on_cuda(), devices.id());
  cuda.end_capture();
  cuda.replay_captured(devices.id());
  CHECK(read_cuda(devices, positions) == std::vector<float>{2, 3, 4, 5});
}

}  // namespace
}  // namespace decodelab
