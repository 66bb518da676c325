// The signal handlers behind StopRequests. The state is one lock-free atomic, the only
// kind of object a handler may touch; the second signal restores the default action and
// re-raises, so the process ends with the status of a plain kill.
#include "lab/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace decodelab {

namespace {

std::atomic<int> first_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler may only touch lock-free atomics");

struct sigaction previous_interrupt, previous_terminate;

void write_line(const char* text) {
  size_t length = 0;
  while (text[length]) ++length;
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, text, length);
}

extern "C" void on_stop_signal(int signal_number) {
  int expected = 0;
  if (first_signal.compare_exchange_strong(expected, signal_number)) {
    write_line("\ndecodelab: stopping after the current run (interrupt again to stop at once)\n");
    return;
  }
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

}  // namespace

StopRequests::StopRequests() {
  first_signal.store(0);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes in progress carry on
  ::sigaction(SIGINT, &action, &previous_interrupt);
  ::sigaction(SIGTERM, &action, &previous_terminate);
}

StopRequests::~StopRequests() {
  ::sigaction(SIGINT, &previous_interrupt, nullptr);
  ::sigaction(SIGTERM, &previous_terminate, nullptr);
}

bool StopRequests::requested() const { return first_signal.load() != 0; }

int StopRequests::signal_number() const { return first_signal.load(); }

}  // namespace decodelab
