// The efficiency table's measurement (see efficiency_measure.h).
#include "profiling/measure/efficiency_measure.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>
#include <tuple>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "engine/device_buffer.h"
#include "engine/base/errors.h"
#include "engine/parallel_regions.h"
#include "profiling/model/cost_model.h"
#include "profiling/units.h"

namespace decodelab {

std::vector<LayerShape> shipped_layer_shapes() {
  std::vector<std::filesystem::path> directories;
  if (const char* home = std::getenv("DECODELAB_HOME")) directories.push_back(std::filesystem::path(home) / "configs" / "models");
  directories.emplace_back(std::filesystem::path(DECODELAB_SOURCE_DIR) / "configs" / "models");
  std::error_code error;
  const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) directories.push_back(executable.parent_path().parent_path() / "share" / "decodelab" / "configs" / "models");
  for (const std::filesystem::path& directory : directories) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(directory, error))
      if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    if (files.empty()) continue;
    std::sort(files.begin(), files.end());
    std::vector<LayerShape> layers;
    for (const std::filesystem::path& file : files) {
      YAML::Node root;
      try {
        root = YAML::LoadFile(file.string());
      } catch (const YAML::Exception& problem) {
        throw InputError(file.string(), problem.mark.line + 1, "", std::string("not a model YAML: ") + problem.what());
      }
      auto whole = [&](const char* key) -> int64_t {
        const YAML::Node node = root[key];
        int64_t value = 0;
        try {
          if (node.IsDefined()) value = node.as<int64_t>();
        } catch (const YAML::Exception&) {
        }
        if (value <= 0) throw InputError(file.string(), node.IsDefined() ? node.Mark().line + 1 : 0, key, "expected a positive whole number");
        return value;
      };
      LayerShape layer;
      layer.model = file.stem().string();
      layer.hidden = whole("hidden_size");
      layer.intermediate = whole("intermediate_size");
      layer.heads = static_cast<int>(whole("num_attention_heads"));
      layer.kv_heads = root["num_key_value_heads"].IsDefined() ? static_cast<int>(whole("num_key_value_heads")) : layer.heads;
      layer.head_dim = root["head_dim"].IsDefined() ? static_cast<int>(whole("head_dim"))
                                                    : static_cast<int>(layer.hidden / layer.heads);
      layers.push_back(layer);
    }
    std::stable_sort(layers.begin(), layers.end(),
                     [](const LayerShape& a, const LayerShape& b) { return a.hidden < b.hidden; });
    return layers;
  }
  return {};
}

namespace {

// A weight as the engine runs it: [N, K] (y = x · Wᵀ).
struct Projection {
  const char* name;
  int64_t n = 0;
  int64_t k = 0;
};

// One decoder layer's projections: q, k, v fused; o; gate and up fused; down.
std::vector<Projection> layer_projections(const LayerShape& layer) {
  const int64_t q_width = int64_t{layer.heads} * layer.head_dim;
  const int64_t kv_width = int64_t{layer.kv_heads} * layer.head_dim;
  return {{"q/k/v", q_width + 2 * kv_width, layer.hidden},
          {"o", layer.hidden, q_width},
          {"gate/up", 2 * layer.intermediate, layer.hidden},
          {"down", layer.hidden, layer.intermediate}};
}

// `bytes` of random values of a dtype: a chunk drawn at random, copied along the rest (drawing
// hundreds of MB of random numbers costs seconds; a copy streams at memory speed). The values
// only need to be ordinary numbers: no zeros, denormals or NaNs.
void fill_by_copies(Backend& backend, void* memory, DType dtype, size_t bytes) {
  const size_t element = dtype_size(dtype);
  const size_t total = bytes / element;
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

// What one timed op declares and opens, from the descriptor the engine would record.
struct DeclaredOp {
  double flops = 0;
  double bytes = 0;
  int regions = 0;
};
DeclaredOp declared(const OpDesc& desc) {
  const OpCost cost = op_cost(desc);
  return {cost.flops, cost.bytes(), cpu::parallel_regions(desc)};
}

constexpr size_t kLargestWeightBytes = size_t{16} << 20;  // fp32: a weight cut to this many bytes of rows

void measure_matmul_buckets(Backend& backend, size_t memory_bytes, const RoofMeasureOptions& options,
                            const std::vector<LayerShape>& layers, RoofMeasurement& measurement, std::ostream* progress) {
  // Each depth bucket, timed on the smallest model's projections that fall in it.
  std::map<int, std::pair<const LayerShape*, std::vector<Projection>>> buckets;
  for (const LayerShape& layer : layers) {
    for (const Projection& projection : layer_projections(layer)) {
      const int bucket = size_class(static_cast<double>(projection.k));
      auto [slot, inserted] = buckets.try_emplace(bucket, &layer, std::vector<Projection>{});
      if (slot->second.first == &layer) slot->second.second.push_back(projection);
    }
  }
  const double streamed_bytes = decode_streamed_bytes(memory_bytes);
  RoofMeasureOptions timing_options = options;
  timing_options.repeats = options.efficiency_repeats;
  OpTimer timer(backend, timing_options);
  for (auto& [bucket, chosen] : buckets) {
    const LayerShape& layer = *chosen.first;
    std::vector<Projection> weights = chosen.second;
    int64_t widest_n = 0, deepest_k = 0, layer_elements = 0;
    for (Projection& weight : weights) {
      const int64_t cut = std::max<int64_t>(64, static_cast<int64_t>(kLargestWeightBytes / (4 * weight.k)) / 64 * 64);
      weight.n = std::min(weight.n, cut);
      widest_n = std::max(widest_n, weight.n);
      deepest_k = std::max(deepest_k, weight.k);
      layer_elements += weight.n * weight.k;
    }
    struct Step {  // one dtype's layers of these weights
      DType dtype;
      DeviceBuffer memory;
      std::vector<Tensor> weights;
    };
    std::vector<Step> steps;
    steps.reserve(options.matmul_dtypes.size());
    for (DType dtype : options.matmul_dtypes) {
      const double layer_bytes = static_cast<double>(layer_elements) * static_cast<double>(dtype_size(dtype));
      const int fitting = static_cast<int>(static_cast<double>(memory_bytes) / layer_bytes);
      const int most = std::max(1, options.efficiency_max_ops / static_cast<int>(weights.size()));
      const int repeats = std::min({fitting, static_cast<int>(std::ceil(streamed_bytes / layer_bytes)), most});
      if (repeats < 1) continue;
      const size_t bytes = static_cast<size_t>(repeats * layer_elements) * dtype_size(dtype);
      Step& step = steps.emplace_back(Step{dtype, DeviceBuffer(backend, bytes), {}});
      char* next = static_cast<char*>(step.memory.get());
      for (int r = 0; r < repeats; ++r) {
        for (const Projection& weight : weights) {
          step.weights.push_back(Tensor::contiguous(next, dtype, {weight.n, weight.k}));
          next += static_cast<size_t>(weight.n * weight.k) * dtype_size(dtype);
        }
      }
      fill_by_copies(backend, step.memory.get(), dtype, bytes);
    }
    struct Shape {
      const Step* step;
      int rows;
      size_t ops;  // the first `ops` weights: within the FLOP budget, at least one
      DeviceBuffer activations, outputs;
    };
    std::vector<Shape> shapes;
    shapes.reserve(steps.size() * options.efficiency_rows.size());
    for (int rows : options.efficiency_rows) {
      for (const Step& step : steps) {
        size_t ops = 0;
        double flops = 0;
        for (const Tensor& weight : step.weights) {
          const double more = 2.0 * rows * static_cast<double>(weight.shape[0] * weight.shape[1]);
          if (ops > 0 && (flops + more > options.efficiency_flop_budget || ops >= static_cast<size_t>(options.efficiency_max_ops)))
            break;
          flops += more;
          ++ops;
        }
        Shape& shape = shapes.emplace_back(
            Shape{&step, rows, ops, DeviceBuffer(backend, static_cast<size_t>(rows * deepest_k) * dtype_size(step.dtype)),
                  DeviceBuffer(backend, static_cast<size_t>(rows * widest_n) * dtype_size(step.dtype))});
        fill_random(backend, shape.activations.get(), step.dtype, static_cast<size_t>(rows * deepest_k), 9);
      }
    }
    std::string names;
    for (const Projection& weight : weights) names += (names.empty() ? "" : ", ") + std::string(weight.name);
    if (progress) {
      *progress << "timing the efficiency table: matmuls of K ~ 2^" << bucket << " (" << layer.model << "'s " << names
                << "), each dtype against " << options.efficiency_rows.size() << " row counts, interleaved\n";
    }
    std::vector<OpTimer::Sequence> sequences;
    for (const Shape& shape : shapes) {
      sequences.emplace_back([&backend, &shape](const std::function<OpId()>& next_id) {
        for (size_t i = 0; i < shape.ops; ++i) {
          const Tensor& weight = shape.step->weights[i];
          const Tensor x = Tensor::contiguous(shape.activations.get(), weight.dtype, {shape.rows, weight.shape[1]});
          const Tensor out = Tensor::contiguous(shape.outputs.get(), weight.dtype, {shape.rows, weight.shape[0]});
          backend.matmul(x, weight, out, next_id());
        }
      });
    }
    const std::vector<TimedSamples> timings = timer.sample_interleaved(sequences);
    for (size_t i = 0; i < shapes.size(); ++i) {
      const Shape& shape = shapes[i];
      RoofMeasurement::KernelTiming kernel;
      kernel.category = OpCategory::Matmul;
      kernel.dtype = shape.step->dtype;
      kernel.bucket = {rows_class(shape.rows), bucket};
      kernel.ops = static_cast<int>(shape.ops);
      kernel.what = layer.model + "'s " + names + " × " + std::to_string(shape.rows) + " row" + (shape.rows == 1 ? "" : "s") +
                    ", " + std::to_string(shape.ops) + " ops";
      for (size_t op = 0; op < shape.ops; ++op) {
        const Tensor& weight = shape.step->weights[op];
        OpDesc desc;
        desc.name = "matmul";
        desc.category = OpCategory::Matmul;
        desc.inputs = {TensorInfo::of(Tensor::contiguous(shape.activations.get(), weight.dtype, {shape.rows, weight.shape[1]})),
                       TensorInfo::of(weight)};
        desc.outputs = {TensorInfo::of(Tensor::contiguous(shape.outputs.get(), weight.dtype, {shape.rows, weight.shape[0]}))};
        const DeclaredOp op_declared = declared(desc);
        kernel.flops += op_declared.flops;
        kernel.bytes += op_declared.bytes;
        kernel.regions += op_declared.regions;
      }
      kernel.timing = timings[i];
      measurement.kernels.push_back(kernel);
    }
  }
}

void measure_attention_buckets(Backend& backend, size_t memory_bytes, const RoofMeasureOptions& options,
                               const std::vector<LayerShape>& layers, RoofMeasurement& measurement, std::ostream* progress) {
  if (options.efficiency_contexts.empty() || options.efficiency_sequences < 1) return;
  const int64_t sequences = options.efficiency_sequences;
  const double streamed_bytes = decode_streamed_bytes(memory_bytes);
  const int largest_context = *std::max_element(options.efficiency_contexts.begin(), options.efficiency_contexts.end());
  RoofMeasureOptions timing_options = options;
  timing_options.repeats = options.efficiency_repeats;
  OpTimer timer(backend, timing_options);
  std::set<std::tuple<int, int, int>> done;
  for (const LayerShape& layer : layers) {
    if (!done.insert({layer.heads, layer.kv_heads, layer.head_dim}).second) continue;
    const int64_t q_width = int64_t{layer.heads} * layer.head_dim;
    backend.reserve_attention({sequences, layer.heads, layer.kv_heads, layer.head_dim, largest_context});
    const float scale = 1.0f / std::sqrt(static_cast<float>(layer.head_dim));
    struct Cache {  // one dtype's layers of K and V caches, the largest context's bytes
      DType dtype;
      DeviceBuffer memory, queries, outputs;
    };
    std::vector<Cache> caches;
    std::vector<std::pair<int, int>> contexts;  // (context, layers)
    for (int context : options.efficiency_contexts) {
      if (context < 1) continue;
      const double layer_bytes = 2.0 * static_cast<double>(sequences * layer.kv_heads * int64_t{context} * layer.head_dim) * 4;
      const int fitting = static_cast<int>(static_cast<double>(memory_bytes) / layer_bytes);
      const int count = std::min({fitting, static_cast<int>(std::ceil(streamed_bytes / layer_bytes)), options.efficiency_max_ops});
      if (count >= 1) contexts.emplace_back(context, count);
    }
    if (contexts.empty()) continue;
    for (DType dtype : options.matmul_dtypes) {
      double bytes = 0;
      for (const auto& [context, count] : contexts)
        bytes = std::max(bytes, 2.0 * count * static_cast<double>(sequences * layer.kv_heads * int64_t{context} * layer.head_dim) *
                                    static_cast<double>(dtype_size(dtype)));
      Cache& cache = caches.emplace_back(Cache{dtype, DeviceBuffer(backend, static_cast<size_t>(bytes)),
                                               DeviceBuffer(backend, static_cast<size_t>(sequences * q_width) * dtype_size(dtype)),
                                               DeviceBuffer(backend, static_cast<size_t>(sequences * q_width) * dtype_size(dtype))});
      fill_by_copies(backend, cache.memory.get(), dtype, static_cast<size_t>(bytes));
      fill_random(backend, cache.queries.get(), dtype, static_cast<size_t>(sequences * q_width), 10);
    }
    if (progress) {
      *progress << "timing the efficiency table: decode attention of " << layer.model << "'s heads (" << layer.heads << " of "
                << layer.head_dim << ", " << layer.kv_heads << " KV), " << sequences << " sequences at "
                << contexts.size() << " contexts, each dtype\n";
    }
    // Each sequence's one query row sits at the last cached position: one positions buffer
    // per context, uploaded before any timing.
    std::map<int, DeviceBuffer> positions;
    for (const auto& [context, count] : contexts) {
      DeviceBuffer& buffer = positions.try_emplace(context, backend, static_cast<size_t>(sequences) * sizeof(int32_t)).first->second;
      const std::vector<int32_t> last(static_cast<size_t>(sequences), context - 1);
      backend.upload(buffer.get(), last.data(), buffer.bytes());
    }
    backend.synchronize();
    backend.take_timings();
    struct Shape {
      const Cache* cache;
      int context, layers;
    };
    std::vector<Shape> shapes;
    for (const auto& [context, count] : contexts)
      for (const Cache& cache : caches) shapes.push_back({&cache, context, count});
    std::vector<OpTimer::Sequence> timed;
    for (const Shape& shape : shapes) {
      timed.emplace_back([&, shape](const std::function<OpId()>& next_id) {
        const Tensor positions_view = Tensor::contiguous(positions.at(shape.context).get(), DType::I32, {sequences});
        const DType dtype = shape.cache->dtype;
        const int64_t cache_elements = sequences * layer.kv_heads * int64_t{shape.context} * layer.head_dim;
        const Tensor q = Tensor::contiguous(shape.cache->queries.get(), dtype, {sequences, q_width});
        const Tensor out = Tensor::contiguous(shape.cache->outputs.get(), dtype, {sequences, q_width});
        char* next = static_cast<char*>(shape.cache->memory.get());
        for (int l = 0; l < shape.layers; ++l) {
          const Tensor k = Tensor::contiguous(next, dtype, {sequences, layer.kv_heads, shape.context, layer.head_dim});
          next += static_cast<size_t>(cache_elements) * dtype_size(dtype);
          const Tensor v = Tensor::contiguous(next, dtype, {sequences, layer.kv_heads, shape.context, layer.head_dim});
          next += static_cast<size_t>(cache_elements) * dtype_size(dtype);
          backend.attention(q, k, v, positions_view, 1, scale, out, next_id());
        }
      });
    }
    const std::vector<TimedSamples> timings = timer.sample_interleaved(timed);
    for (size_t i = 0; i < shapes.size(); ++i) {
      const Shape& shape = shapes[i];
      const DType dtype = shape.cache->dtype;
      OpDesc desc;
      desc.name = "attention";
      desc.category = OpCategory::Attention;
      const TensorInfo q{dtype, 2, {sequences, q_width, 0, 0}, {q_width, 1, 0, 0}};
      const TensorInfo kv{dtype, 4, {sequences, layer.kv_heads, shape.context, layer.head_dim}, {}};
      desc.inputs = {q, kv, kv};
      desc.outputs = {q};
      desc.attention = {sequences * shape.context, sequences * shape.context, layer.heads, layer.kv_heads, layer.head_dim};
      const DeclaredOp one = declared(desc);
      RoofMeasurement::KernelTiming kernel;
      kernel.category = OpCategory::Attention;
      kernel.dtype = dtype;
      kernel.bucket = shape_bucket(desc);
      kernel.ops = shape.layers;
      kernel.what = layer.model + "'s decode attention, " + std::to_string(sequences) + " sequences × " +
                    std::to_string(shape.context) + " positions, " + std::to_string(shape.layers) + " ops";
      kernel.flops = one.flops * shape.layers;
      kernel.bytes = one.bytes * shape.layers;
      kernel.regions = static_cast<double>(one.regions) * shape.layers;
      kernel.timing = timings[i];
      measurement.kernels.push_back(kernel);
    }
  }
}

}  // namespace

void measure_efficiency(Backend& backend, size_t memory_bytes, const RoofMeasureOptions& options,
                        RoofMeasurement& measurement, std::ostream* progress) {
  if (options.efficiency_rows.empty()) return;
  const std::vector<LayerShape> layers = options.layer_shapes.empty() ? shipped_layer_shapes() : options.layer_shapes;
  if (layers.empty()) {
    if (progress) *progress << "no model shapes found (configs/models): no efficiency table\n";
    return;
  }
  measure_matmul_buckets(backend, memory_bytes, options, layers, measurement, progress);
  measure_attention_buckets(backend, memory_bytes, options, layers, measurement, progress);
}

}  // namespace decodelab
