// What one `decodelab_bench_cpu` run reports: markdown tables printed as each section
// finishes, the same figures as JSON, and the targets (issue 7's) each checked against
// a figure measured in this run. The one non-obvious choice: a target is stated as a
// ratio to a yardstick measured in the same run (STREAM triad, the FMA peak), never as an
// absolute number, because on a shared machine the bandwidth a virtual machine gets can
// change by 2x within minutes. llama.cpp is measured beside decodelab, never quoted (bench/llamacpp/).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace decodelab::bench {

struct Check {
  std::string name;      // "decode fp16, batch 1: GB/s / STREAM triad"
  double measured = 0;   // in `unit`
  double target = 0;     // measured must be >= target
  std::string unit;      // "x", "%", "tok/s"
  std::string basis;     // how the figure was obtained, one line
  bool met() const { return measured >= target; }
};

class BenchReport {
 public:
  // "## title" and an optional paragraph under it.
  void heading(const std::string& title, const std::string& note = "");
  // A markdown table, printed at once.
  void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
  // A line of text under the current section.
  void note(const std::string& text);
  // The JSON object of a section ("stream", "decode", ...), created on first use.
  nlohmann::json& section(const std::string& name) { return json_["sections"][name]; }
  nlohmann::json& root() { return json_; }
  void check(Check check);
  // The targets' table under `title`; returns how many were missed.
  int print_checks(const std::string& title);
  nlohmann::json json() const;

 private:
  nlohmann::json json_ = nlohmann::json::object();
  std::vector<Check> checks_;
};

// Number formatting for the tables.
std::string fixed(double value, int decimals = 1);
std::string percent(double fraction);  // 0.853 -> "85%"

}  // namespace decodelab::bench
