// The CPU stream's queue and worker (see stream.h). Wake-ups use the store-then-check
// pattern on both sides: the sleeper publishes "asleep" and re-checks the counter; the
// other side publishes the counter and then checks "asleep" (all seq_cst), so at least
// one of them sees the other and no wake-up is lost.
#include "engine/cpu/stream.h"

#include <omp.h>

#include "engine/base/clock.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define DECODELAB_CPU_RELAX() _mm_pause()
#else
#define DECODELAB_CPU_RELAX() std::this_thread::yield()
#endif

namespace decodelab::cpu {

namespace {

// How long each side polls before it sleeps. The worker polls longer: the next op of a
// decode loop usually arrives within microseconds, and a futex wake-up costs several.
constexpr int64_t kWorkerSpinNs = 50'000;
// The host polls as CUDA's default schedule (cudaDeviceScheduleAuto) does: long when it has a
// core the kernels do not use (a sleeping vCPU's wake-up takes tens to hundreds of
// microseconds, and varies: a decode loop that syncs every step would time the hypervisor),
// briefly when the kernels use every core and a polling host would take one from them.
constexpr int64_t kHostSpinOwnCoreNs = 2'000'000;
constexpr int64_t kHostSpinSharedNs = 20'000;
// Polls between yields. A pause takes ~25 ns on recent x86 cores: 16 of them keep the
// hand-off sub-microsecond when both threads have a core, and cost little when they share one.
constexpr int kPauseRounds = 16;

// Polls ready() for up to budget_ns: a short pause-spin, then yields between polls so that
// a thread waiting for this core (the other side of the stream, an OpenMP helper,
// anything else on a shared machine) runs instead.
template <typename Ready>
bool spin_until(Ready&& ready, int64_t budget_ns) {
  const int64_t start = now_ns();
  for (int round = 0;; ++round) {
    if (ready()) return true;
    if (round < kPauseRounds) {
      DECODELAB_CPU_RELAX();
      continue;
    }
    if (now_ns() - start > budget_ns) return ready();
    std::this_thread::yield();
  }
}

}  // namespace

CpuStream::CpuStream(int kernel_threads)
    : kernel_threads_(kernel_threads > 0 ? kernel_threads : omp_get_num_procs()),
      host_spin_ns_(kernel_threads_ < omp_get_num_procs() ? kHostSpinOwnCoreNs : kHostSpinSharedNs),
      ring_(new Slot[kCapacity]) {
  timings_.reserve(4096);
  worker_ = std::thread([this] { worker_main(); });
}

CpuStream::~CpuStream() {
  drain();
  stopping_.store(true);
  { std::lock_guard<std::mutex> lock(wake_mutex_); }
  worker_wake_.notify_one();
  worker_.join();
}

CpuStream::Slot& CpuStream::claim_slot() {
  // The slot at enqueued_ is free once the command kCapacity places earlier has finished.
  // When the ring is full, wait until half of it has drained: the host then enqueues in
  // bursts instead of waking (and taking a core from the kernels) for every command.
  if (enqueued_ >= kCapacity && completed_.load(std::memory_order_acquire) + kCapacity <= enqueued_) {
    wait_until_completed(enqueued_ - kCapacity / 2);
  }
  return ring_[enqueued_ % kCapacity];
}

void CpuStream::publish() {
  head_.store(++enqueued_);
  if (worker_sleeping_.load()) {
    { std::lock_guard<std::mutex> lock(wake_mutex_); }
    worker_wake_.notify_one();
  }
}

void CpuStream::wait_until_completed(uint64_t count) {
  auto done = [&] { return completed_.load(std::memory_order_acquire) >= count; };
  if (spin_until(done, host_spin_ns_)) return;
  host_wait_target_.store(count);
  host_sleeping_.store(true);
  if (completed_.load() < count) {
    std::unique_lock<std::mutex> lock(wake_mutex_);
    host_wake_.wait(lock, done);
  }
  host_sleeping_.store(false);
}

void CpuStream::drain() { wait_until_completed(enqueued_); }

void CpuStream::synchronize() {
  drain();
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(results_mutex_);
    error = std::exchange(first_error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

std::vector<OpTiming> CpuStream::take_timings() {
  // Copied out, not swapped for a fresh vector: the worker keeps writing into memory it
  // has touched. A fresh vector's pages fault in one by one as the worker appends (one
  // fault per 170 timings), and each fault holds the device between two queued ops for
  // longer than many ops take.
  std::lock_guard<std::mutex> lock(results_mutex_);
  std::vector<OpTiming> taken(timings_.begin(), timings_.end());
  timings_.clear();
  return taken;
}

bool CpuStream::wait_for_work(uint64_t next) {
  auto ready = [&] { return head_.load(std::memory_order_acquire) > next || stopping_.load(); };
  if (!spin_until(ready, kWorkerSpinNs)) {
    worker_sleeping_.store(true);
    if (!(head_.load() > next || stopping_.load())) {
      std::unique_lock<std::mutex> lock(wake_mutex_);
      worker_wake_.wait(lock, ready);
    }
    worker_sleeping_.store(false);
  }
  return head_.load(std::memory_order_acquire) > next;
}

void CpuStream::worker_main() {
  // A per-thread OpenMP setting: the kernels' parallel regions, started from this
  // thread, use kernel_threads_ threads while the host thread enqueues or waits.
  omp_set_dynamic(0);
  omp_set_num_threads(kernel_threads_);
  uint64_t next = 0;
  for (;;) {
    if (head_.load(std::memory_order_acquire) <= next && !wait_for_work(next)) return;  // stopping, queue empty
    Slot& slot = ring_[next % kCapacity];
    const int64_t begin = now_ns();
    std::exception_ptr error;
    try {
      slot.run(slot.storage);
    } catch (...) {
      error = std::current_exception();
    }
    const int64_t end = now_ns();
    slot.destroy(slot.storage);
    {
      std::lock_guard<std::mutex> lock(results_mutex_);
      timings_.push_back(OpTiming{slot.id, begin, end});
      if (error && !first_error_) first_error_ = error;
    }
    completed_.store(++next);
    if (host_sleeping_.load() && next >= host_wait_target_.load()) {
      { std::lock_guard<std::mutex> lock(wake_mutex_); }
      host_wake_.notify_all();
    }
  }
}

}  // namespace decodelab::cpu
