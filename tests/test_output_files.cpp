// Staged output files: nothing appears at the destination before commit(), and an
// uncommitted set leaves no file behind, not even its temporaries.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "engine/base/errors.h"
#include "lab/output_files.h"
#include "support/temp_dir.h"

using namespace decodelab;
using decodelab::testing::TempDir;

namespace {

std::string contents_of(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("staged files appear only at commit, and replace what was there", "[output_files]") {
  const TempDir dir;
  const auto result = dir.write("result.json", "old");
  const auto logits = dir.path() / "logits.npy";
  {
    StagedOutputs outputs;
    outputs.stage(result, "new result");
    outputs.stage(logits, std::string("\0\1\2", 3));
    CHECK(contents_of(result) == "old");
    CHECK_FALSE(std::filesystem::exists(logits));
    outputs.commit();
  }
  CHECK(contents_of(result) == "new result");
  CHECK(contents_of(logits) == std::string("\0\1\2", 3));
  CHECK(dir.entry_count() == 2);  // no temporaries left
}

TEST_CASE("an uncommitted set removes its temporaries and touches nothing", "[output_files]") {
  const TempDir dir;
  const auto existing = dir.write("result.json", "keep me");
  {
    StagedOutputs outputs;
    outputs.stage(existing, "half-done");
    outputs.stage(dir.path() / "new.npy", "data");
    CHECK(dir.entry_count() == 3);  // the original and two temporaries
  }
  CHECK(dir.entry_count() == 1);
  CHECK(contents_of(existing) == "keep me");
}

TEST_CASE("output paths are checked before any work", "[output_files]") {
  const TempDir dir;
  CHECK_NOTHROW(check_output_path(dir.path() / "ok.json", "--json"));
  CHECK_THROWS_WITH(check_output_path(dir.path() / "missing" / "x.json", "--json"),
                    Catch::Matchers::Contains("--json") && Catch::Matchers::Contains("does not exist"));
  CHECK_THROWS_AS(check_output_path(dir.path(), "--json"), InputError);
  CHECK_THROWS_AS(check_output_path("", "--json"), InputError);
}

TEST_CASE("a report directory must be a directory that exists or can be created", "[output_files]") {
  const TempDir dir;
  CHECK_NOTHROW(check_output_directory(dir.path(), "--report"));                      // exists
  CHECK_NOTHROW(check_output_directory(dir.path() / "new" / "deeper", "--report"));  // created later
  const auto file = dir.write("taken", "x");
  CHECK_THROWS_WITH(check_output_directory(file, "--report"),
                    Catch::Matchers::Contains("--report") && Catch::Matchers::Contains("is not a directory"));
  CHECK_THROWS_WITH(check_output_directory(file / "below", "--report"),
                    Catch::Matchers::Contains("cannot be created"));
  CHECK_THROWS_AS(check_output_directory("", "--report"), InputError);
}
