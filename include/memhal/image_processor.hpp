/// @file
/// `ImageProcessor`: turns one image tensor into another in as few passes over memory as
/// possible — pixel-format conversion, crop, flip, rotation, resize (stretch or letterbox),
/// output dtype and per-channel normalisation, fused into one call.
///
/// The CPU backend converts each source line once, resamples it, and writes the destination
/// row by row on a thread pool, with SIMD kernels chosen at run time (Highway dynamic
/// dispatch), so one binary runs at full width on every x86 and ARM CPU it meets.
///
/// Semantics (what the reference implementation in tests/ computes): the source is cropped,
/// then flipped, then rotated clockwise; each source pixel is decoded to RGB (YUV: chroma of
/// the pixel's own subsampled cell, the chosen matrix and range); the oriented image is
/// resampled onto the destination (or onto the letterboxed rectangle, centred, the rest filled
/// with `pad`) with pixel centres aligned (`(x + 0.5) * scale - 0.5`); the result is written in
/// the destination's dtype: u8 rounded, i8 as x - 128, f16/f32 as `(x/255 - mean)/std`.
#pragma once

#include <array>
#include <cstdint>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/tensor.hpp>
#include <memhal/vocabulary.hpp>
#include <memory>
#include <optional>

namespace memhal {

/// Mirroring applied to the cropped source, before rotation.
enum class Flip : uint32_t { None = 0, Horizontal = 1, Vertical = 2, Both = 3 };
/// Clockwise rotation applied after the flip.
enum class Rotation : uint32_t { None = 0, Cw90 = 1, Cw180 = 2, Cw270 = 3 };
/// `Stretch` fills the destination; `Letterbox` keeps the aspect ratio, centres, and pads.
enum class ResizeMode : uint32_t { Stretch = 0, Letterbox = 1 };
/// `Area` averages every source pixel an output pixel covers (use it for downscales beyond
/// 2x, where bilinear aliases); on upscales it behaves as `Bilinear`.
enum class Interpolation : uint32_t { Bilinear = 0, Nearest = 1, Area = 2 };
/// Y'CbCr matrix of YUV sources and destinations.
enum class ColorMatrix : uint32_t { Bt601 = 0, Bt709 = 1 };
/// `Limited`: Y in 16..235, chroma in 16..240; `Full`: 0..255.
enum class ColorRange : uint32_t { Limited = 0, Full = 1 };

/// A rectangle of source pixels.
struct Rect {
  int64_t x = 0;
  int64_t y = 0;
  int64_t width = 0;
  int64_t height = 0;
};

/// What `ImageProcessor::convert` does besides converting formats; defaults per DESIGN §5a.
struct ConvertOptions {
  std::optional<Rect> crop;  ///< source pixels to use; none = the whole source
  Flip flip = Flip::None;
  Rotation rotation = Rotation::None;
  ResizeMode resize = ResizeMode::Stretch;
  Interpolation interpolation = Interpolation::Bilinear;
  std::array<uint8_t, 4> pad{114, 114, 114, 255};  ///< RGBA colour of the letterbox bars
  ColorMatrix matrix = ColorMatrix::Bt601;
  ColorRange range = ColorRange::Limited;
  std::array<float, 4> mean{0, 0, 0, 0};  ///< per output channel, float outputs only
  std::array<float, 4> std{1, 1, 1, 1};   ///< per output channel, float outputs only
  /// Exchanges R and B in the output (BGR model inputs in a planar or plain tensor).
  bool swap_rb = false;
  /// The format to write when `dst` carries none (a plain tensor, e.g. one image sliced from a
  /// batch); when unset it is inferred from the shape: `{c, h, w}` planar, `{h, w, c}`
  /// interleaved (c = 1, 3 or 4; a leading batch dimension of 1 is allowed).
  std::optional<PixelFormat> dst_format;
};

/// How the processor is built.
struct ImageProcessorOptions {
  /// Worker threads of the CPU backend; 0 = one per hardware thread.
  unsigned threads = 0;
};

class MEMHAL_EXPORT ImageProcessor {
 public:
  /// A processor with its thread pool started. `InvalidArgument` for an absurd thread count
  /// (above 256), `Unavailable` when threads cannot be started.
  static Result<ImageProcessor> create(const ImageProcessorOptions& options = {});

  ImageProcessor(ImageProcessor&&) noexcept;
  ImageProcessor& operator=(ImageProcessor&&) noexcept;
  ~ImageProcessor();

  /// Writes `src`, converted per `options`, into `dst` (its pixel format and dtype say what to
  /// produce). Both must be host-mappable. After the first call of a given geometry, calls
  /// allocate nothing. Calls on one processor are serialised; use one processor per thread for
  /// parallel pipelines. Errors (nothing is written to `dst`): `InvalidArgument` for mismatched
  /// or odd sizes, a crop outside the source, a batch dst; `NotImplemented` for a format pair
  /// or dtype this backend does not convert (the message names it); `NotHostAddressable` for
  /// memory the CPU cannot map (Cuda).
  Result<void> convert(const Tensor& src, Tensor& dst, const ConvertOptions& options = {});

  /// Worker threads in use.
  unsigned threads() const noexcept;

  /// Allocates an image where this backend works best (the CPU backend: DmaBuf, then Mem).
  Result<Tensor> create_image(int64_t width, int64_t height, PixelFormat format, DType dtype = DType::U8) const;

 private:
  struct Impl;
  explicit ImageProcessor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace memhal
