// The last-level cache a CPU measurement prices: what the OS reports, checked by reads
// (a VM's CPUID can report the host's whole socket), and the bandwidth of a weight read
// again while it stays resident. See profiling/cache_level.h.
#include "profiling/cache_level.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <string>

#include "profiling/matvec_product.h"
#include "profiling/op_timer.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

// A read runs at cache speed when it is at least this much faster than the same product over
// a weight streamed from DRAM, timed just before it: a VM's memory bandwidth moves by 2x from
// period to period, so a DRAM reading taken earlier is no yardstick. A weight that fits only
// in part reads between the two. Not 1.5x: on a 2-vCPU Zen 5 VM a 133 MB weight, far beyond
// its 32 MB L3, read 1.52-1.60x as fast as the 512 MB DRAM product in 7 of 10 measurements
// with its vCPUs on different dies (60-69 against 41-44 GB/s), and a 66.6 MB one 1.70-1.92x,
// while the 33.3 MB weight the L3 holds read 2.67x (114 against 42.7 GB/s).
constexpr double kCacheSpeedup = 2.0;
// The smallest weight tried when the OS's capacity does not hold.
constexpr double kSmallestCacheWeightBytes = 256.0 * 1024;

}  // namespace

void find_cache_level(double reported_bytes, double largest_weight_bytes,
                      const std::function<RoofMeasurement::CacheRead(double weight_bytes)>& read,
                      RoofMeasurement& measurement) {
  measurement.cache_reported_bytes = reported_bytes;
  if (reported_bytes <= 0) return;
  for (double weight = std::min(reported_bytes / 4, largest_weight_bytes); weight >= kSmallestCacheWeightBytes; weight /= 2) {
    const bool first = measurement.cache_reads.empty();
    measurement.cache_reads.push_back(read(weight));
    const RoofMeasurement::CacheRead& tried = measurement.cache_reads.back();
    if (tried.bandwidth >= kCacheSpeedup * tried.dram_bandwidth) {
      measurement.cache_bytes = first ? reported_bytes : tried.weight_bytes;
      measurement.cache_read = tried.timing;
      measurement.cache_read_bytes = tried.bytes;
      measurement.cache_bandwidth = tried.bandwidth;
      return;
    }
  }
}

// The cache level (RoofMeasurement's cache_* fields): a quarter of the capacity the OS
// reports, checked by find_cache_level, each read against the same product over a weight no
// cache holds (twice the reported capacity, which a VM's CPUID overstates and never
// understates; 64 MiB at least, 512 MiB at most), timed just before it.
void measure_cache_level(Backend& backend, const RoofMeasureOptions& options, RoofMeasurement& measurement,
                         std::ostream* progress) {
  const double reported = host_cache_bytes();
  if (reported <= 0) return;
  // One warm-up, as when kCacheSpeedup was set (roof method 11); warmed for 60 ms like the
  // other figures since method 14, the DRAM yardstick of a Zen 5 VM with its vCPUs on
  // different dies read 50-60 GB/s against the L3's 110-130, under 2x, and the search found
  // no level in four of five measurements (docs/prediction.md, "Roof method 14").
  RoofMeasureOptions one_warmup = options;
  one_warmup.min_warmup_seconds = 0;
  OpTimer timer(backend, one_warmup);
  const double available = static_cast<double>(backend.available_memory());
  const MatvecProduct from_dram(backend, std::min({std::max(2 * reported, 64.0 * 1024 * 1024), 512.0 * 1024 * 1024, available / 4}), 6);
  auto read = [&](double weight_bytes) {
    const MatvecProduct resident(backend, weight_bytes, 6);
    if (progress) *progress << "measuring the cache: matrix-vector product over " << format_bytes(static_cast<double>(resident.weight.bytes())) << "\n";
    RoofMeasurement::CacheRead result;
    result.dram_bandwidth = from_dram.bytes() / timer.sample([&](OpId id) { from_dram.enqueue(backend, id); }).best;
    result.weight_bytes = static_cast<double>(resident.weight.bytes());
    result.bytes = resident.bytes();
    result.timing = timer.sample([&](OpId id) { resident.enqueue(backend, id); });
    result.bandwidth = result.bytes / result.timing.best;
    return result;
  };
  find_cache_level(reported, std::min(available, static_cast<double>(from_dram.weight.bytes())) / 4, read, measurement);
}

std::string RoofMeasurement::cache_capacity_note() const {
  if (cache_reads.empty()) return "";
  auto read_text = [](const CacheRead& read) {
    return format_bytes(read.weight_bytes) + " at " + format_bandwidth(read.bandwidth) + " (from DRAM " +
           format_bandwidth(read.dram_bandwidth) + ")";
  };
  const std::string speed = format_number(kCacheSpeedup) + "x as fast as the same product from DRAM, timed just before";
  if (cache_bytes > 0 && cache_reads.size() == 1) {
    return "capacity " + format_bytes(cache_bytes) + " as the OS reports it: a quarter of it read " + read_text(cache_reads[0]) +
           ", at least " + speed;
  }
  std::string note = "the OS reports " + format_bytes(cache_reported_bytes) + ", but its products read ";
  for (size_t i = 0; i + (cache_bytes > 0 ? 1 : 0) < cache_reads.size(); ++i) note += (i ? ", " : "") + read_text(cache_reads[i]);
  note += ", not " + speed;
  if (cache_bytes <= 0) return note + ": no cache level found";
  return note + "; capacity " + format_bytes(cache_bytes) + ": the largest weight read at cache speed, " +
         read_text(cache_reads.back());
}

// The highest data-cache level cpu0 sees in sysfs (what lscpu reads: a VM's own view), else
// sysconf (CPUID, which can describe the host instead).
double host_cache_bytes() {
  int best_level = 0;
  double best_bytes = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string directory = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(directory + "level"), size_file(directory + "size"), type_file(directory + "type");
    int level = 0;
    std::string size, type;
    if (!(level_file >> level) || !(size_file >> size) || !(type_file >> type) || type == "Instruction") continue;
    double bytes = std::atof(size.c_str());
    if (!size.empty() && (size.back() == 'K' || size.back() == 'k')) bytes *= 1024.0;
    if (!size.empty() && size.back() == 'M') bytes *= 1024.0 * 1024.0;
    if (level > best_level && bytes > 0) {
      best_level = level;
      best_bytes = bytes;
    }
  }
  if (best_bytes > 0) return best_bytes;
  for (int level : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long bytes = ::sysconf(level);
    if (bytes > 0) return static_cast<double>(bytes);
  }
  return 0;
}

}  // namespace decodelab
