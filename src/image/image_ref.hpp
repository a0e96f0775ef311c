// Private description of a mapped image for the image backends: where each plane's bytes are
// and how to step through them, plus the colour-matrix coefficients both directions use.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memhal/image_processor.hpp>
#include <memhal/pixel_format.hpp>

namespace memhal::detail {

/// One plane: element (x, y, component c) lies at base + y*row + x*pixel + c*comp (bytes).
struct PlaneRef {
  std::byte* base = nullptr;
  int64_t row = 0;
  int64_t pixel = 0;
  int64_t comp = 0;
};

/// A mapped image: for interleaved formats one plane of pixels, for planar RGB one plane per
/// channel, for multi-plane YUV the format's planes (chroma on its subsampled grid).
struct ImageRef {
  PixelFormat format = PixelFormat::Rgb;
  DType dtype = DType::U8;
  int64_t width = 0;
  int64_t height = 0;
  int plane_count = 0;
  std::array<PlaneRef, kMaxPlanes> planes{};
};

/// Where one plane of an image lies in its tensor, before anything is mapped: which buffer,
/// the byte offset of element (0, 0, 0) in it, and the steps as in PlaneRef.
struct PlaneGeometry {
  uint32_t buffer = 0;
  int64_t offset = 0;
  int64_t row = 0;
  int64_t pixel = 0;
  int64_t comp = 0;
};

/// An image tensor described for a backend; `ImageRef` once mapped.
struct ImageGeometry {
  PixelFormat format = PixelFormat::Rgb;
  DType dtype = DType::U8;
  int64_t width = 0;
  int64_t height = 0;
  bool multi_plane = false;  ///< planes come from Layout::planes() (each at its own buffer offset)
  int plane_count = 0;
  std::array<PlaneGeometry, kMaxPlanes> planes{};
};

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
