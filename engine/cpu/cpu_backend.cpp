// The CPU backend: host memory as device memory, a CpuStream as the device's stream,
// and the kernels of engine/cpu/*.cpp as its ops. Every op is checked on the host at
// enqueue (bad arguments throw there, where the mistake was made), then captured by
// value — tensor views and scalars, never host pointers the caller may reuse — into a
// stream command. The one non-obvious choice: release() and upload() first drain the
// stream, as cudaFree and cudaMemcpy do, so freeing or overwriting memory that queued
// ops still read can never race with them.
#include "engine/cpu/cpu_backend.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "engine/cpu/kernels/checks.h"
#include "engine/cpu/host_memory.h"
#include "engine/cpu/kernels/kernels.h"
#include "engine/cpu/kernel_variant.h"
#include "engine/cpu/stream.h"
#include "engine/cpu/weight_stream.h"
#include "engine/base/errors.h"

namespace decodelab {

namespace {

std::string read_cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown CPU";
}

// Host-to-device copy whose source bytes are captured at enqueue: inline when small
// (token ids of one step), in one heap block otherwise.
constexpr size_t kInlineUploadBytes = 384;

struct InlineUpload {
  void* destination;
  size_t bytes;
  std::array<unsigned char, kInlineUploadBytes> data;
  void operator()() const { std::memcpy(destination, data.data(), bytes); }
};

struct HeapUpload {
  void* destination;
  std::vector<unsigned char> data;
  void operator()() const { std::memcpy(destination, data.data(), data.size()); }
};

class CpuBackend final : public Backend {
 public:
  // The weight-stream variant is read here, on the caller's thread, so that a bad
  // DECODELAB_WEIGHT_STREAM is an input error before any work starts.
  // So is the kernel variant (DECODELAB_CPU_KERNELS, else options.cpu_kernels, else the
  // widest): the kernels are one per process, so the backend made last decides.
  explicit CpuBackend(const BackendOptions& options) : stream_(options.threads) {
    (void)cpu::weight_stream();
    cpu::prefer_kernel_variant(options.cpu_kernels);
    (void)cpu::kernel_variant();
  }

  std::string name() const override { return "cpu"; }
  std::vector<std::string> kernel_variants() const override {
    std::vector<std::string> runnable;
    for (const std::string& variant : cpu::compiled_kernel_variants()) {
      if (cpu::kernel_variant_supported(variant)) runnable.push_back(variant);
    }
    return runnable;
  }
  std::string kernel_variant() const override { return cpu::kernel_variant(); }
  std::string device_description() const override {
    return read_cpu_model() + " (" + std::to_string(stream_.kernel_threads()) + " threads, " + cpu::kernel_variant_isa() +
           ", " + cpu::weight_stream_name(cpu::weight_stream()) + " weight stream)";
  }

  // --- memory ---
  void* allocate(size_t bytes) override {
    void* pointer = cpu::allocate_host_memory(bytes);
    if (!pointer) {
      throw ResourceError("cpu backend: cannot allocate " + std::to_string(bytes) + " bytes (" +
                          std::to_string(available_memory()) + " bytes available)");
    }
    return pointer;
  }
  void release(void* pointer) override {
    stream_.drain();  // queued ops may still read it
    cpu::release_host_memory(pointer);
  }
  size_t available_memory() const override {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    size_t kilobytes = 0;
    std::string unit;
    while (meminfo >> key >> kilobytes >> unit) {
      if (key == "MemAvailable:") return kilobytes * 1024;
    }
    return 0;
  }
  void upload(void* device_destination, const void* host_source, size_t bytes) override {
    stream_.drain();  // queued ops may still use the destination
    std::memcpy(device_destination, host_source, bytes);
  }

  // --- stream ---
  void upload_async(void* device_destination, const void* host_source, size_t bytes, OpId id) override {
    if (bytes <= kInlineUploadBytes) {
      InlineUpload command{device_destination, bytes, {}};
      std::memcpy(command.data.data(), host_source, bytes);
      stream_.enqueue(id, command);
    } else {
      const auto* source = static_cast<const unsigned char*>(host_source);
      stream_.enqueue(id, HeapUpload{device_destination, std::vector<unsigned char>(source, source + bytes)});
    }
  }
  void copy_to_host(void* host_destination, const void* device_source, size_t bytes, bool pinned, OpId id) override {
    if (pinned) {
      stream_.enqueue(id, [=] { std::memcpy(host_destination, device_source, bytes); });
      stream_.synchronize();
      return;
    }
    // Pageable: the device writes a staging buffer, the host copies it out afterwards.
    if (staging_.size() < bytes) staging_.resize(bytes);
    unsigned char* staging = staging_.data();
    stream_.enqueue(id, [=] { std::memcpy(staging, device_source, bytes); });
    stream_.synchronize();
    std::memcpy(host_destination, staging, bytes);
  }
  void synchronize() override { stream_.synchronize(); }
  void marker(OpId id) override {
    stream_.enqueue(id, [] {});
  }
  std::vector<OpTiming> take_timings() override { return stream_.take_timings(); }
  double fma_probe(int64_t rounds, OpId id) override {
    stream_.enqueue(id, [=] { cpu::fma_probe(rounds); });
    return cpu::fma_probe_flops(rounds, stream_.kernel_threads());
  }

  // --- ops ---
  void embedding(const Tensor& table, const Tensor& tokens, const Tensor& positions, int rows_per_sequence,
                 const Tensor& out, OpId id) override {
    cpu::check_embedding(table, tokens, positions, rows_per_sequence, out);
    stream_.enqueue(id, [=] { cpu::embedding(table, tokens, positions, rows_per_sequence, out); });
  }
  void rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out, OpId id) override {
    cpu::check_rmsnorm(x, weight, out);
    stream_.enqueue(id, [=] { cpu::rmsnorm(x, weight, eps, out); });
  }
  void matmul(const Tensor& x, const Tensor& weight, const Tensor& out, OpId id) override {
    cpu::check_matmul(x, weight, out);
    stream_.enqueue(id, [=] { cpu::matmul(x, weight, out); });
  }
  void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq, int head_dim,
            OpId id) override {
    cpu::check_rope(q, k, positions, inv_freq, head_dim);
    stream_.enqueue(id, [=] { cpu::rope(q, k, positions, inv_freq, head_dim); });
  }
  void kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache,
                const Tensor& positions, int rows_per_sequence, OpId id) override {
    cpu::check_kv_store(k_new, v_new, k_cache, v_cache, positions, rows_per_sequence);
    stream_.enqueue(id, [=] { cpu::kv_store(k_new, v_new, k_cache, v_cache, positions, rows_per_sequence); });
  }
  void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions,
                 int rows_per_sequence, float scale, const Tensor& out, OpId id) override {
    cpu::check_attention(q, k_cache, v_cache, positions, rows_per_sequence, out);
    stream_.enqueue(id, [=] { cpu::attention(q, k_cache, v_cache, positions, rows_per_sequence, scale, out); });
  }
  void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out, OpId id) override {
    cpu::check_swiglu(gate, up, out);
    stream_.enqueue(id, [=] { cpu::swiglu(gate, up, out); });
  }
  void add(const Tensor& a, const Tensor& b, const Tensor& out, OpId id) override {
    cpu::check_add(a, b, out);
    stream_.enqueue(id, [=] { cpu::add(a, b, out); });
  }
  void argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions, OpId id) override {
    cpu::check_argmax(logits, tokens, positions);
    stream_.enqueue(id, [=] { cpu::argmax(logits, tokens, positions); });
  }
  void cast(const Tensor& x, const Tensor& out, OpId id) override {
    cpu::check_cast(x, out);
    stream_.enqueue(id, [=] { cpu::cast(x, out); });
  }
  void copy(const Tensor& src, const Tensor& out, OpId id) override {
    cpu::check_copy(src, out);
    stream_.enqueue(id, [=] { cpu::copy(src, out); });
  }
  void fill_positions(const Tensor& out, int start, int period, OpId id) override {
    cpu::check_positions(out, "fill_positions");
    if (period <= 0) cpu::fail_argument("fill_positions", "period must be positive, got " + std::to_string(period));
    stream_.enqueue(id, [=] { cpu::fill_positions(out, start, period); });
  }
  void advance_positions(const Tensor& positions, OpId id) override {
    cpu::check_positions(positions, "advance_positions");
    stream_.enqueue(id, [=] { cpu::advance_positions(positions); });
  }

 private:
  cpu::CpuStream stream_;
  std::vector<unsigned char> staging_;  // pageable copy_to_host bounce buffer (host thread only)
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace decodelab
