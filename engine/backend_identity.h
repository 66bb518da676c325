// Which backend and device a run used, as a trace records them: all that the parts of
// profiling which know no Backend (the trace and its readers, the model, the diagnosis)
// need of one. Apart from engine/backend.h so that naming a device does not bring in the
// Backend's interface (docs/architecture.md, "Layers").
#pragma once

#include <string>

namespace decodelab {

struct BackendIdentity {
  std::string backend;  // Backend::name(): "cpu" | "cuda"
  std::string device;   // Backend::device_description(), e.g. "AMD EPYC (2 threads)"
};

}  // namespace decodelab
