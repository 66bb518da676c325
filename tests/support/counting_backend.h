// Test support: a backend that forwards everything to a real one (the CPU backend) and
// counts device memory (allocations made, bytes live, the peak), host reads and timing
// takes. It can also claim a fixed amount of available memory, so a test of the memory
// check does not depend on the machine it runs on. Sizes are the bytes requested (the CPU
// backend's 64-byte rounding is the backend's business, not the plan's). Not final: a
// test may override the stream calls (markers, reads, takes) to model a timer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>

#include "engine/backend.h"

namespace decodelab::testing {

class CountingBackend : public Backend {
 public:
  explicit CountingBackend(std::unique_ptr<Backend> inner, std::optional<size_t> available = std::nullopt)
      : inner_(std::move(inner)), available_(available) {}

  int64_t allocations() const { return allocations_; }
  int64_t host_reads() const { return host_reads_; }
  // take_timings() calls, and how many came between the first and the last host read.
  int64_t timing_takes() const { return timing_takes_; }
  int64_t timing_takes_between_reads() const { return takes_between_reads_; }
  int64_t live_bytes() const { return live_bytes_; }
  int64_t peak_bytes() const { return peak_bytes_; }
  void reset_peak() { peak_bytes_ = live_bytes_; }
  void set_available(std::optional<size_t> bytes) { available_ = bytes; }

  std::string name() const override { return inner_->name(); }
  std::string device_description() const override { return inner_->device_description(); }

  void* allocate(size_t bytes) override {
    void* pointer = inner_->allocate(bytes);
    ++allocations_;
    sizes_[pointer] = bytes;
    live_bytes_ += static_cast<int64_t>(bytes);
    peak_bytes_ = std::max(peak_bytes_, live_bytes_);
    return pointer;
  }
  void release(void* pointer) override {
    auto found = sizes_.find(pointer);
    if (found != sizes_.end()) {
      live_bytes_ -= static_cast<int64_t>(found->second);
      sizes_.erase(found);
    }
    inner_->release(pointer);
  }
  size_t available_memory() const override { return available_ ? *available_ : inner_->available_memory(); }
  void upload(void* destination, const void* source, size_t bytes) override { inner_->upload(destination, source, bytes); }

  void upload_async(void* destination, const void* source, size_t bytes, OpId id) override {
    inner_->upload_async(destination, source, bytes, id);
  }
  void copy_to_host(void* destination, const void* source, size_t bytes, bool pinned, OpId id) override {
    inner_->copy_to_host(destination, source, bytes, pinned, id);
    ++host_reads_;
    takes_between_reads_ += takes_since_read_;
    takes_since_read_ = 0;
  }
  void synchronize() override { inner_->synchronize(); }
  void marker(OpId id) override { inner_->marker(id); }
  std::vector<OpTiming> take_timings() override {
    ++timing_takes_;
    if (host_reads_ > 0) ++takes_since_read_;
    return inner_->take_timings();
  }
  void reserve_attention(const AttentionBounds& bounds) override { inner_->reserve_attention(bounds); }

  void embedding(const Tensor& table, const Tensor& tokens, const Tensor& positions, int rows_per_sequence,
                 const Tensor& out, OpId id) override {
    inner_->embedding(table, tokens, positions, rows_per_sequence, out, id);
  }
  void rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out, OpId id) override {
    inner_->rmsnorm(x, weight, eps, out, id);
  }
  void matmul(const Tensor& x, const Tensor& weight, const Tensor& out, OpId id) override {
    inner_->matmul(x, weight, out, id);
  }
  void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq, int head_dim,
            OpId id) override {
    inner_->rope(q, k, positions, inv_freq, head_dim, id);
  }
  void kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache,
                const Tensor& positions, int rows_per_sequence, OpId id) override {
    inner_->kv_store(k_new, v_new, k_cache, v_cache, positions, rows_per_sequence, id);
  }
  void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions,
                 int rows_per_sequence, float scale, const Tensor& out, OpId id) override {
    inner_->attention(q, k_cache, v_cache, positions, rows_per_sequence, scale, out, id);
  }
  void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out, OpId id) override {
    inner_->swiglu(gate, up, out, id);
  }
  void add(const Tensor& a, const Tensor& b, const Tensor& out, OpId id) override { inner_->add(a, b, out, id); }
  void argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions, OpId id) override {
    inner_->argmax(logits, tokens, positions, id);
  }
  void cast(const Tensor& x, const Tensor& out, OpId id) override { inner_->cast(x, out, id); }
  void copy(const Tensor& src, const Tensor& out, OpId id) override { inner_->copy(src, out, id); }
  void fill_positions(const Tensor& out, int start, int period, OpId id) override {
    inner_->fill_positions(out, start, period, id);
  }
  void advance_positions(const Tensor& positions, OpId id) override { inner_->advance_positions(positions, id); }

 private:
  std::unique_ptr<Backend> inner_;
  std::optional<size_t> available_;
  std::unordered_map<void*, size_t> sizes_;
  int64_t allocations_ = 0;
  int64_t host_reads_ = 0;
  int64_t timing_takes_ = 0, takes_since_read_ = 0, takes_between_reads_ = 0;
  int64_t live_bytes_ = 0;
  int64_t peak_bytes_ = 0;
};

}  // namespace decodelab::testing
