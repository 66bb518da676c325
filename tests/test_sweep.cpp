// Sweep expansion: lists in the workload become the product of their values.
#include <catch2/catch.hpp>

#include "engine/errors.h"
#include "lab/sweep.h"

using namespace decodelab;

TEST_CASE("a scenario without lists is one point", "[sweep]") {
  const YAML::Node scenario = YAML::Load("model: lab-tiny\nworkload: {batch_size: 4, prompt_ids: [1, 2, 3]}\n");
  const auto points = expand_sweep(scenario);
  REQUIRE(points.size() == 1);
  CHECK(points[0].label.empty());
  CHECK(points[0].scenario["workload"]["prompt_ids"].size() == 3);
}

TEST_CASE("list-valued workload keys expand to their product, first key outermost", "[sweep]") {
  const YAML::Node scenario =
      YAML::Load("model: lab-tiny\nworkload: {batch_size: [1, 2, 4], prompt_tokens: [8, 16], new_tokens: 4}\n");
  CHECK(swept_keys(scenario) == std::vector<std::string>{"batch_size", "prompt_tokens"});
  const auto points = expand_sweep(scenario);
  REQUIRE(points.size() == 6);
  CHECK(points[0].label == "batch_size=1 prompt_tokens=8");
  CHECK(points[1].label == "batch_size=1 prompt_tokens=16");
  CHECK(points[5].label == "batch_size=4 prompt_tokens=16");
  CHECK(points[5].scenario["workload"]["batch_size"].as<int>() == 4);
  CHECK(points[5].scenario["workload"]["new_tokens"].as<int>() == 4);
  // The original document is untouched.
  CHECK(scenario["workload"]["batch_size"].IsSequence());
}

TEST_CASE("prompt_ids sweeps only as a list of lists", "[sweep]") {
  const YAML::Node scenario = YAML::Load("workload: {prompt_ids: [[1, 2], [3, 4, 5]]}\n");
  const auto points = expand_sweep(scenario);
  REQUIRE(points.size() == 2);
  CHECK(points[1].scenario["workload"]["prompt_ids"].size() == 3);
  CHECK(points[1].label == "prompt_ids=[3, 4, 5]");
}

TEST_CASE("a sweep of too many combinations is refused before anything runs", "[sweep]") {
  // 100 × 100 × 2 = 20000 combinations: over the limit, refused without building them.
  std::string hundred = "[";
  for (int i = 1; i <= 100; ++i) hundred += (i > 1 ? ", " : "") + std::to_string(i);
  hundred += "]";
  const YAML::Node scenario = YAML::Load("model: lab-tiny\nworkload:\n  requests: " + hundred +
                                         "\n  batch_size: " + hundred + "\n  new_tokens: [1, 2]\n");
  CHECK_THROWS_WITH(expand_sweep(scenario, "big.yaml"),
                    Catch::Matchers::StartsWith("big.yaml:3: workload: the lists sweep more than 10000 combinations"));
  // A key that is not a name is left for validation to report, not a crash here.
  const YAML::Node odd = YAML::Load("workload: {? [a, b] : [1, 2], batch_size: [1, 2]}\n");
  CHECK(expand_sweep(odd).size() == 2);
}

TEST_CASE("sweep: zip advances equal-length lists together", "[sweep]") {
  const YAML::Node scenario =
      YAML::Load("sweep: zip\nworkload: {requests: [1, 8, 64], batch_size: [1, 8, 64], new_tokens: 4}\n");
  const auto points = expand_sweep(scenario, "zip.yaml");
  REQUIRE(points.size() == 3);
  CHECK(points[1].label == "requests=8 batch_size=8");
  CHECK(points[2].scenario["workload"]["requests"].as<int>() == 64);
  CHECK_FALSE(points[0].scenario["sweep"]);  // the expanded scenario is plain again
}

TEST_CASE("sweep: zip refuses lists of different lengths, naming the key", "[sweep]") {
  const YAML::Node scenario = YAML::Load("sweep: zip\nworkload:\n  requests: [1, 8]\n  batch_size: [1, 8, 64]\n");
  try {
    expand_sweep(scenario, "zip.yaml");
    FAIL("expected an error");
  } catch (const decodelab::InputError& error) {
    CHECK(error.file() == "zip.yaml");
    CHECK(error.line() == 4);
    CHECK(error.key() == "workload.batch_size");
  }
}
