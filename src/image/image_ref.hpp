// Private description of an image for the image backends: where each plane's bytes are and
// how to step through them, plus the colour-matrix coefficients both directions use.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memhal/image_processor.hpp>
#include <memhal/pixel_format.hpp>
#include <memhal/tensor_map.hpp>

namespace memhal::detail {

/// One plane of an image, the one description the CPU and GL backends share. Element (x, y,
/// component c) lies y*row + x*pixel + c*comp bytes from element (0, 0, 0), which is at byte
/// `offset` of the tensor's buffer number `buffer`; at `base` once the CPU can reach the plane
/// (mapped); for the GL backend at `offset` in the GL buffer object `gl_buffer` (a Pbo tensor),
/// or already in the R8 (unsigned normalised) texture `gl_texture` (texel (x, y) = byte x of
/// row y; a DMA-BUF imported through EGL), sampled as it is.
struct PlaneRef {
  std::byte* base = nullptr;
  int64_t row = 0;
  int64_t pixel = 0;
  int64_t comp = 0;
  uint32_t buffer = 0;
  int64_t offset = 0;
  uint32_t gl_buffer = 0;
  uint32_t gl_texture = 0;
  /// GL backend, destinations: a framebuffer over this plane's own bytes (a DMA-BUF or memfd
  /// imported as a render target), which the converter renders into instead of reading back.
  uint32_t gl_framebuffer = 0;
};

/// An image tensor described for a backend: for interleaved formats one plane of pixels, for
/// planar RGB one plane per channel, for multi-plane YUV the format's planes (chroma on its
/// subsampled grid, each plane in the buffer and at the offset Layout::planes() says).
struct ImageRef {
  PixelFormat format = PixelFormat::Rgb;
  DType dtype = DType::U8;
  int64_t width = 0;
  int64_t height = 0;
  bool multi_plane = false;
  int plane_count = 0;
  std::array<PlaneRef, kMaxPlanes> planes{};
  /// GL backend: the whole image on a GL_TEXTURE_EXTERNAL_OES texture (a DMA-BUF imported as
  /// one EGLImage; the driver converts it to RGB), instead of the planes; 0 if not.
  uint32_t gl_external = 0;
};

/// Where each plane of `layout` lies when its bytes are read or written as `format` (`base`
/// unset). `InvalidArgument`, naming `role` ("source"), for a layout that is no such image.
Result<ImageRef> describe(const Layout& layout, PixelFormat format, const char* role);

/// `image` with each plane's `base` in the CPU's view of `map`, a mapping of the tensor `image`
/// describes. `Internal`, naming `role`, for a plane the mapping lacks.
Result<ImageRef> resolve(ImageRef image, const TensorMap& map, const char* role);

/// Y'CbCr <-> R'G'B' for one matrix and range, on 0..255 values.
struct ColorCoeffs {
  float kr, kg, kb;      // luma weights
  float y_scale;         // 255/219 (limited) or 1: Y code -> luma
  float y_offset;        // 16 or 0
  float c_scale;         // 255/224 (limited) or 1: chroma code -> chroma
  float rv, gu, gv, bu;  // decode: R = Y' + rv V', G = Y' - gu U' - gv V', B = Y' + bu U'
};

inline ColorCoeffs color_coeffs(ColorMatrix matrix, ColorRange range) {
  ColorCoeffs c{};
  c.kr = matrix == ColorMatrix::Bt709 ? 0.2126f : 0.299f;
  c.kb = matrix == ColorMatrix::Bt709 ? 0.0722f : 0.114f;
  c.kg = 1.0f - c.kr - c.kb;
  const bool limited = range == ColorRange::Limited;
  c.y_scale = limited ? 255.0f / 219.0f : 1.0f;
  c.y_offset = limited ? 16.0f : 0.0f;
  c.c_scale = limited ? 255.0f / 224.0f : 1.0f;
  c.rv = 2.0f * (1.0f - c.kr) * c.c_scale;
  c.bu = 2.0f * (1.0f - c.kb) * c.c_scale;
  c.gu = 2.0f * (1.0f - c.kb) * c.kb / c.kg * c.c_scale;
  c.gv = 2.0f * (1.0f - c.kr) * c.kr / c.kg * c.c_scale;
  return c;
}

}  // namespace memhal::detail
