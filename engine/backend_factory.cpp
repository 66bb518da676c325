// Chooses and constructs a backend. The CUDA backend exists only in CUDA builds.
#include <stdexcept>

#include "engine/backend.h"
#include "engine/cpu/cpu_backend.h"
#if DECODELAB_HAVE_CUDA
#include "engine/cuda/cuda_backend.h"
#endif

namespace decodelab {

bool cuda_backend_compiled() {
#if DECODELAB_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

bool cuda_device_available() {
#if DECODELAB_HAVE_CUDA
  return cuda_device_count() > 0;
#else
  return false;
#endif
}

std::string cuda_unavailable_reason() {
#if DECODELAB_HAVE_CUDA
  return cuda_device_problem();
#else
  return "this build of decodelab has no CUDA backend (configure with DECODELAB_CUDA=ON)";
#endif
}

std::unique_ptr<Backend> make_backend(BackendKind kind, const BackendOptions& options) {
  if (kind == BackendKind::Cpu) return make_cpu_backend(options);
#if DECODELAB_HAVE_CUDA
  if (const std::string problem = cuda_unavailable_reason(); !problem.empty())
    throw std::runtime_error("the CUDA backend needs a CUDA device, and none is usable: " + problem);
  return make_cuda_backend(options);
#else
  throw std::runtime_error("this build of decodelab has no CUDA backend (configure with DECODELAB_CUDA=ON)");
#endif
}

}  // namespace decodelab
