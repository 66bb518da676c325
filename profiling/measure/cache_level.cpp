// The last-level cache a CPU measurement prices: what the OS reports, checked by reads
// (a VM's CPUID can report the host's whole socket), and the bandwidth of a weight read
// again while it stays resident. See profiling/measure/cache_level.h.
#include "profiling/measure/cache_level.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <string>

#include "profiling/measure/matvec_product.h"
#include "profiling/measure/op_timer.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

// The smallest weight tried when the OS's capacity does not hold.
constexpr double kSmallestCacheWeightBytes = 256.0 * 1024;

}  // namespace

void find_cache_level(double reported_bytes, double largest_weight_bytes, double dram_bandwidth,
                      const std::function<RoofMeasurement::CacheRead(double weight_bytes)>& read,
                      RoofMeasurement& measurement, double beyond_until_bytes) {
  measurement.cache_reported_bytes = reported_bytes;
  measurement.cache_dram_bandwidth = dram_bandwidth;
  if (reported_bytes <= 0) return;
  std::vector<RoofMeasurement::CacheRead>& reads = measurement.cache_reads;
  // Reads the weights down to index `last` (those at least the smallest); false when `last`
  // is below it.
  double next_weight = std::min(reported_bytes / 4, largest_weight_bytes);
  auto read_through = [&](size_t last) {
    while (reads.size() <= last) {
      if (next_weight < kSmallestCacheWeightBytes) return false;
      reads.push_back(read(next_weight));
      next_weight /= 2;
    }
    return true;
  };
  for (size_t tried = 0; read_through(tried + 1); ++tried) {
    read_through(tried + kCachePlateauReads);  // those not below the smallest
    const RoofMeasurement::CacheRead& weight = reads[tried];
    const RoofMeasurement::CacheRead* fastest = &reads[tried + 1];
    for (size_t below = tried + 2; below < reads.size() && below <= tried + kCachePlateauReads; ++below)
      if (reads[below].bandwidth > fastest->bandwidth) fastest = &reads[below];
    if (weight.bandwidth < kCachePlateau * fastest->bandwidth || weight.bandwidth < kCacheAboveDram * dram_bandwidth) continue;
    if (weight.bandwidth > fastest->bandwidth) fastest = &weight;
    measurement.cache_bytes = weight.weight_bytes;
    measurement.cache_read = fastest->timing;
    measurement.cache_read_bytes = fastest->bytes;
    measurement.cache_bandwidth = fastest->bandwidth;
    // Beyond the capacity, doubling up to `beyond_until_bytes`: the weights the search did not
    // read on its way down (all of them when the first weight tried was on the plateau).
    const double largest_read = reads.front().weight_bytes;
    for (double beyond = largest_read * 2; beyond < beyond_until_bytes; beyond *= 2) reads.insert(reads.begin(), read(beyond));
    return;
  }
}

// The cache level (RoofMeasurement's cache_* fields): the DRAM yardstick (the same product
// over 512 MiB, a quarter of the available memory at most: over only twice the reported
// capacity a share can still be served by the cache, and the yardstick would read well above
// DRAM),
// then the search of find_cache_level, every read timed after the same warm-ups as the other
// figures, one after the other, so that a memory path ramped up by the yardstick stays so;
// beyond the capacity, up to the bandwidth roof's own read (measured before: the hit curve
// ends there, RoofMeasurement::cache_hits_beyond).
void measure_cache_level(Backend& backend, const RoofMeasureOptions& options, RoofMeasurement& measurement,
                         std::ostream* progress) {
  const double reported = host_cache_bytes();
  if (reported <= 0) return;
  OpTimer timer(backend, options);
  const double available = static_cast<double>(backend.available_memory());
  const MatvecProduct from_dram(backend, std::min(512.0 * 1024 * 1024, available / 4), 6);
  const double dram_weight_bytes = static_cast<double>(from_dram.weight.bytes());
  if (progress) *progress << "measuring the cache: matrix-vector product over " << format_bytes(dram_weight_bytes) << " (from DRAM)\n";
  measurement.cache_dram_read = timer.sample([&](OpId id) { from_dram.enqueue(backend, id); });
  const double dram_bandwidth = from_dram.bytes() / measurement.cache_dram_read.best;
  auto read = [&](double weight_bytes) {
    const MatvecProduct resident(backend, weight_bytes, 6);
    if (progress) *progress << "measuring the cache: matrix-vector product over " << format_bytes(static_cast<double>(resident.weight.bytes())) << "\n";
    RoofMeasurement::CacheRead result;
    result.weight_bytes = static_cast<double>(resident.weight.bytes());
    result.bytes = resident.bytes();
    result.timing = timer.sample([&](OpId id) { resident.enqueue(backend, id); });
    result.bandwidth = result.bytes / result.timing.best;
    return result;
  };
  find_cache_level(reported, std::min(available, dram_weight_bytes) / 4, dram_bandwidth, read, measurement,
                   measurement.read_bytes);
}

std::string RoofMeasurement::cache_capacity_note() const {
  if (cache_reads.empty()) return "";
  std::string reads = "products over ";
  for (size_t i = 0; i < cache_reads.size(); ++i)
    reads += (i ? ", " : "") + format_bytes(cache_reads[i].weight_bytes) + " read " + format_bandwidth(cache_reads[i].bandwidth);
  reads += " (from DRAM " + format_bandwidth(cache_dram_bandwidth) + ")";
  const std::string rule = "at least " + format_number(kCachePlateau) + "x as fast as the faster of the two below it and " +
                           format_number(kCacheAboveDram) + "x DRAM";
  if (cache_bytes <= 0)
    return "the OS reports " + format_bytes(cache_reported_bytes) + "; " + reads + ": none reads " + rule + ": no cache level found";
  return "the OS reports " + format_bytes(cache_reported_bytes) + "; " + reads + ": capacity " + format_bytes(cache_bytes) +
         ", the largest weight that reads " + rule + " (the reads beyond it give the share still resident there)";
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
