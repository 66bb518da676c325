// Progress lines on stderr (see progress.h).
#include "lab/cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace decodelab {

ProgressMode progress_mode(bool quiet) {
  if (quiet) return ProgressMode::Off;
  return ::isatty(::fileno(stderr)) ? ProgressMode::Terminal : ProgressMode::Lines;
}

void Progress::status(const std::string& text) const {
  if (mode_ != ProgressMode::Terminal) return;
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
}

void Progress::finished(const std::string& text) const {
  if (mode_ == ProgressMode::Off) return;
  if (mode_ == ProgressMode::Terminal) {
    status(text);
    return;
  }
  std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
}

void Progress::clear() const {
  if (mode_ != ProgressMode::Terminal) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

}  // namespace decodelab
