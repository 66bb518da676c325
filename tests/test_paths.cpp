// Data-root discovery and scenario-name resolution: DECODELAB_HOME wins over the source
// tree; a scenario is found by path, by path under scenarios/, or by a unique stem.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>

#include "engine/errors.h"
#include "lab/paths.h"
#include "support/temp_dir.h"

using namespace decodelab;
using decodelab::testing::TempDir;

namespace {

// Sets DECODELAB_HOME for one scope and restores what was there.
class HomeOverride {
 public:
  explicit HomeOverride(const std::string& value) {
    if (const char* old = std::getenv("DECODELAB_HOME")) previous_ = old;
    ::setenv("DECODELAB_HOME", value.c_str(), 1);
  }
  ~HomeOverride() {
    if (previous_) {
      ::setenv("DECODELAB_HOME", previous_->c_str(), 1);
    } else {
      ::unsetenv("DECODELAB_HOME");
    }
  }

 private:
  std::optional<std::string> previous_;
};

}  // namespace

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
    const HomeOverride home(dir.path().string());
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
  const HomeOverride missing((dir.path() / "nope").string());
  CHECK_THROWS_AS(data_root(), InputError);
}
