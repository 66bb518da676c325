// libFuzzer target: the safetensors header parser and validator (engine/checkpoint/safetensors.h),
// on a whole file image in memory. Every tensor the validator accepts is also converted
// to fp32, so a header that passes with offsets or shapes it should not have shows up as
// an out-of-bounds read under ASan.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/base/errors.h"
#include "engine/checkpoint/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const decodelab::SafetensorsContents contents = decodelab::parse_safetensors(data, size, "fuzz.safetensors");
    std::vector<float> converted;
    for (const auto& [name, tensor] : contents.tensors) {
      converted.resize(static_cast<size_t>(tensor.numel()) + 1);
      tensor.convert_to(decodelab::DType::F32, converted.data());
    }
  } catch (const decodelab::InputError&) {
  }
  return 0;
}
