// Blind diagnosis: a trace alone → which of the five classic inference bugs it shows,
// each with its evidence (the measured signal and its size) and a confidence. The trace
// never names a bug or a toggle; every finding is earned from what a profiler records:
// op shapes, strides and dtypes, the attention extent, host calls, ranges and metadata.
//
// Non-obvious choice: every decision rests on structure (rows per step, strides, dtypes,
// where the device-to-host reads sit, how many sequences each group serves), never on
// timings. Structure is exact and the same on a quiet GPU and a busy 2-core CPU; timings
// only size the evidence (how long the host waited, how slow attention ran). A signal
// must hold in more than half of the decode steps to count, so one stray read or copy
// is not a bug. The signals, thresholds and what is undetectable are in docs/diagnosis.md.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiling/trace.h"

namespace decodelab {

// The five names, as scenarios and reports spell them.
inline constexpr const char* kDiagnosableBugs[] = {"no_kv_cache", "non_contiguous", "host_sync", "fp32_ops",
                                                   "sequential_generation"};

struct Finding {
  std::string name;        // one of kDiagnosableBugs
  std::string variant;     // the form the signal shows: "copy" | "strided" (non_contiguous),
                           // "token" | "layer" | "sequence" (host_sync), "norms" | "matmuls" | "all"
                           // (fp32_ops); empty where the bug has one form
  std::string evidence;    // the measured signal and its size, in one sentence
  double confidence = 0;   // 0..1: how unambiguous the signal is (see docs/diagnosis.md)
};

// What the trace held, in the terms diagnosis reads it.
struct DiagnosedShape {
  std::string source;  // "decodelab" | "torch.profiler"
  std::string backend, device, dtype, model;
  int runs = 0;                 // timed repeats (run ranges)
  int requests_per_run = 0;     // sequences the first run generated
  int groups_per_run = 0;       // request groups of the first run
  int decode_steps = 0;         // all runs
  int layers = 0;
  // Device timeline (torch traces with device activity): span, busy (any activity), kernels.
  double device_span_seconds = 0, device_busy_seconds = 0, kernel_busy_seconds = 0;
  int64_t idle_gaps = 0;
};

struct Diagnosis {
  DiagnosedShape shape;
  bool diagnosed = true;              // false: the trace holds no generate loop to diagnose
  std::string not_diagnosed;          // why not, when so
  std::vector<std::string> not_checked;  // checks that could not run on this trace, and why
  std::vector<Finding> bugs;          // in kDiagnosableBugs order; empty for a clean run
  std::vector<std::string> checked;   // each check that found nothing, and what it read
  std::vector<std::string> limits;    // what this trace cannot show (e.g. one request: nothing to batch)

  const Finding* find(const std::string& name) const;
};

struct TraceReading;
// The checks run on a reading (profiling/diagnosis/pass_reading.h): decodelab's own trace read by
// read_trace(), a torch.profiler trace by read_torch_trace().
Diagnosis diagnose(const TraceReading& reading);
Diagnosis diagnose(const Trace& trace);

// {"schema": "decodelab-diagnosis", "schema_version", "diagnosed", "not_diagnosed" (when false),
// "trace": {...}, "bugs": [{name, variant, evidence, evidence_list, confidence}], "checked": [...],
// "not_checked": [...], "limits": [...]}
constexpr int kDiagnosisSchemaVersion = 2;
nlohmann::json to_json(const Diagnosis& diagnosis);
// "not diagnosed: why", or one finding per block (evidence as a short list), or "no bugs
// found" (only when every check ran) and what was checked; then what was not, and the limits.
std::string format_diagnosis(const Diagnosis& diagnosis);

}  // namespace decodelab
