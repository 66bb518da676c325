// The signal handlers behind StopRequests. The state is lock-free atomics and a POSIX
// semaphore, the only objects a handler may touch. A second signal wakes the watchdog
// thread, which gives the command a moment to write what it kept (the command stops
// within a layer's work of the first signal, so it is usually done already), then restores
// the default action and re-raises, so a command that cannot stop still ends as a plain
// kill would end it.
#include "lab/run/interrupt.h"

#include <semaphore.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>

#include "engine/base/clock.h"

namespace decodelab {

namespace {

std::atomic<int> first_signal{0};
std::atomic<int> signals_seen{0};
std::atomic<bool> handlers_installed{false};
std::atomic<bool> watchdog_quit{false};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler may only touch lock-free atomics");
sem_t second_signal;  // posted by the handler on the second signal, and by ~StopRequests

// How long the watchdog lets a command finish writing after the second signal.
constexpr auto kGraceAfterSecondSignal = std::chrono::milliseconds(1500);

struct sigaction previous_interrupt, previous_terminate;

void write_line(const char* text) {
  size_t length = 0;
  while (text[length]) ++length;
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, text, length);
}

extern "C" void on_stop_signal(int signal_number) {
  int expected = 0;
  if (first_signal.compare_exchange_strong(expected, signal_number)) {
    signals_seen.store(1);
    write_line("\ndecodelab: stopping now: the repeat in progress is abandoned, every finished row and pair is kept "
               "(interrupt again to stop at once)\n");
    return;
  }
  if (signals_seen.exchange(2) == 1) {
    write_line("decodelab: stopping at once; writing what finished\n");
    sem_post(&second_signal);
  }
}

void watch_for_second_signal() {
  // The signals go to the command's threads, not this one: a handler run here would end
  // sem_wait with EINTR, which is no second signal.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  while (!watchdog_quit.load() && signals_seen.load() < 2) {
    if (sem_wait(&second_signal) != 0 && errno != EINTR) return;
  }
  if (watchdog_quit.load()) return;
  const auto until = std::chrono::steady_clock::now() + kGraceAfterSecondSignal;
  while (std::chrono::steady_clock::now() < until) {
    if (watchdog_quit.load()) return;  // the command finished writing and is leaving
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const int signal_number = first_signal.load();
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

}  // namespace

StopRequests::StopRequests() {
  first_signal.store(0);
  signals_seen.store(0);
  watchdog_quit.store(false);
  sem_init(&second_signal, 0, 0);
  watchdog_ = std::thread(watch_for_second_signal);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes in progress carry on
  ::sigaction(SIGINT, &action, &previous_interrupt);
  ::sigaction(SIGTERM, &action, &previous_terminate);
  handlers_installed.store(true);
}

StopRequests::~StopRequests() {
  ::sigaction(SIGINT, &previous_interrupt, nullptr);
  ::sigaction(SIGTERM, &previous_terminate, nullptr);
  handlers_installed.store(false);
  watchdog_quit.store(true);
  sem_post(&second_signal);
  watchdog_.join();
  sem_destroy(&second_signal);
  first_signal.store(0);
}

bool StopRequests::requested() const { return first_signal.load() != 0; }

int StopRequests::signal_number() const { return first_signal.load(); }

bool stop_requested() { return handlers_installed.load() && first_signal.load() != 0; }

void AbandoningSink::op_enqueued(const OpDesc& op, int64_t host_begin_ns, int64_t host_end_ns) {
  if (inner_) inner_->op_enqueued(op, host_begin_ns, host_end_ns);
}

void AbandoningSink::ops_executed(const std::vector<OpTiming>& timings) {
  if (inner_) inner_->ops_executed(timings);
}

void AbandoningSink::host_call(const HostCall& call) {
  if (inner_) inner_->host_call(call);
}

void AbandoningSink::range_begin(RangeKind kind, int index, int64_t ns) {
  if (kind == RangeKind::Step || kind == RangeKind::Layer || kind == RangeKind::Prefill) {
    if (stop_requested()) throw RepeatAbandoned(RepeatAbandoned::Why::StopRequested);
    if (deadline_ns_ > 0 && ns > deadline_ns_) throw RepeatAbandoned(RepeatAbandoned::Why::DeadlinePassed);
  }
  if (inner_) inner_->range_begin(kind, index, ns);
}

void AbandoningSink::range_end(RangeKind kind, int index, int64_t ns) {
  if (inner_) inner_->range_end(kind, index, ns);
}

void AbandoningSink::before_run() {
  if (inner_) inner_->before_run();
}

}  // namespace decodelab
