// The decode attention ceiling (see attention_roof.h): the CPU backend's attention kernel
// over freshly filled KV caches, timed like the decode matmuls beside it.
#include "profiling/measure/attention_roof.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <vector>

#include "engine/device_buffer.h"
#include "profiling/model/cost_model.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

constexpr int64_t kHeadDim = 64;  // every shipped model's head size

// `bytes` of random values of a dtype: a chunk drawn at random, copied along the rest (a
// copy streams at memory speed, where drawing 134 MB of random numbers costs a good part of
// a second). The values only need to be ordinary numbers: no zeros, denormals or NaNs.
void fill_replicated(Backend& backend, void* memory, DType dtype, double bytes) {
  const size_t element = dtype_size(dtype);
  const size_t total = static_cast<size_t>(bytes) / element;
  const size_t chunk = std::min(total, (size_t{8} << 20) / element);
  fill_random(backend, memory, dtype, chunk, 11);
  for (size_t at = chunk; at < total; at += chunk) {
    const int64_t count = static_cast<int64_t>(std::min(chunk, total - at));
    backend.copy(Tensor::contiguous(memory, dtype, {count}),
                 Tensor::contiguous(static_cast<char*>(memory) + at * element, dtype, {count}), 0);
  }
  backend.synchronize();
  backend.take_timings();  // the copies are not measured
}

}  // namespace

void measure_decode_attention(Backend& backend, OpTimer& timer, void* memory, size_t memory_bytes,
                              const RoofMeasureOptions& options, RoofMeasurement& measurement, std::ostream* progress) {
  if (options.decode_attention_contexts.empty() || options.decode_attention_sequences < 1) return;
  const int64_t sequences = options.decode_attention_sequences;
  const int heads = static_cast<int>(std::max<int64_t>(1, options.decode_step_width / kHeadDim));
  const int64_t width = heads * kHeadDim;
  const double streamed_bytes = decode_streamed_bytes(memory_bytes);
  const int largest_context = *std::max_element(options.decode_attention_contexts.begin(), options.decode_attention_contexts.end());
  backend.reserve_attention({sequences, heads, heads, static_cast<int>(kHeadDim), largest_context});

  // One query row per sequence at the last cached position: each attends to every key.
  std::vector<int32_t> last_positions;
  DeviceBuffer positions(backend, static_cast<size_t>(sequences) * sizeof(int32_t));
  const Tensor positions_view = Tensor::contiguous(positions.get(), DType::I32, {sequences});
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));

  for (DType dtype : options.matmul_dtypes) {
    const double element = static_cast<double>(dtype_size(dtype));
    DeviceBuffer queries(backend, static_cast<size_t>(sequences * width) * dtype_size(dtype));
    DeviceBuffer outputs(backend, queries.bytes());
    fill_random(backend, queries.get(), dtype, static_cast<size_t>(sequences * width), 10);
    const Tensor q = Tensor::contiguous(queries.get(), dtype, {sequences, width});
    const Tensor out = Tensor::contiguous(outputs.get(), dtype, {sequences, width});
    // Layers per context: as many as stream the bytes and fit; the bytes the largest set
    // uses are filled once (every context reads them from the start).
    std::vector<std::pair<int, int>> contexts;  // (context, layers)
    double used_bytes = 0;
    for (int context : options.decode_attention_contexts) {
      const double layer_bytes = 2.0 * static_cast<double>(sequences * heads * int64_t{context} * kHeadDim) * element;
      if (context < 1) continue;
      const int fitting = static_cast<int>(static_cast<double>(memory_bytes) / layer_bytes);
      const int layers = std::min(fitting, static_cast<int>(std::ceil(streamed_bytes / layer_bytes)));
      if (layers < 1) continue;
      contexts.emplace_back(context, layers);
      used_bytes = std::max(used_bytes, layers * layer_bytes);
    }
    if (contexts.empty()) continue;
    fill_replicated(backend, memory, dtype, used_bytes);
    for (const auto& [context, layers] : contexts) {
      const int64_t cache_elements = sequences * heads * int64_t{context} * kHeadDim;  // one of K, V
      const double layer_bytes = 2.0 * static_cast<double>(cache_elements) * element;
      last_positions.assign(static_cast<size_t>(sequences), context - 1);
      backend.upload(positions.get(), last_positions.data(), positions.bytes());
      std::vector<Tensor> caches;  // K, V of each layer in turn
      char* next = static_cast<char*>(memory);
      for (int i = 0; i < 2 * layers; ++i) {
        caches.push_back(Tensor::contiguous(next, dtype, {sequences, heads, context, kHeadDim}));
        next += static_cast<size_t>(cache_elements) * dtype_size(dtype);
      }
      RoofMeasurement::DecodeAttention attention;
      attention.dtype = dtype;
      attention.context = context;
      attention.sequences = static_cast<int>(sequences);
      attention.layers = layers;
      const AttentionExtent extent{sequences * context, sequences * context, heads, heads, static_cast<int>(kHeadDim)};
      attention.bytes = static_cast<double>(layers) * (attention_kv_bytes(extent, dtype) + 2.0 * static_cast<double>(q.bytes()));
      if (progress) {
        *progress << "measuring the decode attention: " << dtype_name(dtype) << ", " << sequences << " sequences × "
                  << context << " positions (" << layers << " layers of KV cache, "
                  << format_bytes(static_cast<double>(layers) * layer_bytes) << ")\n";
      }
      attention.timing = timer.sample_sequence([&](const std::function<OpId()>& next_id) {
        for (int layer = 0; layer < layers; ++layer)
          backend.attention(q, caches[2 * layer], caches[2 * layer + 1], positions_view, 1, scale, out, next_id());
      });
      attention.bandwidth = attention.bytes / attention.timing.median;  // a kernel rate: the median (roof_measure.cpp)
      measurement.decode_attentions.push_back(attention);
    }
  }
}

}  // namespace decodelab
