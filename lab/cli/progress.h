// Progress of a long command on stderr. On a terminal: one status line rewritten in place.
// Anywhere else (a log file, CI, a pipe, a Slurm log): one plain line per finished unit of
// work (a repeat, a sweep point, a lab bug), never a carriage return or an escape code, so
// the log reads top to bottom and shows how far a command got. stdout stays for results.
#pragma once

#include <string>

namespace decodelab {

enum class ProgressMode { Off, Terminal, Lines };

// Off when quiet; Terminal when stderr is a terminal; else Lines.
ProgressMode progress_mode(bool quiet);

class Progress {
 public:
  explicit Progress(ProgressMode mode = ProgressMode::Off) : mode_(mode) {}

  // Work about to start ("host_sync: repeat 2/3"): shown on a terminal only.
  void status(const std::string& text) const;
  // A unit of work done: on a terminal it replaces the status line; else a line of its own.
  void finished(const std::string& text) const;
  // Erases the terminal's status line (before a table or an error is printed).
  void clear() const;

  ProgressMode mode() const { return mode_; }
  bool enabled() const { return mode_ != ProgressMode::Off; }

 private:
  ProgressMode mode_;
};

}  // namespace decodelab
