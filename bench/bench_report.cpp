// BenchReport: markdown on stdout as the run goes, JSON at the end (see bench_report.h).
#include "bench/bench_report.h"

#include <cstdio>

namespace decodelab::bench {

void BenchReport::heading(const std::string& title, const std::string& note) {
  std::printf("\n## %s\n\n", title.c_str());
  if (!note.empty()) std::printf("%s\n\n", note.c_str());
  std::fflush(stdout);
}

void BenchReport::table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  auto print_row = [](const std::vector<std::string>& cells) {
    std::printf("|");
    for (const std::string& cell : cells) std::printf(" %s |", cell.c_str());
    std::printf("\n");
  };
  print_row(header);
  std::printf("|");
  for (size_t i = 0; i < header.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (const auto& row : rows) print_row(row);
  std::printf("\n");
  std::fflush(stdout);
}

void BenchReport::note(const std::string& text) {
  std::printf("%s\n\n", text.c_str());
  std::fflush(stdout);
}

void BenchReport::check(Check check) { checks_.push_back(std::move(check)); }

int BenchReport::print_checks(const std::string& title) {
  heading(title);
  std::vector<std::vector<std::string>> rows;
  int missed = 0;
  for (const Check& check : checks_) {
    const bool met = check.met();
    missed += met ? 0 : 1;
    rows.push_back({check.name, fixed(check.measured, 2) + " " + check.unit, ">= " + fixed(check.target, 2) + " " + check.unit,
                    met ? "met" : "**missed**", check.basis});
  }
  table({"target", "measured", "wanted", "", "how"}, rows);
  return missed;
}

nlohmann::json BenchReport::json() const {
  nlohmann::json result = json_;
  result["checks"] = nlohmann::json::array();
  for (const Check& check : checks_) {
    result["checks"].push_back({{"name", check.name},
                                {"measured", check.measured},
                                {"target", check.target},
                                {"unit", check.unit},
                                {"met", check.met()},
                                {"basis", check.basis}});
  }
  return result;
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string percent(double fraction) { return fixed(100.0 * fraction, 0) + "%"; }

}  // namespace decodelab::bench
