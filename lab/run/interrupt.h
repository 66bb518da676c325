// Stopping a long command cleanly on Ctrl-C (SIGINT) or SIGTERM. While a StopRequests
// object lives, the first such signal asks the command to stop now: the generation in
// progress is abandoned at its next step or layer (AbandoningSink) and the command keeps
// every finished row and pair, writes them, and exits with 128 + the signal. A second
// signal gives the command a moment to finish writing what it kept, then ends the process
// (a command busy in work it cannot abandon still ends). The handler only stores the
// signal, writes one line with write(2) and posts a semaphore: nothing else is safe there.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>

#include "engine/events/event_sink.h"

namespace decodelab {

class StopRequests {
 public:
  StopRequests();   // installs the SIGINT and SIGTERM handlers
  ~StopRequests();  // restores the previous ones
  StopRequests(const StopRequests&) = delete;
  StopRequests& operator=(const StopRequests&) = delete;

  bool requested() const;
  int signal_number() const;  // the first signal received (0 when none)

 private:
  std::thread watchdog_;  // ends the process a moment after a second signal
};

// Whether a live StopRequests has seen a signal (false when none lives): what the code
// deep in a command (compare's pairs) asks without being handed the object.
bool stop_requested();

// Thrown once a command has stopped on request and saved what it completed; the CLI prints
// the message and exits with 128 + the signal (130 for Ctrl-C), as a shell expects.
class Interrupted : public std::runtime_error {
 public:
  Interrupted(int signal_number, const std::string& message)
      : std::runtime_error(message), signal_number_(signal_number) {}
  int exit_code() const { return 128 + signal_number_; }

 private:
  int signal_number_;
};

// A generation given up part-way: a stop was requested, or the time it was given ran out.
// What it measured so far is not a repeat; the caller keeps the finished ones.
class RepeatAbandoned : public std::runtime_error {
 public:
  enum class Why { StopRequested, DeadlinePassed };
  explicit RepeatAbandoned(Why why)
      : std::runtime_error(why == Why::StopRequested ? "stop requested" : "time budget spent"), why_(why) {}
  Why why() const { return why_; }

 private:
  Why why_;
};

// Forwards every event to `inner` (may be null) and, at the start of each step or layer,
// throws RepeatAbandoned once a stop is requested or `deadline_ns` (a now_ns() time; 0 =
// none) has passed. A layer is the finest place the engine reports that is also a place
// where its own state stays consistent for the destructors that drain the stream, so the
// wait for a stop is one layer's work, not a whole generation's.
class AbandoningSink : public EventSink {
 public:
  explicit AbandoningSink(EventSink* inner, int64_t deadline_ns = 0) : inner_(inner), deadline_ns_(deadline_ns) {}
  void op_enqueued(const OpDesc& op, int64_t host_begin_ns, int64_t host_end_ns) override;
  void ops_executed(const std::vector<OpTiming>& timings) override;
  void host_call(const HostCall& call) override;
  void range_begin(RangeKind kind, int index, int64_t ns) override;
  void range_end(RangeKind kind, int index, int64_t ns) override;
  void before_run() override;

 private:
  EventSink* inner_;
  int64_t deadline_ns_;
};

}  // namespace decodelab
