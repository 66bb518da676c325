// The CPU backend's threads: the kernels run on the stream worker's OpenMP team (the
// worker plus threads - 1 helpers) and nothing else stays behind — host-side weight
// generation uses short-lived threads, so no second OpenMP team competes with the
// kernels for the cores (issue 7: no oversubscription between the stream thread and the
// kernel threads). Each ctest case is its own process, so the counts start clean.
#include <catch2/catch.hpp>
#include <filesystem>

#include "engine/cpu/cpu_backend.h"
#include "engine/device_buffer.h"
#include "engine/model/weights.h"
#include "tests/support/engine_fixtures.h"

using namespace decodelab;

namespace {

int64_t process_threads() {
  int64_t count = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++count;
  return count;
}

// One matmul large enough to run in parallel, so the worker's team exists.
void run_parallel_matmul(Backend& backend) {
  const int64_t k = 1024, n = 1024;
  DeviceBuffer x(backend, k * 4), w(backend, n * k * 4), out(backend, n * 4);
  backend.matmul(Tensor::contiguous(x.get(), DType::F32, {1, k}), Tensor::contiguous(w.get(), DType::F32, {n, k}),
                 Tensor::contiguous(out.get(), DType::F32, {1, n}), 1);
  backend.synchronize();
}

}  // namespace

TEST_CASE("cpu backend: kernel threads are the worker's team, weight generation leaves no thread behind",
          "[cpu][threads]") {
  const int64_t at_start = process_threads();
  BackendOptions options;
  options.threads = 2;
  const auto backend = make_cpu_backend(options);
  run_parallel_matmul(*backend);
  const int64_t with_team = process_threads();
  // The stream worker and its one OpenMP helper.
  CHECK(with_team - at_start == 2);

  const ModelWeights weights = random_weights(*backend, testing::lab_tiny_config(), DType::F16, 3);
  run_parallel_matmul(*backend);
  CHECK(process_threads() == with_team);
}
