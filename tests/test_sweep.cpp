// Sweep expansion: lists in the workload become the product of their values.
#include <catch2/catch.hpp>

#include "engine/base/errors.h"
#include "lab/run/sweep.h"

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

TEST_CASE("sweep: backend, threads and dtype sweep as lists, outermost and in that order", "[sweep]") {
  // prepare: the settings written after the workload, in another order than they expand in
  const YAML::Node scenario = YAML::Load(
      "model: lab-tiny\nworkload: {batch_size: [1, 2], new_tokens: 4}\ndtype: [fp32, bf16]\nthreads: [1, 2]\n"
      "backend: cpu\n");
  // run
  CHECK(swept_keys(scenario) == std::vector<std::string>{"threads", "dtype", "batch_size"});
  const auto points = expand_sweep(scenario);
  // verify: threads outermost (a sweep reopens the backend only when it changes)
  REQUIRE(points.size() == 8);
  CHECK(points[0].label == "threads=1 dtype=fp32 batch_size=1");
  CHECK(points[1].label == "threads=1 dtype=fp32 batch_size=2");
  CHECK(points[2].label == "threads=1 dtype=bf16 batch_size=1");
  CHECK(points[7].label == "threads=2 dtype=bf16 batch_size=2");
  CHECK(points[7].scenario["threads"].as<int>() == 2);
  CHECK(points[7].scenario["dtype"].as<std::string>() == "bf16");
  CHECK(points[7].scenario["backend"].as<std::string>() == "cpu");
  CHECK(points[7].scenario["workload"]["batch_size"].as<int>() == 2);
  CHECK_FALSE(points[7].scenario["workload"]["threads"]);  // settings stay at the top level
  CHECK(points[7].values == std::vector<std::pair<std::string, std::string>>{
                               {"threads", "2"}, {"dtype", "bf16"}, {"batch_size", "2"}});
}

TEST_CASE("sweep: zip advances a run setting with the workload lists", "[sweep]") {
  const YAML::Node scenario =
      YAML::Load("sweep: zip\nbackend: [cpu, cuda]\nworkload: {batch_size: [1, 8], new_tokens: 4}\n");
  const auto points = expand_sweep(scenario);
  REQUIRE(points.size() == 2);
  CHECK(points[0].label == "backend=cpu batch_size=1");
  CHECK(points[1].label == "backend=cuda batch_size=8");

  const YAML::Node uneven = YAML::Load("sweep: zip\ndtype: [fp32, fp16, bf16]\nworkload: {batch_size: [1, 8]}\n");
  CHECK_THROWS_WITH(expand_sweep(uneven, "s.yaml"),
                    Catch::Matchers::Contains("s.yaml:3: workload.batch_size") &&
                        Catch::Matchers::Contains("dtype has 3 values, batch_size has 2"));
}
