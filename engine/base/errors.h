// Bad input is an InputError: it names the file, the line (0 when none), the key or
// tensor, and what was expected. The CLI turns it into one message and exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace decodelab {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, int line, std::string key, std::string problem)
      : std::runtime_error(format(file, line, key, problem)),
        file_(std::move(file)),
        line_(line),
        key_(std::move(key)),
        problem_(std::move(problem)) {}

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& key() const { return key_; }
  const std::string& problem() const { return problem_; }

 private:
  static std::string format(const std::string& file, int line, const std::string& key, const std::string& problem) {
    std::string text;
    text.append(file.empty() ? "<input>" : file.c_str());
    if (line > 0) text.append(":").append(std::to_string(line));
    text.append(": ");
    if (!key.empty()) text.append(key).append(": ");
    text.append(problem);
    return text;
  }

  std::string file_;
  int line_;
  std::string key_;
  std::string problem_;
};

// A request that cannot be met on this machine (e.g. the model does not fit): exit code 2.
class ResourceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A run whose numbers went bad: NaN or Inf in the logits, or (--check-numerics) in the
// output of an op. A failure of the run, not of its input: exit code 1.
class NumericalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace decodelab
