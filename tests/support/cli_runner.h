// Test support: runs the built `decodelab` binary (DECODELAB_BINARY), or another program
// (a script, the test binary itself), as a user would, and reads back what it printed. Output goes to files outside the test's folder so that a
// test can count what the command left there. A child started in the background can be
// sent a real signal (the interrupt tests).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace decodelab::testing {

struct CommandResult {
  int exit_code = -1;  // -1 when the process did not exit normally
  int signal = 0;      // the signal that ended it, if one did
  std::string out;
  std::string err;              // stderr without the machine check's warning
  std::string machine_warning;  // that warning, and the watch's and a suspect figure's (they depend on the machine)
};

std::string read_text_file(const std::filesystem::path& file);
nlohmann::json read_json(const std::filesystem::path& file);

// `environment decodelab arguments...` through the shell, waiting for it to end.
CommandResult run_decodelab(const std::vector<std::string>& arguments, const std::string& environment = "");
// The same for any program: `environment program arguments...` (command[0] is the program;
// `environment` is shell assignments, e.g. "PATH=/x:/usr/bin DECODELAB_REQUIRE_CUDA=1"),
// run in `directory` when one is given. Through the shell, for those assignments and the
// folder; lab/cluster/subprocess.h's run_program is the no-shell runner the CLI itself uses.
CommandResult run_command(const std::vector<std::string>& command, const std::string& environment = "",
                          const std::filesystem::path& directory = {});

// A decodelab process started in the background (fork + exec, no shell in between, so a
// signal reaches decodelab itself).
class BackgroundDecodelab {
 public:
  explicit BackgroundDecodelab(const std::vector<std::string>& arguments);
  ~BackgroundDecodelab();  // kills and reaps the child if the test did not wait for it
  BackgroundDecodelab(const BackgroundDecodelab&) = delete;
  BackgroundDecodelab& operator=(const BackgroundDecodelab&) = delete;

  void send(int signal_number) const;
  std::string stderr_so_far() const;
  CommandResult wait();  // waits for the exit, then reads its output

 private:
  pid_t pid_ = -1;
  std::filesystem::path out_, err_;
};

// Polls `ready` every few milliseconds for up to `seconds`; true once it holds.
template <typename Ready>
bool wait_until(Ready&& ready, double seconds);

}  // namespace decodelab::testing

#include <chrono>
#include <thread>

template <typename Ready>
bool decodelab::testing::wait_until(Ready&& ready, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ready();
}
