// The dry-run device: address ranges instead of memory, operand accesses instead of kernels.
#include "engine/dry_run_backend.h"

#include <cstring>

namespace decodelab {

namespace {

OperandAccess read(const Tensor& tensor) {
  return {reinterpret_cast<uintptr_t>(tensor.data), static_cast<int64_t>(tensor.bytes()), false};
}
OperandAccess written(const Tensor& tensor) {
  return {reinterpret_cast<uintptr_t>(tensor.data), static_cast<int64_t>(tensor.bytes()), true};
}

}  // namespace

void* DryRunBackend::allocate(size_t bytes) {
  // 256-byte aligned like cudaMalloc, with a gap so that no two allocations touch.
  const uintptr_t address = next_address_;
  next_address_ += ((bytes + 255) / 256) * 256 + 256;
  allocated_bytes_ += static_cast<int64_t>(bytes);
  return reinterpret_cast<void*>(address);
}

void DryRunBackend::upload_async(void* device_destination, const void*, size_t bytes, OpId id) {
  record(id, {{reinterpret_cast<uintptr_t>(device_destination), static_cast<int64_t>(bytes), true}});
}

void DryRunBackend::copy_to_host(void* host_destination, const void* device_source, size_t bytes, bool, OpId id) {
  std::memset(host_destination, 0, bytes);
  record(id, {{reinterpret_cast<uintptr_t>(device_source), static_cast<int64_t>(bytes), false}});
}

void DryRunBackend::embedding(const Tensor& table, const Tensor& tokens, const Tensor& positions, int,
                              const Tensor& out, OpId id) {
  // The rows gathered, not the whole table: one table row per output row.
  OperandAccess rows = read(table);
  rows.bytes = static_cast<int64_t>(out.numel()) * static_cast<int64_t>(dtype_size(table.dtype));
  record(id, {rows, read(tokens), read(positions), written(out)});
}

void DryRunBackend::rmsnorm(const Tensor& x, const Tensor& weight, float, const Tensor& out, OpId id) {
  record(id, {read(x), read(weight), written(out)});
}

void DryRunBackend::matmul(const Tensor& x, const Tensor& weight, const Tensor& out, OpId id) {
  record(id, {read(x), read(weight), written(out)});
}

void DryRunBackend::rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq, int,
                         OpId id) {
  record(id, {read(q), read(k), read(positions), read(inv_freq), written(q), written(k)});
}

void DryRunBackend::kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache,
                             const Tensor& positions, int, OpId id) {
  // The cache rows written are as many elements as the new keys and values.
  OperandAccess keys = written(k_cache), values = written(v_cache);
  keys.bytes = static_cast<int64_t>(k_new.numel()) * static_cast<int64_t>(dtype_size(k_cache.dtype));
  values.bytes = static_cast<int64_t>(v_new.numel()) * static_cast<int64_t>(dtype_size(v_cache.dtype));
  record(id, {read(k_new), read(v_new), read(positions), keys, values});
}

void DryRunBackend::attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions,
                              int, float, const Tensor& out, OpId id) {
  record(id, {read(q), read(k_cache), read(v_cache), read(positions), written(out)});
}

void DryRunBackend::swiglu(const Tensor& gate, const Tensor& up, const Tensor& out, OpId id) {
  record(id, {read(gate), read(up), written(out)});
}

void DryRunBackend::add(const Tensor& a, const Tensor& b, const Tensor& out, OpId id) {
  record(id, {read(a), read(b), written(out)});
}

void DryRunBackend::argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions, OpId id) {
  OperandAccess token_ids = written(tokens);
  token_ids.bytes = logits.shape[0] * static_cast<int64_t>(sizeof(int32_t));
  record(id, {read(logits), read(positions), token_ids});
}

void DryRunBackend::cast(const Tensor& x, const Tensor& out, OpId id) { record(id, {read(x), written(out)}); }

void DryRunBackend::copy(const Tensor& src, const Tensor& out, OpId id) { record(id, {read(src), written(out)}); }

void DryRunBackend::fill_positions(const Tensor& out, int, int, OpId id) { record(id, {written(out)}); }

void DryRunBackend::advance_positions(const Tensor& positions, OpId id) {
  record(id, {read(positions), written(positions)});
}

}  // namespace decodelab
