// Run folders: the manifest survives a write and a read unchanged, a damaged one is refused
// with the key that is wrong, and point indices read and write as Slurm's array ranges.
#include <catch2/catch.hpp>

#include "engine/base/errors.h"
#include "lab/cluster/run_folder.h"
#include "support/temp_dir.h"

using namespace decodelab;
using Catch::Matchers::Contains;

namespace {

RunManifest sample_manifest() {
  RunManifest manifest;
  manifest.command = "sweep";
  manifest.decodelab_version = "0.1.0";
  manifest.created_at = "2026-01-31T12:00:00Z";
  manifest.working_directory = "/home/lab";
  manifest.submitted_with = {"decodelab", "sweep", "s.yaml", "--slurm"};
  manifest.overrides = {"workload.seed=3"};
  manifest.settings = {"cpu", 2, true};
  manifest.slurm.job_name = "decodelab-sweep-s";
  manifest.slurm.gres = "gpu:1";
  manifest.slurm.time_limit = "30:00";
  manifest.slurm.throttle = 4;
  manifest.slurm.cpus_per_task = 8;
  manifest.slurm.extra_options = {"--account=perf"};
  manifest.sets = {{"l4", "l4"}, {"h200", "h200"}};
  manifest.points = {{"new_tokens=4", "s.yaml", {{"new_tokens", "4"}}, "model: lab-tiny\n"},
                     {"new_tokens=8", "s.yaml", {{"new_tokens", "8"}}, "model: lab-tiny\n"}};
  manifest.submissions = {{"l4", "100", 0, {0, 1}, "2026-01-31T12:00:01Z", {"sbatch", "--array=0-1"}},
                          {"l4", "107", 0, {1}, "2026-01-31T13:00:00Z", {"sbatch", "--array=1"}}};
  return manifest;
}

}  // namespace

TEST_CASE("a run folder's manifest reads back as written", "[run_folder]") {
  const testing::TempDir dir;
  const RunFolder folder(dir.path());
  const RunManifest written = sample_manifest();
  folder.write_manifest(written);
  const RunManifest read = folder.read_manifest();
  CHECK(manifest_json(read) == manifest_json(written));
  CHECK(read.points[1].swept == written.points[1].swept);
  // The latest attempt of each point: point 1 was resubmitted as job 107; h200 never ran.
  REQUIRE(read.latest_submission("l4", 0) != nullptr);
  CHECK(read.latest_submission("l4", 0)->job_id == "100");
  CHECK(read.latest_submission("l4", 1)->job_id == "107");
  CHECK(read.latest_submission("h200", 0) == nullptr);
  CHECK(folder.row_file("l4", 1) == dir.path() / "rows" / "l4" / "00001.json");
  CHECK(folder.log_file("l4", "107", 1) == dir.path() / "logs" / "l4" / "107_1.out");
}

TEST_CASE("a damaged manifest is refused with the key that is wrong", "[run_folder]") {
  const testing::TempDir dir;
  const RunFolder folder(dir.path());
  CHECK_THROWS_WITH(folder.read_manifest(), Contains("holds no manifest.json"));

  nlohmann::json json = manifest_json(sample_manifest());
  json["points"][0].erase("scenario");
  dir.write("manifest.json", json.dump());
  CHECK_THROWS_WITH(folder.read_manifest(), Contains("manifest.json: points[].scenario: missing"));

  json = manifest_json(sample_manifest());
  json["settings"]["threads"] = -1;
  dir.write("manifest.json", json.dump());
  CHECK_THROWS_WITH(folder.read_manifest(), Contains("settings.threads: expected a non-negative integer"));

  json = manifest_json(sample_manifest());
  json["submissions"][0]["points"] = "0-9";
  dir.write("manifest.json", json.dump());
  CHECK_THROWS_WITH(folder.read_manifest(), Contains("point 2 does not exist"));

  json = manifest_json(sample_manifest());
  json["sets"][0]["name"] = "../elsewhere";
  dir.write("manifest.json", json.dump());
  CHECK_THROWS_WITH(folder.read_manifest(), Contains("is not a usable folder name"));

  dir.write("manifest.json", "{\"kind\": \"decodelab run folder\", ");
  CHECK_THROWS_AS(folder.read_manifest(), InputError);
  dir.write("manifest.json", "[1, 2]");
  CHECK_THROWS_WITH(folder.read_manifest(), Contains("expected \"decodelab run folder\""));
}

TEST_CASE("point indices as Slurm array ranges", "[run_folder]") {
  CHECK(index_ranges({}) == "");
  CHECK(index_ranges({3}) == "3");
  CHECK(index_ranges({0, 1, 2, 3, 7, 9, 10}) == "0-3,7,9-10");
  CHECK(index_ranges({5, 1, 2, 2}) == "1-2,5");
  CHECK(parse_index_ranges("0-3,7,9-10", "x") == std::vector<size_t>{0, 1, 2, 3, 7, 9, 10});
  // What squeue, scontrol and sacct print for folded pending tasks.
  CHECK(parse_index_ranges("[4-6%2]", "x") == std::vector<size_t>{4, 5, 6});
  CHECK(parse_index_ranges("0-6:3", "x") == std::vector<size_t>{0, 3, 6});
  CHECK(parse_index_ranges("", "x").empty());
  CHECK_THROWS_WITH(parse_index_ranges("3-1", "x"), Contains("expected index ranges"));
  CHECK_THROWS_WITH(parse_index_ranges("a", "x"), Contains("expected index ranges"));
  CHECK_THROWS_AS(parse_index_ranges("0-99999999999", "x"), InputError);
}

TEST_CASE("row set names are folder names", "[run_folder]") {
  CHECK(is_safe_set_name("h200"));
  CHECK(is_safe_set_name("gpu-a100_80g.v2"));
  CHECK_FALSE(is_safe_set_name(""));
  CHECK_FALSE(is_safe_set_name(".hidden"));
  CHECK_FALSE(is_safe_set_name("a/b"));
  CHECK_FALSE(is_safe_set_name("a b"));
}
