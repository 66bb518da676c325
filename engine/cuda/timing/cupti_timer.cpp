// Device times from CUPTI activity records.
//
// Around each op's launches the timer pushes an external correlation id; CUPTI then
// emits, for every runtime/driver API call made meanwhile, a record tying that call's
// correlation id to ours, and every kernel, memcpy and memset carries the correlation
// id of the call that launched it. A graph replay is traced as one graph record
// (CUPTI_ACTIVITY_KIND_GRAPH_TRACE, carrying cudaGraphLaunch's correlation id), not node
// by node: per-node records cost time in the replay they would time. After a sync, a
// forced flush delivers all records; kernels are matched to ops through the two maps and
// an op's interval is its first start to its last end.
//
// The correlations need API records (CUPTI emits them beside those), but an API record
// costs host time on every call: where CUPTI can switch single APIs (12.6 on), the calls
// that launch nothing — the error checks after every launch, event records and queries,
// capture queries — are switched off, so that what the timer measures is not its own cost.
//
// CUPTI is process-wide, so one collector (created once, never destroyed: CUPTI may
// deliver buffers from its own thread until the process ends) serves every backend;
// the external id is (client << 40 | op id), so each backend gets only its own ops.
// Timestamps come on CUPTI's clock and are moved to now_ns()'s by an offset measured
// against cuptiGetTimestamp() at each take. Records are read through the structs this
// toolkit names (cupti_records.inc, chosen by CUPTI_API_VERSION), so CUDA 12.x builds too.
// The forced flush happens at take() only, which the op layer calls at its take points
// (a synchronize), never after a host read inside a step.
#include <cupti.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/base/clock.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/timing/marker.cuh"
#include "engine/cuda/timing/op_timer.h"

namespace decodelab::cuda {

namespace {

#include "engine/cuda/timing/cupti_records.inc"

constexpr int kClientShift = 40;
constexpr uint64_t kOpMask = (uint64_t{1} << kClientShift) - 1;
constexpr size_t kBufferBytes = 8 * 1024 * 1024;
constexpr int kForgetAfterTakes = 8;  // unmatched records and correlations older than this are dropped
constexpr CUpti_ExternalCorrelationKind kExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

struct Interval {
  OpId id;
  uint64_t start;
  uint64_t end;
};

class CuptiCollector {
 public:
  // The process's collector, or nullptr (reason in `why_not`) when CUPTI cannot be used.
  static CuptiCollector* get(std::string& why_not) {
    std::call_once(once_, [] {
      auto* candidate = new CuptiCollector();  // never deleted: see the file comment
      failure_ = candidate->start();
      if (failure_.empty()) instance_ = candidate;
    });
    std::lock_guard<std::mutex> lock(state_mutex_);
    why_not = failure_;
    return failure_.empty() ? instance_ : nullptr;
  }

  // After a failed self-test: no later backend uses CUPTI, and its records stop.
  static void abandon(const std::string& reason) {
    std::string ignored;
    CuptiCollector* collector = get(ignored);
    std::lock_guard<std::mutex> lock(state_mutex_);
    if (!failure_.empty()) return;
    failure_ = reason;
    if (collector) collector->disable();
  }

  uint32_t add_client() {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint32_t client = next_client_++;
    by_client_[client];
    return client;
  }

  void remove_client(uint32_t client) {
    std::lock_guard<std::mutex> lock(mutex_);
    by_client_.erase(client);
  }

  // Flushes CUPTI, matches what arrived, and hands over this client's intervals.
  std::vector<Interval> take(uint32_t client) {
    // Not under our lock: the flush calls buffer_completed on this thread, which locks.
    CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    std::lock_guard<std::mutex> lock(mutex_);
    ++generation_;
    match_locked();
    std::vector<Interval> result;
    auto found = by_client_.find(client);
    if (found != by_client_.end()) result.swap(found->second);
    return result;
  }

  // How records are taken, for the device description.
  const char* mode() const {
    if (graph_level_ && quiet_apis_) return "CUPTI (graphs as one record; no API records for error checks or events)";
    if (graph_level_) return "CUPTI (graphs as one record; every API call recorded)";
    if (quiet_apis_) return "CUPTI (graphs node by node; no API records for error checks or events)";
    return "CUPTI (graphs node by node; every API call recorded)";
  }

  void disable() {
    // Used when the self-test finds records missing: stop paying for them.
    for (CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  }

 private:
  static constexpr CUpti_ActivityKind kKinds[] = {
      CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER,
      CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
      CUPTI_ACTIVITY_KIND_MEMCPY,            CUPTI_ACTIVITY_KIND_MEMSET,
  };

#if DECODELAB_CUPTI_PER_API_SWITCHES
  // Calls that launch no device work but run once or more per op: no records for them.
  static constexpr CUpti_CallbackId kQuietRuntimeApis[] = {
      CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,      CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020,       CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020,       CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
  };
  static constexpr CUpti_CallbackId kQuietDriverApis[] = {
      CUPTI_DRIVER_TRACE_CBID_cuEventRecord,          CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags, CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuEventQuery,           CUPTI_DRIVER_TRACE_CBID_cuStreamQuery,
      CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing,    CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent,
  };
#endif

  struct DeviceRecord {
    uint32_t correlation;
    uint64_t start;
    uint64_t end;
    uint64_t generation;
  };
  struct Correlation {
    uint64_t external;
    uint64_t generation;
  };

  std::string start() {
    const char* choice = std::getenv("DECODELAB_CUDA_TIMER");
    if (choice && std::strcmp(choice, "events") == 0) return "DECODELAB_CUDA_TIMER=events";
    CUptiResult status = cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed);
    if (status != CUPTI_SUCCESS) return "cuptiActivityRegisterCallbacks: " + cupti_status_text(status);
    for (CUpti_ActivityKind kind : kKinds) {
      status = cuptiActivityEnable(kind);
      if (status != CUPTI_SUCCESS) {
        disable();
        return "cuptiActivityEnable(" + std::to_string(static_cast<int>(kind)) + "): " + cupti_status_text(status);
      }
    }
    // Graph-level records: a CUPTI that refuses them traces graphs node by node instead,
    // which the matching handles alike (both carry cudaGraphLaunch's correlation id).
    graph_level_ = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE) == CUPTI_SUCCESS;
#if DECODELAB_CUPTI_PER_API_SWITCHES
    // After the kinds: enabling a kind resets its per-API switches.
    for (CUpti_CallbackId api : kQuietRuntimeApis) cuptiActivityEnableRuntimeApi(api, 0);
    for (CUpti_CallbackId api : kQuietDriverApis) cuptiActivityEnableDriverApi(api, 0);
    quiet_apis_ = true;
#endif
    return "";
  }

  static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;
    *max_records = 0;
  }

  static void CUPTIAPI buffer_completed(CUcontext /*context*/, uint32_t /*stream*/, uint8_t* buffer, size_t /*size*/,
                                        size_t valid_bytes) {
    if (instance_ && buffer && valid_bytes > 0) instance_->parse(buffer, valid_bytes);
    std::free(buffer);
  }

  void parse(uint8_t* buffer, size_t valid_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
      switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
          const auto* link = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
          if (link->externalKind == kExternalKind) correlations_[link->correlationId] = {link->externalId, generation_};
          break;
        }
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
          keep(read_cupti_device_record<CuptiKernelRecord>(record));
          break;
        case CUPTI_ACTIVITY_KIND_MEMCPY:
          keep(read_cupti_device_record<CuptiMemcpyRecord>(record));
          break;
        case CUPTI_ACTIVITY_KIND_MEMSET:
          keep(read_cupti_device_record<CuptiMemsetRecord>(record));
          break;
        case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
          keep(read_cupti_device_record<CuptiGraphRecord>(record));
          break;
        default: break;  // API records: needed only so that CUPTI emits the correlations
      }
    }
  }

  void keep(const CuptiDeviceRecord& record) {
    unmatched_.push_back({record.correlation, record.start, record.end, generation_});
  }

  void match_locked() {
    std::vector<DeviceRecord> still_unmatched;
    for (const DeviceRecord& record : unmatched_) {
      auto link = correlations_.find(record.correlation);
      if (link == correlations_.end()) {
        if (generation_ - record.generation < kForgetAfterTakes) still_unmatched.push_back(record);
        continue;
      }
      if (record.start == 0 && record.end == 0) continue;  // CUPTI could not time it
      const uint32_t client = static_cast<uint32_t>(link->second.external >> kClientShift);
      auto owner = by_client_.find(client);
      if (owner != by_client_.end()) {
        owner->second.push_back({link->second.external & kOpMask, record.start, record.end});
      }
    }
    unmatched_.swap(still_unmatched);
    for (auto it = correlations_.begin(); it != correlations_.end();) {
      it = generation_ - it->second.generation >= kForgetAfterTakes ? correlations_.erase(it) : std::next(it);
    }
  }

  static inline std::once_flag once_;
  static inline std::mutex state_mutex_;
  static inline std::string failure_;
  static inline CuptiCollector* instance_ = nullptr;  // stays set: CUPTI may still deliver buffers
  std::mutex mutex_;
  bool graph_level_ = false;  // graphs traced as one record each
  bool quiet_apis_ = false;   // calls that launch nothing leave no API record
  uint64_t generation_ = 0;
  uint32_t next_client_ = 1;
  std::unordered_map<uint32_t, Correlation> correlations_;
  std::vector<DeviceRecord> unmatched_;
  std::unordered_map<uint32_t, std::vector<Interval>> by_client_;
};

class CuptiTimer final : public OpTimer {
 public:
  CuptiTimer(CuptiCollector& collector, cudaStream_t stream)
      : collector_(collector), stream_(stream), client_(collector.add_client()) {}
  ~CuptiTimer() override { collector_.remove_client(client_); }

  const char* source() const override { return collector_.mode(); }

  void begin(OpId id) override { CUPTI_CHECK(cuptiActivityPushExternalCorrelationId(kExternalKind, key(id))); }

  void end(OpId /*id*/) override {
    uint64_t popped = 0;
    CUPTI_CHECK(cuptiActivityPopExternalCorrelationId(kExternalKind, &popped));
  }

  void cancel(OpId /*id*/) noexcept override {
    uint64_t popped = 0;
    cuptiActivityPopExternalCorrelationId(kExternalKind, &popped);
  }

  void marker(OpId id) override {
    begin(id);
    try {
      launch_marker(stream_);
    } catch (...) {
      cancel(id);
      throw;
    }
    end(id);
  }

  std::vector<OpTiming> take() override {
    const std::vector<Interval> intervals = collector_.take(client_);
    const int64_t offset = clock_offset();
    std::map<OpId, OpTiming> by_op;  // ordered by id, which is enqueue order
    for (const Interval& interval : intervals) {
      const int64_t start = static_cast<int64_t>(interval.start) + offset;
      const int64_t end = static_cast<int64_t>(interval.end) + offset;
      auto [entry, inserted] = by_op.try_emplace(interval.id, OpTiming{interval.id, start, end});
      if (!inserted) {
        entry->second.begin_ns = std::min(entry->second.begin_ns, start);
        entry->second.end_ns = std::max(entry->second.end_ns, end);
      }
    }
    std::vector<OpTiming> timings;
    timings.reserve(by_op.size());
    for (const auto& [id, timing] : by_op) timings.push_back(timing);
    return timings;
  }

 private:
  uint64_t key(OpId id) const { return (static_cast<uint64_t>(client_) << kClientShift) | (id & kOpMask); }

  // now_ns() - CUPTI's clock, from the tightest of a few bracketed readings.
  static int64_t clock_offset() {
    int64_t best_width = -1;
    int64_t best_offset = 0;
    for (int attempt = 0; attempt < 5; ++attempt) {
      uint64_t cupti_now = 0;
      const int64_t before = now_ns();
      CUPTI_CHECK(cuptiGetTimestamp(&cupti_now));
      const int64_t after = now_ns();
      if (best_width < 0 || after - before < best_width) {
        best_width = after - before;
        best_offset = before + (after - before) / 2 - static_cast<int64_t>(cupti_now);
      }
    }
    return best_offset;
  }

  CuptiCollector& collector_;
  cudaStream_t stream_;
  uint32_t client_;
};

}  // namespace

void abandon_cupti(const std::string& reason) { CuptiCollector::abandon(reason); }

std::unique_ptr<OpTimer> make_cupti_timer(cudaStream_t stream, std::string& why_not) {
  CuptiCollector* collector = CuptiCollector::get(why_not);
  if (!collector) return nullptr;
  return std::make_unique<CuptiTimer>(*collector, stream);
}

}  // namespace decodelab::cuda
