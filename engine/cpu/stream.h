// The CPU device's stream: an in-order command queue drained by one worker thread.
// The host (one thread) enqueues callables into a preallocated ring of fixed-size slots —
// no heap allocation per command — and returns at once; the worker runs them in order,
// timing each on now_ns(), and kernels inside fan out with OpenMP from that worker.
// The one non-obvious choice: both sides poll before sleeping (the worker for new work, the
// host for completion: up to 2 ms when the kernels leave it a core, as CUDA's default
// schedule spins, else briefly), yielding between polls so that the other side or an
// OpenMP helper sharing the core can run; each side takes the mutex to wake the other only
// when that side has announced it is asleep — and the worker wakes the host only once the
// count it waits for is reached (a wake-up per finished op cost the worker ~3 µs after
// every op and put the host on a kernel thread's core each time). An enqueue costs tens of nanoseconds and a
// sync round trip about a microsecond, and nothing polls a core the kernels need for long.
// Only the host thread may call enqueue, drain, synchronize and take_timings.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/events/event_sink.h"

namespace decodelab::cpu {

class CpuStream {
 public:
  static constexpr size_t kCapacity = 1024;     // commands the host may run ahead
  static constexpr size_t kCommandBytes = 480;  // inline storage per command

  // kernel_threads: OpenMP threads for kernels (0 = every core).
  explicit CpuStream(int kernel_threads);
  ~CpuStream();
  CpuStream(const CpuStream&) = delete;
  CpuStream& operator=(const CpuStream&) = delete;

  // Queues command() to run after everything enqueued before it; returns at once unless
  // the ring is full (then it waits for a free slot). The command's interval is
  // reported under `id` by take_timings().
  template <typename Command>
  void enqueue(OpId id, Command&& command);

  // Waits until every enqueued command has run; keeps any command error pending.
  void drain();
  // drain(), then rethrows the first error a command raised since the last sync.
  void synchronize();
  // Intervals of the commands finished since the last call, in execution order.
  std::vector<OpTiming> take_timings();

  int kernel_threads() const { return kernel_threads_; }

 private:
  struct alignas(64) Slot {
    void (*run)(void* storage) = nullptr;
    void (*destroy)(void* storage) = nullptr;
    OpId id = 0;
    alignas(16) unsigned char storage[kCommandBytes];
  };

  Slot& claim_slot();
  void publish();
  void wait_until_completed(uint64_t count);
  bool wait_for_work(uint64_t next);
  void worker_main();

  const int kernel_threads_;
  const int64_t host_spin_ns_;  // how long a waiting host polls before it sleeps
  std::unique_ptr<Slot[]> ring_;
  uint64_t enqueued_ = 0;  // host-only copy of head_

  alignas(64) std::atomic<uint64_t> head_{0};       // commands published (host writes)
  alignas(64) std::atomic<uint64_t> completed_{0};  // commands finished (worker writes)
  alignas(64) std::atomic<bool> worker_sleeping_{false};
  std::atomic<bool> host_sleeping_{false};
  std::atomic<uint64_t> host_wait_target_{0};  // the completed count a sleeping host waits for
  std::atomic<bool> stopping_{false};
  std::mutex wake_mutex_;
  std::condition_variable worker_wake_;
  std::condition_variable host_wake_;

  std::mutex results_mutex_;
  std::vector<OpTiming> timings_;
  std::exception_ptr first_error_;

  std::thread worker_;
};

template <typename Command>
void CpuStream::enqueue(OpId id, Command&& command) {
  using Stored = std::decay_t<Command>;
  static_assert(sizeof(Stored) <= kCommandBytes, "command too large for a stream slot: capture less");
  static_assert(alignof(Stored) <= 16, "command alignment exceeds the slot's");
  Slot& slot = claim_slot();
  new (slot.storage) Stored(std::forward<Command>(command));
  slot.run = [](void* storage) { (*std::launder(static_cast<Stored*>(storage)))(); };
  slot.destroy = [](void* storage) { std::launder(static_cast<Stored*>(storage))->~Stored(); };
  slot.id = id;
  publish();
}

}  // namespace decodelab::cpu
