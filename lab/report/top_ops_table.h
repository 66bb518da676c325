// `--top N`: the ops that took the most device time, as a table in the terminal, the way
// torch.profiler's key_averages().table() prints one: per op (name, place in the model,
// phase) its calls, total and mean device time, share of the device's busy time, achieved
// rates and limiter. It formats an analysis' top_ops (profiling/model/analysis.h), nothing more.
#pragma once

#include <string>

#include "profiling/model/analysis.h"

namespace decodelab {

// `title` heads the table ("top 10 ops by device time"); at most `rows` rows.
std::string top_ops_table(const RunAnalysis& analysis, size_t rows, const std::string& title);

// The trace analysed again, keeping `rows` top ops (an analysis keeps 12 by default).
RunAnalysis analysis_with_top_ops(const Trace& trace, const DeviceSpec& spec, size_t rows);

}  // namespace decodelab
