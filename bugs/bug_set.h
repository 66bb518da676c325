// The five deviations a scenario can switch on, as plain data. The engine asks this
// at the few points where real code goes wrong; bugs/<name>.cpp supplies each deviant step.
#pragma once

#include <string>

namespace decodelab {

enum class NonContiguousMode { Copy, Strided };
enum class HostSyncPer { Token, Layer, Sequence };
enum class Fp32Scope { Norms, Matmuls, All };

struct BugSet {
  bool no_kv_cache = false;

  bool non_contiguous = false;
  NonContiguousMode non_contiguous_mode = NonContiguousMode::Copy;

  bool host_sync = false;
  HostSyncPer host_sync_per = HostSyncPer::Token;

  bool fp32_ops = false;
  Fp32Scope fp32_scope = Fp32Scope::Matmuls;

  bool sequential_generation = false;

  bool any() const { return no_kv_cache || non_contiguous || host_sync || fp32_ops || sequential_generation; }
  bool fp32_norms() const { return fp32_ops && fp32_scope != Fp32Scope::Matmuls; }
  bool fp32_matmuls() const { return fp32_ops && fp32_scope != Fp32Scope::Norms; }
  // "no_kv_cache+host_sync(per=layer)", or "none".
  std::string describe() const;
};

const char* to_string(NonContiguousMode mode);
const char* to_string(HostSyncPer per);
const char* to_string(Fp32Scope scope);

}  // namespace decodelab
