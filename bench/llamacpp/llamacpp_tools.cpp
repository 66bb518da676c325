// llama.cpp's tools as child processes (see llamacpp_tools.h). Each runs through the shell
// with every argument single-quoted; stdout goes to a pipe, stderr to the log file.
#include "bench/llamacpp/llamacpp_tools.h"

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "engine/base/errors.h"

namespace decodelab::bench {

namespace {

namespace fs = std::filesystem;

std::string quoted(const std::string& argument) {
  std::string text = "'";
  for (char c : argument) {
    if (c == '\'')
      text += "'\\''";  // close the quotes, an escaped quote, reopen
    else
      text += c;
  }
  return text + "'";
}

// Runs the command; returns its stdout. Throws with the log's path when it fails.
std::string run_tool(const std::vector<std::string>& arguments, const fs::path& log) {
  std::string command;
  for (const std::string& argument : arguments) command += quoted(argument) + " ";
  command += "2> " + quoted(log.string());
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot start " + arguments.front());
  std::string output;
  char buffer[4096];
  size_t read;
  while ((read = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, read);
  const int status = pclose(pipe);
  if (status != 0) {
    throw std::runtime_error(fs::path(arguments.front()).filename().string() + " failed (status " +
                             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : status) + "); see " +
                             log.string());
  }
  return output;
}

// "build: 4754 (c392e509) with cc ..." -> "4754 (c392e509)".
std::string build_of(const fs::path& log) {
  std::ifstream stream(log);
  std::string line;
  while (std::getline(stream, line)) {
    if (line.rfind("build: ", 0) == 0) {
      const size_t end = line.find(" with ");
      return line.substr(7, end == std::string::npos ? std::string::npos : end - 7);
    }
  }
  return "";
}

std::string joined(const std::vector<int>& values) {
  std::string text;
  for (int value : values) {
    if (!text.empty()) text += ',';
    text += std::to_string(value);
  }
  return text;
}

}  // namespace

LlamaCpp find_llamacpp(const fs::path& build_directory) {
  auto find = [&](const char* name) {
    for (const fs::path& candidate : {build_directory / "bin" / name, build_directory / name})
      if (fs::is_regular_file(candidate)) return candidate;
    throw InputError(build_directory.string(), 0, "", std::string("no ") + name +
                                                         " here or in bin/: build llama.cpp's llama-simple and "
                                                         "llama-batched-bench targets");
  };
  LlamaCpp llama;
  llama.simple = find("llama-simple");
  llama.batched_bench = find("llama-batched-bench");
  return llama;
}

std::string llamacpp_greedy_text(LlamaCpp& llama, const fs::path& gguf, const std::string& prompt_text, int new_tokens,
                                 const fs::path& log) {
  // llama-simple prints the prompt's pieces, then each generated piece, then a newline.
  const std::string output = run_tool(
      {llama.simple.string(), "-m", gguf.string(), "-n", std::to_string(new_tokens + 1), prompt_text}, log);
  if (output.rfind(prompt_text, 0) != 0)
    throw std::runtime_error("llama-simple did not echo the prompt as expected; see " + log.string());
  return output.substr(prompt_text.size());
}

std::vector<BatchedBenchRow> llamacpp_batched_bench(LlamaCpp& llama, const fs::path& gguf, int threads,
                                                    const std::vector<int>& prompts, int generated,
                                                    const std::vector<int>& sequences, const fs::path& log) {
  const std::string output =
      run_tool({llama.batched_bench.string(), "-m", gguf.string(), "-t", std::to_string(threads), "-tb",
                std::to_string(threads), "-c", "4096", "-b", "2048", "-ub", "512", "-npp", joined(prompts), "-ntg",
                std::to_string(generated), "-npl", joined(sequences), "--output-format", "jsonl"},
               log);
  if (llama.build.empty()) llama.build = build_of(log);
  std::vector<BatchedBenchRow> rows;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line.front() != '{') continue;
    const nlohmann::json row = nlohmann::json::parse(line);
    rows.push_back({row.at("pp").get<int>(), row.at("tg").get<int>(), row.at("pl").get<int>(),
                    row.at("speed_pp").get<double>(), row.at("speed_tg").get<double>()});
  }
  if (rows.size() != prompts.size() * sequences.size())
    throw std::runtime_error("llama-batched-bench printed " + std::to_string(rows.size()) + " result rows, expected " +
                             std::to_string(prompts.size() * sequences.size()) + "; see " + log.string());
  return rows;
}

}  // namespace decodelab::bench
