// The CUDA backend's class, shared by its two source files: cuda_backend.cpp (device,
// memory, stream, transfers, timing, graphs) and cuda_backend_ops.cpp (the ops: check
// the views, then call the launchers). Everything runs on one non-blocking stream.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "engine/backend.h"
#include "engine/cuda/host/attention_plan.h"
#include "engine/cuda/matmul.h"
#include "engine/cuda/timing/op_timer.h"
#include "engine/cuda/memory/pinned_staging.h"
#include "engine/cuda/memory/scratch_arena.h"

namespace decodelab::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& options);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override { return "cuda"; }
  std::string device_description() const override;

  void* allocate(size_t bytes) override;
  void release(void* pointer) override;
  size_t available_memory() const override;
  void upload(void* device_destination, const void* host_source, size_t bytes) override;

  void upload_async(void* device_destination, const void* host_source, size_t bytes, OpId id) override;
  void copy_to_host(void* host_destination, const void* device_source, size_t bytes, bool pinned, OpId id) override;
  void synchronize() override;
  void marker(OpId id) override;
  std::vector<OpTiming> take_timings() override;

  // Graphs are used only when asked for (--cuda-graphs / run.cuda_graphs).
  bool supports_graphs() const override { return graphs_enabled_; }
  void begin_capture() override;
  void end_capture() override;
  void replay_captured(OpId id) override;
  void reserve_attention(const AttentionBounds& bounds) override;

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

  const char* timing_source() const { return timer_->source(); }

 private:
  // Brackets one op's launches: an NVTX range named as the op and the timer's begin/end
  // (skipped while capturing: captured ops are timed as part of the replay). finish()
  // ends the op and, in debug mode, waits for it; leaving without finish() (an
  // exception) cancels the timing without throwing.
  class OpScope {
   public:
    OpScope(CudaBackend& backend, const char* name, OpId id);
    ~OpScope();
    void finish();
    OpScope(const OpScope&) = delete;
    OpScope& operator=(const OpScope&) = delete;

   private:
    CudaBackend& backend_;
    OpId id_;
    bool timed_;
    bool finished_ = false;
  };

  void choose_timer();
  bool timer_self_test(OpTimer& timer);
  void require_not_capturing(const char* what) const;
  void* scratch(int slot, size_t bytes);
  ScratchProvider matmul_scratch();

  int device_ = 0;
  int multiprocessors_ = 0;
  std::string device_name_;
  size_t total_memory_ = 0;
  bool sync_after_launch_ = false;
  bool graphs_enabled_ = false;
  bool capturing_ = false;
  bool warned_smaller_plan_ = false;  // a capture ran attention with fewer splits than eagerly
  AttentionWorkspace attention_workspace_{0};  // the attention's plans and reserved workspace (set up with the device)
  std::string timer_note_;  // why CUPTI is not used, when it is not

  cudaStream_t stream_ = nullptr;
  void* cublas_workspace_ = nullptr;
  void* argmax_workspace_ = nullptr;  // argmax_workspace_bytes(): the chunked argmax's partials
  std::unique_ptr<CublasMatmul> matmul_;
  std::unique_ptr<OpTimer> timer_;
  PinnedStaging staging_;
  ScratchArena scratch_;
  cudaGraphExec_t graph_ = nullptr;
};

}  // namespace decodelab::cuda
