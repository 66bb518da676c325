// Data-root discovery and scenario-name resolution: DECODELAB_HOME wins over the source
// tree; a scenario is found by path, by path under scenarios/, or by a unique stem.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "engine/base/errors.h"
#include "lab/paths.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

using namespace decodelab;
using decodelab::testing::ScopedEnv;
using decodelab::testing::TempDir;

TEST_CASE("without DECODELAB_HOME the build's source tree is the data root", "[paths]") {
  if (std::getenv("DECODELAB_HOME")) return;  // someone runs the tests with their own home
  const DataRoot root = data_root();
  CHECK(root.origin == "source tree");
  CHECK(std::filesystem::equivalent(root.path, DECODELAB_SOURCE_DIR));
  CHECK(std::filesystem::is_regular_file(models_dir() / "lab-tiny.yaml"));
}

TEST_CASE("DECODELAB_HOME overrides, and a missing one is an input error", "[paths]") {
  const TempDir dir;
  dir.write("configs/models/only.yaml", "vocab_size: 8\n");
  dir.write("scenarios/a/one.yaml", "model: only\n");
  dir.write("scenarios/b/two.yaml", "model: only\n");
  dir.write("scenarios/c/two.yaml", "model: only\n");
  {
    const ScopedEnv home("DECODELAB_HOME", dir.path().c_str());
    CHECK(data_root().origin == "DECODELAB_HOME");
    CHECK(models_dir() == dir.path() / "configs" / "models");
    CHECK(scenarios_dir() == dir.path() / "scenarios");

    CHECK(resolve_scenario_argument("a/one.yaml") == dir.path() / "scenarios" / "a/one.yaml");
    CHECK(resolve_scenario_argument("a/one") == dir.path() / "scenarios" / "a/one.yaml");
    CHECK(resolve_scenario_argument("one") == dir.path() / "scenarios" / "a" / "one.yaml");
    const auto given = dir.write("elsewhere.yaml", "model: only\n");
    CHECK(resolve_scenario_argument(given.string()) == given);
    CHECK_THROWS_WITH(resolve_scenario_argument("two"), Catch::Matchers::Contains("ambiguous"));
    CHECK_THROWS_AS(resolve_scenario_argument("three"), InputError);
  }
  const ScopedEnv missing("DECODELAB_HOME", (dir.path() / "nope").c_str());
  CHECK_THROWS_AS(data_root(), InputError);
}
