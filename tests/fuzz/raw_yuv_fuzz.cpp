// Fuzzes the raw-frame reader of `memhal convert` and, through it, ImageProcessor: the first
// five bytes choose width, height and pixel format, the rest is the frame. A frame that reads
// is converted, letterboxed and rotated into a small RGB and a planar f32 image.
#include <cstddef>
#include <cstdint>
#include <memhal/image_processor.hpp>

#include "image_io.hpp"

using namespace memhal;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  const int64_t width = 1 + data[0] % 96;
  const int64_t height = 1 + data[1] % 96;
  const auto format = from_code<PixelFormat>(data[2] % 16);
  if (!format) return 0;
  auto frame = cli::decode_raw({data + 5, size - 5}, width, height, *format);
  if (!frame) return 0;
  static ImageProcessor processor = std::move(*ImageProcessor::create({.threads = 1, .backend = ImageBackend::Cpu}));
  ConvertOptions options;
  options.resize = (data[3] & 1) ? ResizeMode::Letterbox : ResizeMode::Stretch;
  options.rotation = static_cast<Rotation>((data[3] >> 1) & 3);
  options.flip = static_cast<Flip>((data[3] >> 3) & 3);
  options.interpolation = static_cast<Interpolation>(((data[3] >> 5) & 3) % 3);
  options.matrix = static_cast<ColorMatrix>(data[4] & 1);
  options.range = static_cast<ColorRange>((data[4] >> 1) & 1);
  auto rgb = Tensor::image(1 + data[4] % 40, 1 + data[3] % 40, PixelFormat::Rgb);
  auto planar = Tensor::image(32, 32, PixelFormat::PlanarRgb, std::nullopt, DType::F32);
  if (!rgb || !planar) __builtin_trap();
  if (!processor.convert(*frame, *rgb, options)) __builtin_trap();
  if (!processor.convert(*frame, *planar, options)) __builtin_trap();
  return 0;
}
