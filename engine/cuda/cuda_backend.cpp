// The CUDA backend's device side: device choice, memory (plain cudaMalloc, never managed
// memory), the one non-blocking stream, host transfers through pinned staging, device
// times (CUPTI, else CUDA events) and CUDA graph capture of a stretch of the stream.
// The non-obvious choice: the CUPTI timer must prove itself at start-up (a kernel, a
// cuBLAS GEMM and a copy must come back timed and plausible) or the backend falls back
// to events, so a sandbox or an attached profiler that breaks CUPTI costs precision,
// never the run.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/base/clock.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/cuda_backend_impl.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/host/argmax_plan.h"
#include "engine/cuda/nvtx.h"
#include "engine/base/errors.h"

namespace decodelab {

namespace {

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

}  // namespace

std::string cuda_device_problem() {
  try {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaSuccess) return count > 0 ? "" : "cudaGetDeviceCount found no CUDA device";
    cudaGetLastError();  // no driver or no device is an answer, not an error to report again
    std::string problem = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status) + " (" +
                          cudaGetErrorName(status) + ")";
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    if (driver == 0) {
      problem += "; no NVIDIA driver is loaded";
    } else if (driver < runtime) {
      problem += "; the driver supports CUDA up to " + cuda_version_text(driver) + ", this build's runtime is CUDA " +
                 cuda_version_text(runtime);
    }
    return problem;
  } catch (...) {
    return "the CUDA runtime could not be queried";
  }
}

int cuda_device_count() {
  if (!cuda_device_problem().empty()) return 0;
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) {
  return std::make_unique<cuda::CudaBackend>(options);
}

namespace cuda {

namespace {

constexpr size_t kCublasWorkspaceBytes = 32u << 20;  // cuBLAS's recommendation for Hopper

bool env_flag(const char* name) {
  const char* value = std::getenv(name);
  return value && std::strcmp(value, "0") != 0 && value[0] != '\0';
}

std::string mebibytes(size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

// --- op scope ----------------------------------------------------------------------

CudaBackend::OpScope::OpScope(CudaBackend& backend, const char* name, OpId id)
    : backend_(backend), id_(id), timed_(!backend.capturing_) {
  nvtxRangePushA(name);
  if (timed_) {
    try {
      backend_.timer_->begin(id_);
    } catch (...) {
      nvtxRangePop();
      throw;
    }
  }
}

CudaBackend::OpScope::~OpScope() {
  if (!finished_ && timed_) backend_.timer_->cancel(id_);
  nvtxRangePop();
}

void CudaBackend::OpScope::finish() {
  finished_ = true;
  if (timed_) backend_.timer_->end(id_);
  if (backend_.sync_after_launch_ && !backend_.capturing_) CUDA_CHECK(cudaStreamSynchronize(backend_.stream_));
}

// --- construction -------------------------------------------------------------------

CudaBackend::CudaBackend(const BackendOptions& options)
    : sync_after_launch_(options.sync_after_launch || env_flag("DECODELAB_CUDA_SYNC")),
      graphs_enabled_(options.cuda_graphs) {
  if (const std::string problem = cuda_device_problem(); !problem.empty())
    throw std::runtime_error("the CUDA backend needs a CUDA device, and none is usable: " + problem);
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaFree(nullptr));  // create the context now, not inside the first timed op
  cudaDeviceProp properties{};
  CUDA_CHECK(cudaGetDeviceProperties(&properties, device_));
  device_name_ = properties.name;
  total_memory_ = properties.totalGlobalMem;
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors_, cudaDevAttrMultiProcessorCount, device_));
  attention_workspace_ = AttentionWorkspace(multiprocessors_);

  try {
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaMalloc(&cublas_workspace_, kCublasWorkspaceBytes));
    CUDA_CHECK(cudaMalloc(&argmax_workspace_, argmax_workspace_bytes()));
    matmul_ = std::make_unique<CublasMatmul>(stream_, cublas_workspace_, kCublasWorkspaceBytes);
    choose_timer();
  } catch (...) {
    matmul_.reset();
    timer_.reset();
    cudaFree(cublas_workspace_);
    cudaFree(argmax_workspace_);
    if (stream_) cudaStreamDestroy(stream_);
    throw;
  }
}

CudaBackend::~CudaBackend() {
  // Nothing here may throw; after a device fault these calls fail, and that is fine.
  if (capturing_) {
    cudaGraph_t abandoned = nullptr;
    if (cudaStreamEndCapture(stream_, &abandoned) == cudaSuccess && abandoned) cudaGraphDestroy(abandoned);
  }
  cudaStreamSynchronize(stream_);
  if (graph_) cudaGraphExecDestroy(graph_);
  matmul_.reset();
  timer_.reset();
  cudaFree(cublas_workspace_);
  cudaFree(argmax_workspace_);
  cudaStreamDestroy(stream_);
  cudaGetLastError();
}

void CudaBackend::choose_timer() {
  const char* choice = std::getenv("DECODELAB_CUDA_TIMER");
  if (!(choice && std::strcmp(choice, "events") == 0)) {
    std::string why_not;
    std::unique_ptr<OpTimer> cupti = make_cupti_timer(stream_, why_not);
    if (cupti && timer_self_test(*cupti)) {
      timer_ = std::move(cupti);
      return;
    }
    if (cupti) {
      why_not = "CUPTI records were missing or implausible in the start-up self-test";
      abandon_cupti(why_not);
    }
    timer_note_ = why_not;
    if (!why_not.empty() && why_not.rfind("DECODELAB_CUDA_TIMER", 0) != 0) {
      std::fprintf(stderr, "decodelab: CUDA device times from events, not CUPTI: %s\n", why_not.c_str());
    }
  } else {
    timer_note_ = "DECODELAB_CUDA_TIMER=events";
  }
  timer_ = make_event_timer(stream_);
}

// Times a kernel, a cuBLAS GEMM and a device-to-device copy through `timer`; true when
// all three come back with intervals inside the host's before/after window.
bool CudaBackend::timer_self_test(OpTimer& timer) {
  constexpr OpId kKernel = 1, kGemm = 2, kCopy = 3;
  void* buffer = nullptr;
  CUDA_CHECK(cudaMalloc(&buffer, 4096));
  bool passed = false;
  try {
    CUDA_CHECK(cudaMemsetAsync(buffer, 0, 4096, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    timer.take();  // drop anything earlier
    const int64_t before = now_ns();
    timer.marker(kKernel);
    KernelTensor matrix;
    matrix.data = buffer;
    matrix.dtype = DType::F32;
    matrix.rank = 2;
    matrix.shape[0] = matrix.shape[1] = 8;
    matrix.strides[0] = 8;
    matrix.strides[1] = 1;
    KernelTensor product = matrix;
    product.data = static_cast<char*>(buffer) + 1024;
    timer.begin(kGemm);
    matmul_->run(matrix, matrix, product, [](size_t, int) -> void* { return nullptr; });
    timer.end(kGemm);
    timer.begin(kCopy);
    CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(buffer) + 2048, buffer, 1024, cudaMemcpyDeviceToDevice, stream_));
    timer.end(kCopy);
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    const int64_t after = now_ns();
    const std::vector<OpTiming> timings = timer.take();
    int plausible = 0;
    for (const OpTiming& timing : timings) {
      const bool ours = timing.id == kKernel || timing.id == kGemm || timing.id == kCopy;
      const int64_t slack = 50'000'000;  // clocks calibrated independently; 50 ms is generous
      if (ours && timing.begin_ns <= timing.end_ns && timing.begin_ns >= before - slack && timing.end_ns <= after + slack) {
        ++plausible;
      }
    }
    passed = plausible == 3;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "decodelab: CUPTI self-test failed: %s\n", error.what());
    passed = false;
  }
  cudaFree(buffer);
  return passed;
}

std::string CudaBackend::device_description() const {
  int runtime = 0;
  int driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::string text = device_name_ + " (" + std::to_string(multiprocessors_) + " SMs, " + mebibytes(total_memory_) +
                     ", CUDA runtime " + cuda_version_text(runtime) + ", driver " + cuda_version_text(driver) +
                     ", device times: " + timer_->source();
  if (!timer_note_.empty() && timer_note_.rfind("DECODELAB_CUDA_TIMER", 0) != 0) text += " (" + timer_note_ + ")";
  return text + ")";
}

// --- memory -------------------------------------------------------------------------

void* CudaBackend::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  require_not_capturing("allocate");
  void* pointer = nullptr;
  const cudaError_t status = cudaMalloc(&pointer, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it so later checks do not report it again
    throw ResourceError("CUDA: cannot allocate " + mebibytes(bytes) + " on " + device_name_ + " (" +
                        mebibytes(available_memory()) + " free of " + mebibytes(total_memory_) + ")");
  }
  CUDA_CHECK(status);
  return pointer;
}

void CudaBackend::release(void* pointer) {
  if (pointer == nullptr) return;
  require_not_capturing("release");
  CUDA_CHECK(cudaFree(pointer));
}

size_t CudaBackend::available_memory() const {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

void CudaBackend::upload(void* device_destination, const void* host_source, size_t bytes) {
  if (bytes == 0) return;
  require_not_capturing("upload");
  // On our stream, so it is ordered after everything enqueued before it; then waited for.
  CUDA_CHECK(cudaMemcpyAsync(device_destination, host_source, bytes, cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void* CudaBackend::scratch(int slot, size_t bytes) { return scratch_.get(slot, bytes, !capturing_); }

ScratchProvider CudaBackend::matmul_scratch() {
  // Slots 0-2 are the matmul's (its own numbering); attention uses slot 8.
  return [this](size_t bytes, int slot) { return scratch(slot, bytes); };
}

void CudaBackend::require_not_capturing(const char* what) const {
  if (capturing_) {
    throw std::logic_error(std::string("cuda ") + what +
                           ": not allowed while a CUDA graph is being captured (do it before begin_capture())");
  }
}

// --- stream -------------------------------------------------------------------------

void CudaBackend::upload_async(void* device_destination, const void* host_source, size_t bytes, OpId id) {
  require_not_capturing("upload_async");
  if (bytes == 0) return;
  const void* pinned = staging_.stage(host_source, bytes);
  OpScope scope(*this, "memcpy_htod", id);
  CUDA_CHECK(cudaMemcpyAsync(device_destination, pinned, bytes, cudaMemcpyHostToDevice, stream_));
  staging_.release_after(stream_);
  scope.finish();
}

void CudaBackend::copy_to_host(void* host_destination, const void* device_source, size_t bytes, bool pinned,
                               OpId id) {
  require_not_capturing("copy_to_host");
  if (bytes == 0) return;
  if (pinned) {
    void* buffer = staging_.read_buffer(bytes);
    OpScope scope(*this, "memcpy_dtoh", id);
    CUDA_CHECK(cudaMemcpyAsync(buffer, device_source, bytes, cudaMemcpyDeviceToHost, stream_));
    scope.finish();
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::memcpy(host_destination, buffer, bytes);
  } else {
    // Pageable destination: the driver stages it, and the call returns when it is done.
    OpScope scope(*this, "memcpy_dtoh", id);
    CUDA_CHECK(cudaMemcpyAsync(host_destination, device_source, bytes, cudaMemcpyDeviceToHost, stream_));
    scope.finish();
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
}

void CudaBackend::synchronize() {
  require_not_capturing("synchronize");
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::marker(OpId id) {
  if (capturing_) return;  // a captured op is never reported on its own (backend.h)
  NvtxRange range("marker");
  timer_->marker(id);
}

std::vector<OpTiming> CudaBackend::take_timings() {
  if (capturing_) return {};
  return timer_->take();
}

// --- graphs -------------------------------------------------------------------------

void CudaBackend::begin_capture() {
  require_not_capturing("begin_capture");
  // Thread-local mode: only this thread's unsafe calls (allocation, sync) break the capture.
  CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
}

void CudaBackend::end_capture() {
  if (!capturing_) throw std::logic_error("cuda end_capture: no capture in progress");
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  if (graph == nullptr) throw std::runtime_error("cuda end_capture: the capture produced no graph");
  cudaGraphExec_t executable = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&executable, graph, 0);
  cudaGraphDestroy(graph);  // the executable keeps what it needs
  CUDA_CHECK(status);
  if (graph_) CUDA_CHECK(cudaGraphExecDestroy(graph_));
  graph_ = executable;
}

void CudaBackend::replay_captured(OpId id) {
  require_not_capturing("replay_captured");
  if (graph_ == nullptr) throw std::logic_error("cuda replay_captured: nothing has been captured");
  OpScope scope(*this, "graph_replay", id);
  CUDA_CHECK(cudaGraphLaunch(graph_, stream_));
  scope.finish();
}

}  // namespace cuda
}  // namespace decodelab
