// Fuzzes the PNG/JPEG reader of `memhal convert` (tools/image_io.cpp): any bytes give an image
// or an error, never a crash, a hang or an exit.
#include <cstddef>
#include <cstdint>

#include "image_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto image = memhal::cli::decode_image({data, size});
  if (!image) return 0;
  // A decoded image must be readable end to end.
  auto map = image->map(memhal::CpuAccess::Read);
  if (!map) __builtin_trap();
  const auto& layout = image->layout();
  volatile uint8_t sink = 0;
  for (int64_t y = 0; y < layout.shape()[0]; ++y) {
    sink =
        sink ^ static_cast<uint8_t>(map->data()[y * layout.strides()[0] + layout.shape()[1] * layout.shape()[2] - 1]);
  }
  return 0;
}
