// Printable names of op categories and host calls (trace files and reports use them; range
// names are inline in the header).
#include "engine/events/event_sink.h"

namespace decodelab {

const char* op_category_name(OpCategory category) {
  switch (category) {
    case OpCategory::Matmul: return "matmul";
    case OpCategory::Attention: return "attention";
    case OpCategory::Norm: return "norm";
    case OpCategory::Rope: return "rope";
    case OpCategory::Activation: return "activation";
    case OpCategory::Elementwise: return "elementwise";
    case OpCategory::Copy: return "copy";
    case OpCategory::Cast: return "cast";
    case OpCategory::Embedding: return "embedding";
    case OpCategory::Sampling: return "sampling";
    case OpCategory::Memcpy: return "memcpy";
    case OpCategory::Marker: return "marker";
    case OpCategory::Other: return "other";
  }
  return "other";
}

const char* host_call_kind_name(HostCallKind kind) {
  switch (kind) {
    case HostCallKind::Enqueue: return "enqueue";
    case HostCallKind::Synchronize: return "synchronize";
    case HostCallKind::DeviceToHost: return "device_to_host";
    case HostCallKind::HostToDevice: return "host_to_device";
  }
  return "?";
}

}  // namespace decodelab
