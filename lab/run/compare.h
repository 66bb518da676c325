// Fixed vs buggy: a scenario and its fixed twin (every bug off, all else equal) loaded on
// one backend, their repeats run in pairs — fixed then buggy, buggy then fixed, in turn —
// so that drift on a shared machine hits both sides of a pair. Pairs continue under the
// buggy scenario's repeat policy until the slowdown its lesson is about is known to
// ±target_ci — and the other slowdown too, as every slowdown is printed with its interval —
// (or the count or time budget ends them). Both slowdowns are the median of the pairs'
// own ratios (drift between pairs cancels), each with its 95% interval; every repeat is
// traced, and the attribution explains the difference of the medians the rows show (each
// cause's median over the pairs). The report shows, per side, the
// traced repeat closest to that side's median. The prediction of both slowdowns
// (lab/predict/row_prediction.h), from the roofs the analysis used, sits beside them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/base/errors.h"
#include "lab/predict/row_prediction.h"
#include "lab/run/runner.h"
#include "lab/scenario/scenario.h"
#include "lab/run/slowdown.h"
#include "lab/run/token_agreement.h"
#include "profiling/model/analysis.h"
#include "profiling/model/attribution.h"
#include "profiling/report/report.h"
#include "profiling/trace.h"

namespace decodelab {

struct CompareOptions {
  std::optional<BackendKind> backend;
  int threads = 0;
  std::optional<int64_t> max_memory_bytes;
  ProgressMode progress = ProgressMode::Off;
  std::string progress_label;  // prefix of the progress line ("[2/5] host_sync")
  std::vector<std::string> predict_on = default_reference_devices();  // devices the slowdown is also predicted on
  // Checked before timing when given; otherwise compare checks the machine itself.
  std::optional<MachineState> machine;
  // The comparison's ceiling (a monotonic now_ns() time): loading, warm-ups and pairs all end
  // by it — a pair that would not fit in the time left is not started, and a repeat still
  // running at it is abandoned — in place of run.max_seconds counted from the warm-ups
  // (min_repeats too give way to it). The lab hands each bug its share of the lab's budget so.
  std::optional<int64_t> deadline_ns;
  double budget_seconds = 0;  // the time to deadline_ns when the lab handed it on, for messages
  // The roofs to judge by, when the caller has them (the lab's: the calibration it made first,
  // or quick roofs for a short budget, which no file holds); else the calibration, made first
  // where there is none.
  std::optional<DeviceSpec> roofs;
};

// Device time per token of one bucket of ops in the attribution's scope (the decode phase,
// or the whole run), over the same pairs of repeats as the attribution and as its medians:
// the table beside the "why slower" bars tells their story, never one repeat's.
struct CategoryDelta {
  std::string category;           // matmul, attention, copy, cast, sync/idle, other
  double fixed_ms_per_token = 0;  // the median over the pairs
  double buggy_ms_per_token = 0;
  Estimate delta;                 // buggy - fixed of each pair: its median and interval, ms per token
  // The pairs disagree on the sign of the difference: printed as within the noise.
  bool within_noise() const { return delta.samples > 1 && delta.median != 0 && delta.low <= 0 && delta.high >= 0; }
};

struct ComparedRun {
  Scenario scenario;
  RunResult result;
  std::unique_ptr<Trace> trace;  // the traced repeat closest to this side's median
  RunAnalysis analysis;          // of that trace
};

struct Comparison {
  ComparedRun fixed;
  ComparedRun buggy;
  Estimate decode_slowdown;      // the median over the pairs of buggy / fixed decode time per token
  Estimate end_to_end_slowdown;  // ... of buggy / fixed end-to-end time
  SlowdownReading headline;      // the slowdown the scenario's lesson is about, and its verdict
  std::vector<CategoryDelta> categories;
  Attribution attribution;       // of the headline's medians (see above)
  bool same_tokens = false;      // the bugs changed no generated token (beyond a near-tie on CUDA: `tokens`)
  TokenAgreement tokens;
  int pairs = 0;
  std::string stopped_because;
  bool interrupted = false;      // a stop was requested: the pairs finished before it, the one in progress dropped
  double timed_seconds = 0;      // wall time of the pairs (warm-up excluded)
  double budget_seconds = 0;     // the time the pairs could take: run.max_seconds, or what the lab's deadline left
  MachineState machine;          // the check taken before timing
  RowPrediction prediction;      // both slowdowns predicted here (the analysis's roofs) and on options.predict_on
};

// The deadline passed before one pair of repeats finished: the budget was too small.
class BudgetSpent : public ResourceError {
 public:
  using ResourceError::ResourceError;
};

// Throws RepeatAbandoned (lab/run/interrupt.h) when a stop is requested before any pair finished,
// and BudgetSpent when the deadline passes before one did.
Comparison compare_with_fixed_twin(const Scenario& buggy, const CompareOptions& options);

// The per-token time of a repeat that a slowdown compares: decode wall time per decode
// token, or end-to-end time per generated token.
double ms_per_token(const GenerationTiming& timing, SlowdownMetric metric, const Workload& workload);
// A measured slowdown: the median over the pairs (repeat i of each side is pair i) of buggy /
// fixed ms_per_token, with its interval (statistics.h paired_ratio).
Estimate paired_slowdown(const std::vector<GenerationTiming>& fixed, const std::vector<GenerationTiming>& buggy,
                         SlowdownMetric metric, const Workload& workload, double target_ci);

// Where the verdict is "below" or "above" the course's range, one more sentence from the
// model: what the bug costs here and on the first reference device (the lesson's GPU), and
// why the range does not apply to this device — a finding, not a failure.
void explain_range(SlowdownReading& headline, const RowPrediction& prediction);

// One repeat's device time per bucket (in bucket_order()), ms per token of `scope`: its op
// groups and, as "sync/idle", its idle time, over `tokens`.
const std::vector<std::string>& bucket_order();
std::vector<double> bucket_ms_per_token(const RunAnalysis& analysis, AttributionScope scope, int64_t tokens);
// The per-bucket table from each pair's buckets (one entry per pair on either side).
std::vector<CategoryDelta> category_deltas(const std::vector<std::vector<double>>& fixed,
                                           const std::vector<std::vector<double>>& buggy);

// The drift_note of each slowdown whose rows' medians divide to a ratio outside its interval.
std::vector<std::string> drift_notes(const Comparison& comparison);
// The per-bucket table (comparison.categories) as printed, a difference within the noise marked so.
std::string bucket_table(const Comparison& comparison);
std::string comparison_table(const Comparison& comparison);
nlohmann::json comparison_json(const Comparison& comparison);

}  // namespace decodelab
