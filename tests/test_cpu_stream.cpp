// The CPU stream and the backend's stream-facing calls: enqueue returns before the
// command runs, commands run in order (also across the ring's wrap-around), synchronize
// waits and rethrows a command's error once, timings come back once per id with
// begin <= end in enqueue order, copies to the host see earlier results, and uploads
// capture their bytes at enqueue. No assertion depends on how long anything takes.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/cpu/stream.h"
#include "tests/cpu_test_support.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

// Waits (up to a generous bound, so a broken stream fails instead of hanging) for flag.
bool wait_for(const std::atomic<bool>& flag) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

TEST_CASE("cpu stream: enqueue returns before the command runs", "[cpu][stream]") {
  cpu::CpuStream stream(1);
  std::atomic<bool> released{false};
  std::atomic<bool> ran{false};
  std::atomic<bool> saw_release{false};
  // The command can only see `released` if enqueue returned while it was still queued or
  // running: a synchronous enqueue would run it first and it would time out.
  stream.enqueue(1, [&] {
    saw_release = wait_for(released);
    ran = true;
  });
  const bool ran_before_return = ran.load();
  released = true;
  stream.synchronize();
  CHECK_FALSE(ran_before_return);
  CHECK(saw_release.load());
  CHECK(ran.load());
}

TEST_CASE("cpu stream: commands run in enqueue order, across ring wrap-around", "[cpu][stream]") {
  cpu::CpuStream stream(1);
  const int count = static_cast<int>(3 * cpu::CpuStream::kCapacity + 17);  // the host must wait for free slots
  std::vector<int> order;
  order.reserve(count);
  for (int i = 0; i < count; ++i) stream.enqueue(static_cast<OpId>(i + 1), [&order, i] { order.push_back(i); });
  stream.synchronize();
  REQUIRE(order.size() == static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) REQUIRE(order[i] == i);
}

TEST_CASE("cpu stream: synchronize waits for every enqueued command", "[cpu][stream]") {
  cpu::CpuStream stream(1);
  std::atomic<int> finished{0};
  for (int i = 0; i < 3; ++i) {
    stream.enqueue(static_cast<OpId>(i + 1), [&finished] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ++finished;
    });
  }
  stream.synchronize();
  CHECK(finished.load() == 3);
}

TEST_CASE("cpu stream: a command's error surfaces once, at the next synchronize", "[cpu][stream]") {
  cpu::CpuStream stream(1);
  bool later_ran = false;
  stream.enqueue(1, [] { throw std::runtime_error("device fault in op 1"); });
  stream.enqueue(2, [&later_ran] { later_ran = true; });  // the stream keeps going
  CHECK_THROWS_WITH(stream.synchronize(), "device fault in op 1");
  CHECK(later_ran);
  CHECK_NOTHROW(stream.synchronize());
  stream.drain();  // drain never throws
}

TEST_CASE("cpu stream: timings are reported once per id, ordered, begin <= end", "[cpu][stream]") {
  cpu::CpuStream stream(2);
  const int count = 300;
  for (int i = 0; i < count; ++i) {
    stream.enqueue(static_cast<OpId>(100 + i), [i] {
      volatile double sink = 0;  // a little work, more for some commands
      for (int j = 0; j < (i % 7) * 200; ++j) sink = sink + j;
    });
  }
  stream.synchronize();
  const std::vector<OpTiming> timings = stream.take_timings();
  REQUIRE(timings.size() == static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    INFO("command " << i);
    CHECK(timings[i].id == static_cast<OpId>(100 + i));
    CHECK(timings[i].begin_ns <= timings[i].end_ns);
    if (i > 0) CHECK(timings[i - 1].end_ns <= timings[i].begin_ns);
  }
  CHECK(stream.take_timings().empty());  // handed over once
}

TEST_CASE("cpu stream: the destructor finishes queued work", "[cpu][stream]") {
  std::atomic<int> finished{0};
  {
    cpu::CpuStream stream(1);
    for (int i = 0; i < 50; ++i) stream.enqueue(static_cast<OpId>(i + 1), [&finished] { ++finished; });
  }
  CHECK(finished.load() == 50);
}

TEST_CASE("cpu backend: copy_to_host sees the results of earlier ops", "[cpu][stream]") {
  const bool pinned = GENERATE(true, false);
  CpuFixture fixture;
  Backend& backend = *fixture.backend;
  const Tensor a = fixture.upload(DType::F32, {1, 1000}, random_values(1000, DType::F32, 131));
  const Tensor b = fixture.upload(DType::F32, {1, 1000}, random_values(1000, DType::F32, 132));
  const Tensor sum = fixture.tensor(DType::F32, {1, 1000});
  backend.add(a, b, sum, fixture.id());
  backend.add(sum, sum, sum, fixture.id());  // in order: doubles the first add's result
  std::vector<float> host(1000, -1.0f);
  backend.copy_to_host(host.data(), sum.data, host.size() * sizeof(float), pinned, fixture.id());
  const std::vector<float> a_host = fixture.read(a), b_host = fixture.read(b);
  for (int i = 0; i < 1000; ++i) REQUIRE(host[i] == (a_host[i] + b_host[i]) * 2.0f);
}

TEST_CASE("cpu backend: upload_async captures the host bytes at enqueue", "[cpu][stream]") {
  const size_t count = GENERATE(size_t{4}, size_t{5000});  // inline and heap-held copies
  CpuFixture fixture;
  Backend& backend = *fixture.backend;
  const Tensor device = fixture.tensor(DType::I32, {static_cast<int64_t>(count)});
  std::vector<int32_t> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = static_cast<int32_t>(i * 3 + 1);
  const std::vector<int32_t> sent = host;
  backend.upload_async(device.data, host.data(), count * sizeof(int32_t), fixture.id());
  std::fill(host.begin(), host.end(), -7);  // the caller may reuse its buffer at once
  backend.advance_positions(device, fixture.id());
  const std::vector<int32_t> result = fixture.read_i32(device);
  for (size_t i = 0; i < count; ++i) REQUIRE(result[i] == sent[i] + 1);
}

TEST_CASE("cpu backend: upload waits for queued ops that use its destination", "[cpu][stream]") {
  CpuFixture fixture;
  Backend& backend = *fixture.backend;
  const Tensor positions = fixture.upload_i32({4}, {0, 0, 0, 0});
  for (int i = 0; i < 200; ++i) backend.advance_positions(positions, fixture.id());
  const std::vector<int32_t> replacement = {9, 9, 9, 9};
  backend.upload(positions.data, replacement.data(), replacement.size() * sizeof(int32_t));
  CHECK(fixture.read_i32(positions) == replacement);  // no queued advance ran after the upload
}

TEST_CASE("cpu backend: markers and ops report their ids after a sync", "[cpu][stream]") {
  CpuFixture fixture;
  Backend& backend = *fixture.backend;
  backend.synchronize();
  backend.take_timings();
  const Tensor positions = fixture.upload_i32({2}, {0, 0});
  backend.marker(1001);
  backend.advance_positions(positions, 1002);
  backend.marker(1003);
  backend.synchronize();
  const std::vector<OpTiming> timings = backend.take_timings();
  REQUIRE(timings.size() == 3);
  CHECK(timings[0].id == 1001);
  CHECK(timings[1].id == 1002);
  CHECK(timings[2].id == 1003);
  CHECK(timings[0].end_ns <= timings[1].begin_ns);
  CHECK(timings[1].end_ns <= timings[2].begin_ns);
}

TEST_CASE("cpu backend: memory is aligned and described", "[cpu][stream]") {
  CpuFixture fixture;
  Backend& backend = *fixture.backend;
  for (size_t bytes : {size_t{1}, size_t{63}, size_t{4096}, size_t{1} << 20}) {
    void* pointer = fixture.allocate(bytes);
    CHECK(reinterpret_cast<uintptr_t>(pointer) % 64 == 0);
  }
  CHECK(backend.available_memory() > 0);
  CHECK(backend.name() == "cpu");
  CHECK(backend.device_description().find("threads") != std::string::npos);
  CHECK_FALSE(backend.supports_graphs());
}
