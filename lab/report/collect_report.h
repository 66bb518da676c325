// What `collect` prints from a run folder's rows: each row set's table — the very table a
// local sweep or lab prints, built by the same functions from the same rows — headed by
// the partition and the devices and nodes its rows ran on; and, for a study over several
// partitions, one table putting the sets side by side, point by point, with each set's
// throughput relative to the first set's. For a lab run, the report folder too.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lab/cluster/run_folder.h"
#include "lab/scenario/scenario.h"
#include "lab/run/sweep.h"

namespace decodelab {

// One row set's rows by point (nullptr where the point has no row yet).
struct CollectedSet {
  RunSet set;
  std::vector<const nlohmann::json*> rows;
};

// The run's points as the local command saw them, rebuilt from the manifest (scenario
// paths relative to the run's working directory). A sweep's points carry their swept values.
struct CollectedPoints {
  std::vector<SweepPoint> points;
  std::vector<Scenario> scenarios;
};
CollectedPoints collected_points(const RunManifest& manifest);

// "partition main: cpu: AMD EPYC 7B13 (2 threads) on node1, node2" — every distinct device
// and node the set's rows name (a partition of mixed GPUs shows each).
std::string set_heading(const CollectedSet& set);

// The local command's table for the rows present, in point order.
std::string set_table(const RunManifest& manifest, const CollectedPoints& points, const CollectedSet& set);

// Point by point across sets: a sweep's decode tok/s and limiter per set, then each later
// set's tok/s over the first's; the lab's slowdown and verdict per set. "-" where a set has
// no row for the point.
std::string side_by_side_table(const RunManifest& manifest, const CollectedPoints& points,
                               const std::vector<CollectedSet>& sets);

// A markdown table (the tables above) as an HTML table; the rule under the header is dropped.
std::string markdown_table_html(const std::string& markdown);

// A lab run's report in `directory`: each set's bug reports (copied from the run folder,
// where the tasks wrote them) and its index page; with several sets one folder per set and
// an index.html with the side-by-side table.
void write_collected_lab_report(const std::filesystem::path& directory, const RunFolder& folder,
                                const std::vector<CollectedSet>& sets, const std::string& side_by_side);

}  // namespace decodelab
