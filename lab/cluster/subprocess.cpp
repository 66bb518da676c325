// posix_spawnp with both outputs on pipes, read together with poll() so that a program
// filling one pipe never blocks while we wait on the other.
#include "lab/cluster/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace decodelab {

namespace {

struct Pipe {
  int read_end = -1, write_end = -1;
  Pipe() {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) == 0) {
      read_end = ends[0];
      write_end = ends[1];
    }
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  void close_read() {
    if (read_end >= 0) ::close(read_end);
    read_end = -1;
  }
  void close_write() {
    if (write_end >= 0) ::close(write_end);
    write_end = -1;
  }
  bool ok() const { return read_end >= 0; }
};

}  // namespace

ProcessOutput run_program(const std::vector<std::string>& argv) {
  ProcessOutput output;
  if (argv.empty()) {
    output.err = "no program given";
    return output;
  }
  Pipe out, err;
  if (!out.ok() || !err.ok()) {
    output.err = std::string("cannot create a pipe: ") + std::strerror(errno);
    return output;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write_end, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write_end, STDERR_FILENO);
  std::vector<char*> arguments;
  for (const std::string& argument : argv) arguments.push_back(const_cast<char*>(argument.c_str()));
  arguments.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, arguments.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  out.close_write();
  err.close_write();
  if (spawned != 0) {
    output.err = argv[0] + ": " + std::strerror(spawned);
    return output;
  }
  output.started = true;
  pollfd fds[2] = {{out.read_end, POLLIN, 0}, {err.read_end, POLLIN, 0}};
  std::string* sinks[2] = {&output.out, &output.err};
  int open_count = 2;
  char buffer[4096];
  while (open_count > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t count = ::read(fds[i].fd, buffer, sizeof buffer);
      if (count > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(count));
      } else if (count == 0 || errno != EINTR) {
        fds[i].fd = -1;  // poll ignores negative descriptors; the Pipe closes it
        --open_count;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  output.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

std::string shell_quote(const std::string& argument) {
  const bool plain = !argument.empty() && argument.find_first_not_of(
                                              "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                              "_-+=.,:/@%") == std::string::npos;
  if (plain) return argument;
  std::string quoted = "'";
  for (char c : argument) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& argument : argv) {
    if (!text.empty()) text += ' ';
    text += shell_quote(argument);
  }
  return text;
}

std::string last_lines(const std::string& text, size_t lines) {
  std::vector<std::string> kept;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) kept.push_back(line);
    start = end + 1;
  }
  if (kept.size() > lines) kept.erase(kept.begin(), kept.end() - static_cast<std::ptrdiff_t>(lines));
  std::string joined;
  for (const std::string& line : kept) joined += (joined.empty() ? "" : "; ") + line;
  return joined;
}

}  // namespace decodelab
