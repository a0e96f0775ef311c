/// @file
/// What each `PixelFormat` looks like in memory: planes, chroma subsampling, bytes per pixel
/// and the DRM FourCC that names it to the kernel (V4L2, KMS, EGL).
///
/// One table (`pixel_format_info`) derived for every enumerator of `PixelFormat`; a
/// compile-time check makes sure no format is missing. Pure and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memhal/vocabulary.hpp>
#include <optional>

namespace memhal {

/// Builds a DRM FourCC code from its four characters (as `fourcc_code` in drm_fourcc.h).
constexpr uint32_t fourcc(char a, char b, char c, char d) noexcept {
  return static_cast<uint32_t>(static_cast<unsigned char>(a)) |
         (static_cast<uint32_t>(static_cast<unsigned char>(b)) << 8) |
         (static_cast<uint32_t>(static_cast<unsigned char>(c)) << 16) |
         (static_cast<uint32_t>(static_cast<unsigned char>(d)) << 24);
}

/// Memory description of one pixel format.
struct PixelFormatInfo {
  PixelFormat format;
  uint8_t planes;          ///< memory planes (nv12: 2 — Y and interleaved UV; i420: 3)
  uint8_t channels;        ///< components per pixel after decoding (nv12: 3; rgba: 4; grey: 1)
  uint8_t chroma_shift_x;  ///< log2 of horizontal chroma subsampling (nv12, yuyv: 1; nv24: 0)
  uint8_t chroma_shift_y;  ///< log2 of vertical chroma subsampling (nv12, i420: 1; nv16: 0)
  bool yuv;                ///< a Y'CbCr format (needs a colour matrix to become RGB)
  /// One full-size plane per component, held as a channels-first {c, h, w} tensor
  /// (planar_rgb, planar_rgba); the YUV formats describe their planes by `planes` instead.
  bool planar;
  bool alpha;  ///< has an alpha component (rgba, bgra, planar_rgba)
  /// Bytes per sample of each plane along a row, per pixel of that plane's own grid
  /// (nv12: {1, 2}: one Y byte per pixel, a U and a V byte per chroma pixel; yuyv: {2}).
  std::array<uint8_t, 4> plane_bytes_per_pixel;
  /// Where the components sit. RGB formats: the byte offset of R, G, B, A in a pixel (bgra:
  /// {2, 1, 0, 3}; grey: all 0; planar: the plane of each). Packed 4:2:2: the offsets of Y0, U,
  /// Y1, V in a two-pixel group (uyvy: {1, 0, 3, 2}). Semi-planar: the offsets of U and V in a
  /// chroma pair (nv21: {1, 0}). I420: the plane of Y, U, V.
  std::array<uint8_t, 4> order;
  uint32_t drm_fourcc;  ///< the DRM_FORMAT_* code, 0 when DRM has none
};

inline constexpr std::array<PixelFormatInfo, 15> kPixelFormatTable{{
    // format, planes, channels, chroma shift x, y, yuv, planar, alpha, bytes per pixel, order, FourCC.
    // DRM names formats by a little-endian word, so memory byte order R,G,B is DRM's BGR888.
    {PixelFormat::Rgb, 1, 3, 0, 0, false, false, false, {3}, {0, 1, 2, 3}, fourcc('B', 'G', '2', '4')},
    {PixelFormat::Rgba, 1, 4, 0, 0, false, false, true, {4}, {0, 1, 2, 3}, fourcc('A', 'B', '2', '4')},
    {PixelFormat::Bgra, 1, 4, 0, 0, false, false, true, {4}, {2, 1, 0, 3}, fourcc('A', 'R', '2', '4')},
    {PixelFormat::Grey, 1, 1, 0, 0, false, false, false, {1}, {0, 0, 0, 0}, fourcc('R', '8', ' ', ' ')},
    {PixelFormat::Yuyv, 1, 3, 1, 0, true, false, false, {2}, {0, 1, 2, 3}, fourcc('Y', 'U', 'Y', 'V')},
    {PixelFormat::Vyuy, 1, 3, 1, 0, true, false, false, {2}, {1, 2, 3, 0}, fourcc('V', 'Y', 'U', 'Y')},
    {PixelFormat::Nv12, 2, 3, 1, 1, true, false, false, {1, 2}, {0, 1}, fourcc('N', 'V', '1', '2')},
    {PixelFormat::Nv16, 2, 3, 1, 0, true, false, false, {1, 2}, {0, 1}, fourcc('N', 'V', '1', '6')},
    {PixelFormat::PlanarRgb, 3, 3, 0, 0, false, true, false, {1, 1, 1}, {0, 1, 2, 3}, 0},
    {PixelFormat::PlanarRgba, 4, 4, 0, 0, false, true, true, {1, 1, 1, 1}, {0, 1, 2, 3}, 0},
    {PixelFormat::Nv24, 2, 3, 0, 0, true, false, false, {1, 2}, {0, 1}, fourcc('N', 'V', '2', '4')},
    {PixelFormat::Nv21, 2, 3, 1, 1, true, false, false, {1, 2}, {1, 0}, fourcc('N', 'V', '2', '1')},
    {PixelFormat::I420, 3, 3, 1, 1, true, false, false, {1, 1, 1}, {0, 1, 2}, fourcc('Y', 'U', '1', '2')},
    {PixelFormat::Uyvy, 1, 3, 1, 0, true, false, false, {2}, {1, 0, 3, 2}, fourcc('U', 'Y', 'V', 'Y')},
    {PixelFormat::Bgr, 1, 3, 0, 0, false, false, false, {3}, {2, 1, 0, 3}, fourcc('R', 'G', '2', '4')},
}};

namespace detail {
constexpr bool pixel_format_table_covers_vocabulary() {
  if (kPixelFormatTable.size() != all<PixelFormat>().size()) return false;
  for (std::size_t i = 0; i < kPixelFormatTable.size(); ++i) {
    if (kPixelFormatTable[i].format != all<PixelFormat>()[i]) return false;
  }
  return true;
}
static_assert(pixel_format_table_covers_vocabulary(), "kPixelFormatTable must list every PixelFormat in code order");
}  // namespace detail

/// The description of `format`, or nothing for a value outside the vocabulary.
constexpr std::optional<PixelFormatInfo> pixel_format_info(PixelFormat format) noexcept {
  for (const auto& info : kPixelFormatTable) {
    if (info.format == format) return info;
  }
  return std::nullopt;
}

/// Memory planes of `format` (0 for a value outside the vocabulary).
constexpr uint32_t plane_count(PixelFormat format) noexcept {
  auto info = pixel_format_info(format);
  return info ? info->planes : 0;
}

/// Whether `format` is a channels-first {c, h, w} image (`PixelFormatInfo::planar`).
constexpr bool is_planar(PixelFormat format) noexcept {
  auto info = pixel_format_info(format);
  return info && info->planar;
}

/// Whether `format` has an alpha component (`PixelFormatInfo::alpha`).
constexpr bool has_alpha(PixelFormat format) noexcept {
  auto info = pixel_format_info(format);
  return info && info->alpha;
}

/// The DRM FourCC of `format`, or nothing when DRM has no code for it (planar RGB).
constexpr std::optional<uint32_t> drm_fourcc(PixelFormat format) noexcept {
  auto info = pixel_format_info(format);
  if (!info || info->drm_fourcc == 0) return std::nullopt;
  return info->drm_fourcc;
}

/// The format DRM calls `code`, or nothing when memhal has no such format.
constexpr std::optional<PixelFormat> from_drm_fourcc(uint32_t code) noexcept {
  for (const auto& info : kPixelFormatTable) {
    if (code != 0 && info.drm_fourcc == code) return info.format;
  }
  return std::nullopt;
}

}  // namespace memhal
