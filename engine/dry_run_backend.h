// A device that runs nothing: the engine issues its ops to it exactly as to a real backend,
// and it records, per op, the memory each operand touches (its start address and logical
// bytes, read or written). Nothing is allocated: allocations are address ranges handed out
// from a counter, never dereferenced, so a llama-8b generation can be recorded on any
// machine in milliseconds. Device-to-host reads fill the host buffer with zeros.
//
// Non-obvious choice: addresses are kept (not just sizes) because what an op costs depends
// on whether its operands are still in a cache, and that depends on what else was touched
// since they were last used — which needs to know which operands are the same memory.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/backend.h"
#include "engine/operand_access.h"

namespace decodelab {

class DryRunBackend final : public Backend {
 public:
  DryRunBackend() = default;

  // Operand accesses of every op issued since the last clear, by op id (ids restart with
  // each Ops front layer, so clear between two of them).
  const std::unordered_map<OpId, std::vector<OperandAccess>>& accesses() const { return accesses_; }
  void clear_accesses() { accesses_.clear(); }
  int64_t allocated_bytes() const { return allocated_bytes_; }

  std::string name() const override { return "dry-run"; }
  std::string device_description() const override { return "dry run (no kernels)"; }

  void* allocate(size_t bytes) override;
  void release(void*) override {}
  size_t available_memory() const override { return size_t{1} << 62; }
  void upload(void*, const void*, size_t) override {}

  void upload_async(void* device_destination, const void*, size_t bytes, OpId id) override;
  void copy_to_host(void* host_destination, const void* device_source, size_t bytes, bool pinned, OpId id) override;
  void synchronize() override {}
  void marker(OpId id) override { record(id, {}); }
  std::vector<OpTiming> take_timings() override { return {}; }

  void embedding(const Tensor& table, const Tensor& tokens, const Tensor& positions, int rows_per_sequence,
                 const Tensor& out, OpId id) override;
  void rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out, OpId id) override;
  void matmul(const Tensor& x, const Tensor& weight, const Tensor& out, OpId id) override;
  void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq, int head_dim,
            OpId id) override;
  void kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache,
                const Tensor& positions, int rows_per_sequence, OpId id) override;
  void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions,
                 int rows_per_sequence, float scale, const Tensor& out, OpId id) override;
  void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out, OpId id) override;
  void add(const Tensor& a, const Tensor& b, const Tensor& out, OpId id) override;
  void argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions, OpId id) override;
  void cast(const Tensor& x, const Tensor& out, OpId id) override;
  void copy(const Tensor& src, const Tensor& out, OpId id) override;
  void fill_positions(const Tensor& out, int start, int period, OpId id) override;
  void advance_positions(const Tensor& positions, OpId id) override;

 private:
  void record(OpId id, std::vector<OperandAccess> operands) { accesses_[id] = std::move(operands); }

  uintptr_t next_address_ = uintptr_t{1} << 40;  // far from null; never dereferenced
  int64_t allocated_bytes_ = 0;
  std::unordered_map<OpId, std::vector<OperandAccess>> accesses_;
};

}  // namespace decodelab
