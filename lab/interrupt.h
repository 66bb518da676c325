// Stopping a long command cleanly on Ctrl-C (SIGINT) or SIGTERM. While a StopRequests
// object lives, the first such signal only asks the command to stop after the run in
// progress (it finishes it, keeps every completed row, and exits with 128 + the signal);
// a second one ends the process at once, as if no handler were installed. The handler
// only stores the signal and writes one line with write(2): nothing else is safe there.
#pragma once

#include <stdexcept>
#include <string>

namespace decodelab {

class StopRequests {
 public:
  StopRequests();   // installs the SIGINT and SIGTERM handlers
  ~StopRequests();  // restores the previous ones
  StopRequests(const StopRequests&) = delete;
  StopRequests& operator=(const StopRequests&) = delete;

  bool requested() const;
  int signal_number() const;  // the first signal received (0 when none)
};

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

}  // namespace decodelab
