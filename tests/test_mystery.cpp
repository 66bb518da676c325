// The lab's practice mode: a mystery case is a pure function of its seed, always a valid
// and diagnosable scenario, its briefing names no bug, its answer names exactly the
// hidden ones — and a lab-tiny mystery, run and diagnosed blind, matches its answer.
#include <catch2/catch.hpp>

#include <set>

#include "engine/backend.h"
#include "lab/run/mystery.h"
#include "profiling/trace/chrome_trace.h"
#include "profiling/diagnosis/diagnosis.h"
#include "tests/support/temp_dir.h"

using namespace decodelab;

namespace {

std::vector<std::string> hidden_names(const BugSet& bugs) {
  std::vector<std::string> names;
  if (bugs.no_kv_cache) names.push_back("no_kv_cache");
  if (bugs.non_contiguous) names.push_back("non_contiguous");
  if (bugs.host_sync) names.push_back("host_sync");
  if (bugs.fp32_ops) names.push_back("fp32_ops");
  if (bugs.sequential_generation) names.push_back("sequential_generation");
  return names;
}

bool mentions(const std::string& text, const std::string& word) { return text.find(word) != std::string::npos; }

}  // namespace

TEST_CASE("mystery: the same seed gives the same case, seeds differ", "[mystery]") {
  const MysteryCase first = mystery_case(42);
  const MysteryCase again = mystery_case(42);
  CHECK(first.model == again.model);
  CHECK(first.dtype == again.dtype);
  CHECK(first.requests == again.requests);
  CHECK(first.batch_size == again.batch_size);
  CHECK(first.prompt_tokens == again.prompt_tokens);
  CHECK(first.new_tokens == again.new_tokens);
  CHECK(first.bugs.describe() == again.bugs.describe());

  std::set<std::string> answers;
  for (uint64_t seed = 0; seed < 40; ++seed) answers.insert(mystery_case(seed).bugs.describe());
  CHECK(answers.size() > 10);
}

TEST_CASE("mystery: every case is a valid, diagnosable scenario that hides each bug sometimes", "[mystery]") {
  std::set<std::string> models, bug_names;
  int clean = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    const MysteryCase mystery = mystery_case(seed);
    INFO("seed " << seed << ": " << mystery.bugs.describe());
    const Scenario scenario = mystery_scenario(mystery);  // validated like a scenario file
    CHECK(scenario.bugs.describe() == mystery.bugs.describe());
    CHECK(scenario.name == "mystery-" + std::to_string(seed));
    models.insert(mystery.model);
    if (mystery.bugs.fp32_ops) CHECK(is_half(mystery.dtype));
    if (mystery.bugs.sequential_generation) CHECK(mystery.requests >= 2);
    if (mystery.requests >= 2) CHECK(mystery.batch_size >= 2);  // a clean case batches
    for (const std::string& name : hidden_names(mystery.bugs)) bug_names.insert(name);
    clean += mystery.bugs.any() ? 0 : 1;
  }
  CHECK(models == std::set<std::string>{"lab-small", "lab-tiny"});
  CHECK(bug_names.size() == 5);
  CHECK(clean > 0);
}

TEST_CASE("mystery: the briefing names no bug, the answer names exactly the hidden ones", "[mystery]") {
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const MysteryCase mystery = mystery_case(seed);
    const std::string briefing = mystery_briefing(mystery);
    const std::string answer = mystery_answer(mystery);
    INFO("seed " << seed << "\n" << briefing << "\n" << answer);
    const std::vector<std::string> hidden = hidden_names(mystery.bugs);
    for (const char* name : kDiagnosableBugs) {
      CHECK_FALSE(mentions(briefing, name));
      const bool is_hidden = std::find(hidden.begin(), hidden.end(), name) != hidden.end();
      CHECK(mentions(answer, std::string("* ") + name) == is_hidden);
    }
    CHECK_FALSE(mentions(briefing, "batch"));
    if (hidden.empty()) CHECK(mentions(answer, "no hidden bugs"));
  }
}

TEST_CASE("mystery: lab-tiny cases run and diagnosed blind match their answers", "[mystery][slow]") {
  const std::unique_ptr<Backend> backend = make_backend(BackendKind::Cpu, {});
  int diagnosed = 0;
  for (uint64_t seed = 0; diagnosed < 3 && seed < 200; ++seed) {
    const MysteryCase mystery = mystery_case(seed);
    if (mystery.model != "lab-tiny" || !mystery.bugs.any()) continue;
    const MysteryRun run = run_mystery(mystery, *backend, RunOptions{});
    const decodelab::testing::TempDir dir;
    write_chrome_trace(run.trace, dir.path() / "mystery.json");
    const Diagnosis diagnosis = diagnose(read_chrome_trace(dir.path() / "mystery.json"));
    std::vector<std::string> found;
    for (const Finding& finding : diagnosis.bugs) found.push_back(finding.name);
    INFO("seed " << seed << "\n" << mystery_answer(mystery) << format_diagnosis(diagnosis));
    CHECK(found == hidden_names(mystery.bugs));
    ++diagnosed;
  }
  CHECK(diagnosed == 3);
}
