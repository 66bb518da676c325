// Running the decodelab binary from tests (see cli_runner.h). Captured output lives in a
// per-process folder under the system temp dir, one pair of files per command.
#include "tests/support/cli_runner.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace decodelab::testing {

namespace {

std::string quoted(const std::string& text) {
  std::string result = "'";
  for (char c : text) result += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return result + "'";
}

// A fresh pair of capture files (the folder is removed at exit).
std::pair<std::filesystem::path, std::filesystem::path> capture_files() {
  static const std::filesystem::path folder = [] {
    const auto path = std::filesystem::temp_directory_path() / ("decodelab-capture-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(
          std::filesystem::temp_directory_path() / ("decodelab-capture-" + std::to_string(::getpid())), ignored);
    });
    return path;
  }();
  static std::atomic<int> counter{0};
  const std::string stem = std::to_string(counter++);
  return {folder / (stem + ".out"), folder / (stem + ".err")};
}

// The machine check's warning (decodelab: warning: this machine is busy ... what to do: ...)
// moved from `err` to `machine_warning`: it depends on the machine running the tests.
void split_machine_warning(CommandResult& result) {
  const std::string opening = "decodelab: warning: this machine is busy";
  for (size_t begin = result.err.find(opening); begin != std::string::npos; begin = result.err.find(opening)) {
    size_t end = result.err.find("\n  what to do:", begin);
    end = end == std::string::npos ? result.err.find('\n', begin) : result.err.find('\n', end + 1);
    end = end == std::string::npos ? result.err.size() : end + 1;
    result.machine_warning += result.err.substr(begin, end - begin);
    result.err.erase(begin, end - begin);
  }
  // The watch during and after the repeats, and a figure far below its prediction: a line
  // (with "  - " lines under it), which as much depend on the machine.
  for (const std::string marker : {"were measured on a busy machine", "suspect — other work"}) {
    for (size_t at = result.err.find(marker); at != std::string::npos; at = result.err.find(marker)) {
      const size_t line_begin = result.err.rfind('\n', at);
      const size_t begin = line_begin == std::string::npos ? 0 : line_begin + 1;
      size_t end = result.err.find('\n', at);
      end = end == std::string::npos ? result.err.size() : end + 1;
      while (result.err.compare(end, 4, "  - ") == 0) {
        const size_t next = result.err.find('\n', end);
        end = next == std::string::npos ? result.err.size() : next + 1;
      }
      result.machine_warning += result.err.substr(begin, end - begin);
      result.err.erase(begin, end - begin);
    }
  }
}

CommandResult result_of(int status, const std::filesystem::path& out, const std::filesystem::path& err) {
  CommandResult result;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.out = read_text_file(out);
  result.err = read_text_file(err);
  split_machine_warning(result);
  return result;
}

}  // namespace

std::string read_text_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json read_json(const std::filesystem::path& file) { return nlohmann::json::parse(read_text_file(file)); }

CommandResult run_decodelab(const std::vector<std::string>& arguments, const std::string& environment) {
  std::vector<std::string> command = {DECODELAB_BINARY};
  command.insert(command.end(), arguments.begin(), arguments.end());
  return run_command(command, environment);
}

CommandResult run_command(const std::vector<std::string>& command_words, const std::string& environment,
                          const std::filesystem::path& directory) {
  const auto [out, err] = capture_files();
  std::string command = directory.empty() ? environment : "cd " + quoted(directory.string()) + " && " + environment;
  for (const std::string& word : command_words) command.append(" ").append(quoted(word));
  command += " >" + quoted(out.string()) + " 2>" + quoted(err.string()) + " </dev/null";
  const int status = std::system(command.c_str());
  CommandResult result = result_of(status, out, err);
  // The shell reports a child killed by a signal as exit code 128 + signal.
  if (result.exit_code > 128 && result.signal == 0) result.signal = result.exit_code - 128;
  return result;
}

BackgroundDecodelab::BackgroundDecodelab(const std::vector<std::string>& arguments) {
  std::tie(out_, err_) = capture_files();
  std::vector<std::string> argv_text = {DECODELAB_BINARY};
  argv_text.insert(argv_text.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& argument : argv_text) argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    const int out = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = ::open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || in < 0) ::_exit(126);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::dup2(in, 0);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
}

BackgroundDecodelab::~BackgroundDecodelab() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

void BackgroundDecodelab::send(int signal_number) const {
  if (pid_ > 0) ::kill(pid_, signal_number);
}

std::string BackgroundDecodelab::stderr_so_far() const { return read_text_file(err_); }

CommandResult BackgroundDecodelab::wait() {
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return result_of(status, out_, err_);
}

}  // namespace decodelab::testing
