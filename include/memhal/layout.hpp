/// @file
/// `Layout`: how a tensor's elements lie in one or more buffers — dtype, shape, signed byte
/// strides, byte offset, and for multi-plane images (NV12, I420, ...) the planes.
///
/// A layout is a value; every factory and view validates its arguments and checks sizes for
/// overflow, so a `Layout` that exists is always well formed. The view functions here copy
/// nothing: they compute a new layout over the same bytes (the `Tensor` views apply them to a
/// shared storage). Thread-safe as any value type.
///
/// Conventions: strides are in bytes and may be negative; a new layout is dense row-major;
/// `is_contiguous()` means dense row-major with no gaps (strides of size-1 dimensions do not
/// matter); a zero-sized dimension gives an empty layout, as in numpy (0 elements, 0 bytes);
/// rank 0 is a scalar.
///
/// An image layout (`Layout::image`) carries its `PixelFormat`. Interleaved formats have shape
/// `{h, w, c}` (grey: c = 1; yuyv/uyvy/vyuy: c = 2 bytes per pixel), planar RGB `{c, h, w}`;
/// both are plain strided tensors. Multi-plane YUV formats (nv12, nv21, nv16, nv24, i420) have
/// shape `{h, w}` (the pixel grid) and their bytes are described by `planes()`.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/vocabulary.hpp>
#include <optional>
#include <span>
#include <string>

namespace memhal {

inline constexpr std::size_t kMaxRank = 8;       ///< highest tensor rank
inline constexpr std::size_t kMaxPlanes = 4;     ///< most planes (and buffers) of one image
inline constexpr int64_t kDefaultRowAlign = 64;  ///< row pitch alignment of new images, bytes

/// One plane of a multi-plane image.
struct PlaneLayout {
  uint32_t buffer = 0;    ///< which buffer of the tensor holds the plane (0 when they share one)
  int64_t offset = 0;     ///< byte offset of the plane's first pixel in that buffer
  int64_t pitch = 0;      ///< bytes from one row to the next
  int64_t width = 0;      ///< pixels per row of this plane's own grid (chroma: subsampled)
  int64_t height = 0;     ///< rows of this plane
  int64_t row_bytes = 0;  ///< bytes of pixel data in one row (<= pitch)
};

/// Byte range `[begin, end)` a layout touches inside one buffer.
struct ByteExtent {
  int64_t begin = 0;
  int64_t end = 0;
};

class MEMHAL_EXPORT Layout {
 public:
  /// A dense row-major layout. `InvalidArgument` for a rank above `kMaxRank`, a negative
  /// dimension, a dtype outside the vocabulary, or a byte size that overflows.
  static Result<Layout> contiguous(std::span<const int64_t> shape, DType dtype);
  static Result<Layout> contiguous(std::initializer_list<int64_t> shape, DType dtype) {
    return contiguous(std::span<const int64_t>(shape.begin(), shape.size()), dtype);
  }

  /// A layout with the given byte strides and offset (e.g. a foreign buffer's). Validated as
  /// `contiguous`, plus: strides and shape of equal rank, offset and extent not below 0.
  static Result<Layout> strided(std::span<const int64_t> shape, std::span<const int64_t> strides, int64_t offset,
                                DType dtype);

  /// An image of `width` x `height` pixels in `format`, in one buffer, each row pitch rounded
  /// up to `row_align` bytes (1 = packed; must be a power of two). Planes follow one another,
  /// each starting at a multiple of `row_align`. `InvalidArgument` for a zero or negative size,
  /// an odd size where the format subsamples chroma, a bad alignment, or an unknown format.
  static Result<Layout> image(int64_t width, int64_t height, PixelFormat format, DType dtype = DType::U8,
                              int64_t row_align = kDefaultRowAlign);

  /// An image over caller-described planes (for imports: V4L2, GPU, foreign pointers, other
  /// processes). `planes` gives buffer, offset and pitch for each plane of `format`;
  /// width, height and row bytes are derived. Any format: interleaved ones take one plane and
  /// give the `{h, w, c}` strided layout, planar RGB(A) takes its planes in buffer 0 with one
  /// pitch and evenly spaced offsets and gives `{c, h, w}`. `InvalidArgument` for a plane count
  /// that does not match the format, a pitch shorter than a row, a negative offset, or planar
  /// RGB planes that no strided layout describes.
  static Result<Layout> image_planes(int64_t width, int64_t height, PixelFormat format,
                                     std::span<const PlaneLayout> planes, DType dtype = DType::U8);

  DType dtype() const noexcept { return dtype_; }
  std::size_t rank() const noexcept { return rank_; }
  std::span<const int64_t> shape() const noexcept { return {shape_.data(), rank_}; }
  std::span<const int64_t> strides() const noexcept { return {strides_.data(), rank_}; }
  int64_t offset() const noexcept { return offset_; }
  std::size_t element_size() const noexcept { return size_of(dtype_); }
  int64_t element_count() const noexcept;
  /// Bytes of the elements themselves (element count times element size; for a multi-plane
  /// image the sum of the planes' row bytes times rows), not counting gaps or padding.
  int64_t nbytes() const noexcept;
  bool is_contiguous() const noexcept;
  bool empty() const noexcept { return element_count() == 0; }

  std::optional<PixelFormat> pixel_format() const noexcept { return format_; }
  /// The planes of a multi-plane image; empty for a plain strided layout.
  std::span<const PlaneLayout> planes() const noexcept { return {planes_.data(), plane_count_}; }
  bool is_multi_plane() const noexcept { return plane_count_ > 0; }
  /// How many buffers the layout spans (1 unless planes live in separate buffers).
  uint32_t buffer_count() const noexcept;
  /// Bytes of buffer `buffer` the layout touches; a buffer must be at least `extent.end` long.
  ByteExtent byte_extent(uint32_t buffer = 0) const noexcept;

  const std::string& name() const noexcept { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // Views: new layouts over the same bytes. `OutOfRange` for an axis or bound outside the
  // shape, `InvalidArgument` for malformed arguments, `NotImplemented` for multi-plane images
  // (only `crop` applies to those).

  /// Elements `[begin, end)` of `axis`.
  Result<Layout> slice(std::size_t axis, int64_t begin, int64_t end) const;
  /// Reverses `axis` (negates its stride).
  Result<Layout> flip(std::size_t axis) const;
  /// Swaps axes `a` and `b`.
  Result<Layout> transpose(std::size_t a, std::size_t b) const;
  /// Reorders the axes: axis `i` of the result is axis `axes[i]` of this layout.
  Result<Layout> permute(std::span<const std::size_t> axes) const;
  /// The same elements in row-major order with another shape (one dimension may be -1 and is
  /// inferred). `InvalidArgument` when the element count differs or the strides cannot express
  /// the new shape without a copy (the message says to `materialize` first).
  Result<Layout> reshape(std::span<const int64_t> shape) const;
  /// The pixels `[x, x + w) x [y, y + h)` of an image layout (needs a pixel format; chroma
  /// subsampled formats need even `x`, `y`, and `w`, `h` unless they reach the edge).
  Result<Layout> crop(int64_t x, int64_t y, int64_t width, int64_t height) const;

  /// This plain layout read as an image in `format`: interleaved formats need shape
  /// `{h, w, bytes per pixel}` with the pixel's components adjacent, planar RGB `{c, h, w}`.
  /// `InvalidArgument` otherwise, and for multi-plane YUV formats (see `image_planes`).
  Result<Layout> with_pixel_format(PixelFormat format) const;

  /// The same layout, dense row-major, at offset 0 (planes packed one after another).
  Layout dense() const;

  friend bool operator==(const Layout& a, const Layout& b) noexcept;

 private:
  Layout() = default;
  Result<void> check_axis(std::size_t axis, const char* operation) const;
  Result<void> check_not_multi_plane(const char* operation) const;

  DType dtype_ = DType::U8;
  uint8_t rank_ = 0;
  uint8_t plane_count_ = 0;
  std::array<int64_t, kMaxRank> shape_{};
  std::array<int64_t, kMaxRank> strides_{};
  int64_t offset_ = 0;
  std::optional<PixelFormat> format_;
  std::array<PlaneLayout, kMaxPlanes> planes_{};
  std::string name_;
};

}  // namespace memhal
