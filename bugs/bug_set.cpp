// Names of the bug variants, and a one-line description of a BugSet.
#include "bugs/bug_set.h"

namespace decodelab {

const char* to_string(NonContiguousMode mode) { return mode == NonContiguousMode::Copy ? "copy" : "strided"; }

const char* to_string(HostSyncPer per) {
  switch (per) {
    case HostSyncPer::Token: return "token";
    case HostSyncPer::Layer: return "layer";
    case HostSyncPer::Sequence: return "sequence";
  }
  return "?";
}

const char* to_string(Fp32Scope scope) {
  switch (scope) {
    case Fp32Scope::Norms: return "norms";
    case Fp32Scope::Matmuls: return "matmuls";
    case Fp32Scope::All: return "all";
  }
  return "?";
}

std::string BugSet::describe() const {
  std::string text;
  auto append = [&text](const std::string& part) { text += (text.empty() ? "" : "+") + part; };
  if (no_kv_cache) append("no_kv_cache");
  if (non_contiguous) append(std::string("non_contiguous(mode=") + to_string(non_contiguous_mode) + ")");
  if (host_sync) append(std::string("host_sync(per=") + to_string(host_sync_per) + ")");
  if (fp32_ops) append(std::string("fp32_ops(scope=") + to_string(fp32_scope) + ")");
  if (sequential_generation) append("sequential_generation");
  return text.empty() ? "none" : text;
}

}  // namespace decodelab
