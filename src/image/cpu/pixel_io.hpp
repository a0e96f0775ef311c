// Reading source lines into float RGBA rows, and writing float RGBA rows in the destination's
// format and dtype. The hot cases go through the SIMD kernels; every other layout (odd
// strides, columns of rotated images) through a per-pixel path that handles any stride.
#pragma once

#include <array>
#include <cstdint>

#include "image/cpu/kernels.hpp"
#include "image/image_ref.hpp"

namespace memhal::detail {

/// Four float rows (R, G, B, A), each `stride` floats apart.
struct RgbaRows {
  float* base = nullptr;
  int64_t stride = 0;
  float* channel(int c) const { return base + c * stride; }
};

/// Decodes source pixel (x, y) to RGBA (0..255; A = 255 without alpha).
void read_pixel(const ImageRef& src, int64_t x, int64_t y, const ColorCoeffs& coeffs, float* rgba);

/// Decodes `n` pixels of source row `y` from column `x` into `out` (A only when `alpha`).
/// `staging` holds 2 * n bytes for formats that need reshuffling first.
void read_row(const ImageRef& src, int64_t x, int64_t y, int64_t n, const ColorCoeffs& coeffs, bool alpha,
              const RgbaRows& out, uint8_t* staging);

/// NV12, NV21 and NV16: a Y plane and a plane of U, V pairs each shared by two columns. Their
/// whole lines — `read_row`, and `read_row_q6` without an index — are read in vectors (Y in
/// place, the chroma pairs split), faster than picking every column of a line.
bool semi_planar_subsampled(PixelFormat format);
/// YUYV, UYVY and VYUY: one plane of 4-byte macropixels, two pixels sharing U and V.
bool packed_422(PixelFormat format);

/// Whether `read_row_sampled` serves this source (its format and strides).
bool sampled_rows_supported(const ImageRef& src);

/// The byte shuffles that pick the samples of nearest sampling along rows of one source
/// format, 8 outputs per chunk (see kernels::ShuffleStream). Built once per geometry; no
/// chunks where the format or the sampling step (beyond about 4 source pixels per output)
/// does not suit.
struct SamplePlan {
  PixelFormat format = PixelFormat::Rgb;
  int64_t chunks = 0;
  std::array<kernels::ShuffleStream, 2> streams;
  std::array<int, 3> slots{};
  /// The same picks by word permutes (16 or 32 outputs a chunk), used where kernels::word_picks_fast
  /// (no chunks where a chunk's picks spread over more than 128 bytes).
  kernels::WordPicks words;
  /// The same picks into 32-bit lanes, for the normalised one-pass kernels (AVX2).
  kernels::LanePicks lanes;

  /// Plans outputs index[0 .. n) for sources of `source`; reuses the vectors' capacity.
  void build(PixelFormat source, const int32_t* index, int64_t n);

 private:
  void build_words(bool semi, const std::array<int, 4>& pos, const int32_t* index, int64_t n);
  void build_lanes(bool semi, const std::array<int, 4>& pos, const int32_t* index, int64_t n);
};

/// The first outputs of read_row_sampled by the plan alone: its picked Y, U and V bytes (by its
/// word picks where they are fast, else by its shuffle chunks) decoded by
/// kernels::planar_yuv_to_rgb, normalised by `affine` (null: plain 0..255 floats); returns how
/// many were written (0 when the plan was not built for this source's format). `staging` holds
/// 3 * (outputs) bytes. next_y (-1: none): the row the next call reads, whose lines the
/// one-pass kernels ask for as they go where planned_rows_prefetch says so (with `affine`).
int64_t read_row_planned(const ImageRef& src, int64_t x, int64_t y, int64_t next_y, const ColorCoeffs& coeffs,
                         const SamplePlan& plan, const float* affine, float* r, float* g, float* b, uint8_t* staging);

/// Whether read_row_planned (with `affine`), read_row_planned_half, _pixels and _planes ask for
/// the lines of row next_y themselves, a pair at a time, for sources of `src`'s kind (AVX2's
/// one-pass pairs): the next row's loads spread over this row's work, where all of them at once
/// before it (prefetch_row) waited for free line-fill buffers (cold 1080p NV12 -> 640x640 f32
/// 7% faster, rgb u8 10-12%, i8 20% on Zen 3). Elsewhere the caller prefetches the next row.
bool planned_rows_prefetch(const ImageRef& src, const SamplePlan& plan);

/// The first outputs of row y as interleaved 8-bit pixels (kernels::yuv_to_8bit_pixels' `order`,
/// `channels` and `flip`) straight from the plan's shuffle pairs, where
/// kernels::shuffled_yuv_to_8bit_pixels serves; returns how many were written (0 elsewhere).
int64_t read_row_planned_pixels(const ImageRef& src, int64_t x, int64_t y, int64_t next_y, const SamplePlan& plan,
                                const kernels::FixedCoeffs& coeffs, const int* order, int channels, uint8_t flip,
                                uint8_t* out);

/// read_row_planned_pixels into planar 8-bit rows: R, G and B (XOR `flip`) to r, g and b.
int64_t read_row_planned_planes(const ImageRef& src, int64_t x, int64_t y, int64_t next_y, const SamplePlan& plan,
                                const kernels::FixedCoeffs& coeffs, uint8_t flip, uint8_t* r, uint8_t* g, uint8_t* b);

/// read_row_planned with `affine` (not null) into IEEE half rows `out` (R, G, B), rounded to
/// nearest even as kernels::store_f16 rounds, straight from the picked bytes.
int64_t read_row_planned_half(const ImageRef& src, int64_t x, int64_t y, int64_t next_y, const ColorCoeffs& coeffs,
                              const SamplePlan& plan, const float* affine, uint16_t* const* out, uint8_t* staging);

/// Decodes only the pixels `x + index[i]`, i < n, of source row `y` (nearest sampling along the
/// row: decoding costs what the output needs, not what the source holds), by `plan` where it
/// was built for these indices and this format. `staging` holds 3 * n bytes.
void read_row_sampled(const ImageRef& src, int64_t x, int64_t y, const int32_t* index, int64_t n,
                      const ColorCoeffs& coeffs, bool alpha, const RgbaRows& out, uint8_t* staging,
                      const SamplePlan& plan);

/// Four Q6 rows (R, G, B, A; int16, value * 64) of the integer path, `stride` apart.
struct Q6Rows {
  int16_t* base = nullptr;
  int64_t stride = 0;
  int16_t* channel(int c) const { return base + c * stride; }
};

/// Whether `read_row_q6` serves this source (its format and strides).
bool q6_readable(const ImageRef& src);

/// The integer path's decode: pixels x + at(i), i < n, of source row `y` to Q6 rows, where
/// at(i) is i without `index`, index[i] with it. With `index`, `plan` (built for it and this
/// format, or not built) picks the first ones by shuffles. A only when `alpha` (255 where the
/// source has none). `staging` holds 3 * n bytes.
void read_row_q6(const ImageRef& src, int64_t x, int64_t y, const int32_t* index, int64_t n,
                 const kernels::FixedCoeffs& coeffs, bool alpha, const Q6Rows& out, uint8_t* staging,
                 const SamplePlan& plan);

/// The Y, U and V bytes of one source row's pixels, one byte each (chroma repeated per pixel).
struct YuvBytes {
  const uint8_t* y = nullptr;
  const uint8_t* u = nullptr;
  const uint8_t* v = nullptr;
};

/// The bytes `read_row_q6` decodes for YUV sources (in `staging`, or Y in place): the pixels
/// x + at(i), i < n, of row `y`, picked by `plan` where it serves; all null for other formats.
YuvBytes read_row_yuv_bytes(const ImageRef& src, int64_t x, int64_t y, const int32_t* index, int64_t n,
                            uint8_t* staging, const SamplePlan& plan);

/// One line of a semi-planar source with halved chroma (semi_planar_subsampled): row `y`'s luma
/// from column `x` (even) and the chroma pair of that column, and whether V comes first.
struct SemiPlanarLine {
  const uint8_t* y = nullptr;
  const uint8_t* uv = nullptr;
  bool vu = false;
};
SemiPlanarLine semi_planar_line(const ImageRef& src, int64_t x, int64_t y);

/// One line of a packed 4:2:2 source (yuyv, uyvy, vyuy) from column `x` (even), and the byte
/// offsets of Y0, U, Y1 and V in its macropixels; `row` is null for other formats.
struct Packed422Line {
  const uint8_t* row = nullptr;
  std::array<int, 4> pos{};
};
Packed422Line packed_422_line(const ImageRef& src, int64_t x, int64_t y);

/// Asks the cache for the bytes of source row `y`, columns [x, x + n), every plane, ahead of
/// the read: rows several pages apart defeat the hardware prefetchers.
void prefetch_row(const ImageRef& src, int64_t x, int64_t y, int64_t n);

/// Decodes `n` pixels of source column `x` from row `y` into `out`.
void read_column(const ImageRef& src, int64_t x, int64_t y, int64_t n, const ColorCoeffs& coeffs, bool alpha,
                 const RgbaRows& out);

/// How to write destination pixels: channel order, normalisation, colour matrix.
struct WriteParams {
  std::array<int, 4> order{0, 1, 2, 3};  ///< output channel j takes RGBA channel order[j]
  int channels = 3;
  std::array<float, 4> scale{1, 1, 1, 1};  ///< float outputs: v * scale + bias
  std::array<float, 4> bias{0, 0, 0, 0};
  ColorCoeffs coeffs{};
  bool stream = false;  ///< float rows and copied rows go around the caches (kernels::store_f32)
};

/// Whether `copy_row` serves `dst` (every plane's rows are dense runs of bytes).
bool rows_copyable(const ImageRef& dst);

/// Copies destination row `from` onto row `to`, every plane (e.g. a letterbox bar); around the
/// caches with `stream`.
void copy_row(const ImageRef& dst, int64_t from, int64_t to, bool stream);

/// Sets rows [to, end) of every plane to what row `from` holds where that row is one value
/// repeated in each plane (a letterbox bar of a planar destination, or of an interleaved one
/// whose padding channels are alike): string stores, no reads. False, writing nothing, where a
/// row is not; `rows_copyable(dst)` must hold.
bool fill_rows_like(const ImageRef& dst, int64_t from, int64_t to, int64_t end);

/// The destination formats and dtypes `write_rows` serves.
bool writable(PixelFormat format, DType dtype);

/// Writes destination row `y` (and `y + 1` for 4:2:0 formats, whose chroma spans two rows:
/// then `second` holds row y + 1) from `rows` (dst width floats per channel). `scratch` holds
/// dst width floats (also used as 4 * dst width bytes).
void write_rows(const ImageRef& dst, int64_t y, const RgbaRows& rows, const RgbaRows* second, const WriteParams& params,
                float* scratch);

}  // namespace memhal::detail
