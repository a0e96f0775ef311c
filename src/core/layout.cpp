#include <algorithm>
#include <memhal/layout.hpp>
#include <memhal/pixel_format.hpp>
#include <numeric>

#include "core/strings.hpp"

namespace memhal {
namespace {

bool mul_overflows(int64_t a, int64_t b, int64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}
bool add_overflows(int64_t a, int64_t b, int64_t* out) {
  return __builtin_add_overflow(a, b, out);
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

Result<void> check_shape(std::span<const int64_t> shape, DType dtype) {
  if (shape.size() > kMaxRank) {
    return detail::fail(ErrorCode::InvalidArgument, "shape ", shape_string(shape), " has rank ", shape.size(),
                        "; tensors have at most ", kMaxRank, " dimensions");
  }
  if (!from_code<DType>(code(dtype))) {
    return detail::fail(ErrorCode::InvalidArgument, "dtype code ", code(dtype), " is not a DType");
  }
  int64_t bytes = static_cast<int64_t>(size_of(dtype));
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return detail::fail(ErrorCode::InvalidArgument, "shape ", shape_string(shape), " has negative dimension ", i);
    }
    if (mul_overflows(bytes, shape[i], &bytes)) {
      return detail::fail(ErrorCode::InvalidArgument, "shape ", shape_string(shape), " of ", to_string(dtype),
                          " overflows a 64-bit byte size");
    }
  }
  return {};
}

int64_t align_up(int64_t value, int64_t align) {
  return (value + align - 1) / align * align;
}

// Axis holding colour channels of a plain image layout, or rank() when none stands out.
std::size_t channel_axis(PixelFormat format, std::size_t rank) {
  if (rank != 3) return rank;
  return is_planar(format) ? 0 : 2;
}

// The checks every image layout shares: a size whose products fit comfortably in 64 bits,
// a whole number of chroma samples, a known dtype.
Result<void> check_image_size(int64_t width, int64_t height, const PixelFormatInfo& info, DType dtype) {
  constexpr int64_t kMaxSide = 1 << 20;
  if (width <= 0 || height <= 0 || width > kMaxSide || height > kMaxSide) {
    return detail::fail(ErrorCode::InvalidArgument, "image size ", width, "x", height, " is outside 1..", kMaxSide);
  }
  if (((width & ((1 << info.chroma_shift_x) - 1)) != 0) || ((height & ((1 << info.chroma_shift_y) - 1)) != 0)) {
    return detail::fail(ErrorCode::InvalidArgument, to_string(info.format), " subsamples chroma ",
                        1 << info.chroma_shift_x, "x", 1 << info.chroma_shift_y, ": ", width, "x", height,
                        " must be a multiple of that");
  }
  if (!from_code<DType>(code(dtype))) {
    return detail::fail(ErrorCode::InvalidArgument, "dtype code ", code(dtype), " is not a DType");
  }
  return {};
}

}  // namespace

Result<Layout> Layout::contiguous(std::span<const int64_t> shape, DType dtype) {
  MEMHAL_TRY(check_shape(shape, dtype));
  Layout layout;
  layout.dtype_ = dtype;
  layout.rank_ = static_cast<uint8_t>(shape.size());
  int64_t stride = static_cast<int64_t>(size_of(dtype));
  for (std::size_t i = shape.size(); i-- > 0;) {
    layout.shape_[i] = shape[i];
    layout.strides_[i] = stride;
    stride *= std::max<int64_t>(shape[i], 1);  // cannot overflow: check_shape bounded the product
  }
  return layout;
}

Result<Layout> Layout::strided(std::span<const int64_t> shape, std::span<const int64_t> strides, int64_t offset,
                               DType dtype) {
  MEMHAL_TRY(check_shape(shape, dtype));
  if (strides.size() != shape.size()) {
    return detail::fail(ErrorCode::InvalidArgument, "shape ", shape_string(shape), " has rank ", shape.size(), " but ",
                        strides.size(), " strides were given");
  }
  if (offset < 0) return detail::fail(ErrorCode::InvalidArgument, "negative byte offset ", offset);
  Layout layout;
  layout.dtype_ = dtype;
  layout.rank_ = static_cast<uint8_t>(shape.size());
  layout.offset_ = offset;
  int64_t low = offset;
  int64_t high = offset;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    layout.shape_[i] = shape[i];
    layout.strides_[i] = strides[i];
    if (shape[i] == 0) continue;
    int64_t reach = 0;
    if (mul_overflows(shape[i] - 1, strides[i], &reach) ||
        add_overflows(reach < 0 ? low : high, reach, reach < 0 ? &low : &high)) {
      return detail::fail(ErrorCode::InvalidArgument, "strides ", shape_string(strides), " over shape ",
                          shape_string(shape), " overflow a 64-bit byte offset");
    }
  }
  if (!layout.empty() && low < 0) {
    return detail::fail(ErrorCode::InvalidArgument, "strides ", shape_string(strides), " over shape ",
                        shape_string(shape), " at offset ", offset, " reach ",
                        uint64_t{0} - static_cast<uint64_t>(low),  // low may be INT64_MIN
                        " bytes before the buffer");
  }
  int64_t end = 0;
  if (add_overflows(high, static_cast<int64_t>(size_of(dtype)), &end)) {
    return detail::fail(ErrorCode::InvalidArgument, "layout extent overflows a 64-bit byte offset");
  }
  return layout;
}

Result<Layout> Layout::image(int64_t width, int64_t height, PixelFormat format, DType dtype, int64_t row_align) {
  auto info = pixel_format_info(format);
  if (!info)
    return detail::fail(ErrorCode::InvalidArgument, "pixel format code ", code(format), " is not a PixelFormat");
  if (row_align < 1 || (row_align & (row_align - 1)) != 0) {
    return detail::fail(ErrorCode::InvalidArgument, "row alignment ", row_align, " is not a power of two");
  }
  MEMHAL_TRY(check_image_size(width, height, *info, dtype));
  const int64_t esize = static_cast<int64_t>(size_of(dtype));
  std::array<PlaneLayout, kMaxPlanes> planes{};
  int64_t end = 0;
  for (std::size_t i = 0; i < info->planes; ++i) {
    const bool chroma = i > 0;
    const int64_t plane_width = chroma ? width >> info->chroma_shift_x : width;
    const int64_t plane_height = chroma ? height >> info->chroma_shift_y : height;
    const int64_t row_bytes = plane_width * info->plane_bytes_per_pixel[i] * esize;
    planes[i].offset = align_up(end, row_align);
    planes[i].pitch = align_up(row_bytes, row_align);
    end = planes[i].offset + planes[i].pitch * plane_height;
  }
  return image_planes(width, height, format, std::span(planes.data(), info->planes), dtype);
}

Result<Layout> Layout::image_planes(int64_t width, int64_t height, PixelFormat format,
                                    std::span<const PlaneLayout> planes, DType dtype) {
  auto info = pixel_format_info(format);
  if (!info)
    return detail::fail(ErrorCode::InvalidArgument, "pixel format code ", code(format), " is not a PixelFormat");
  if (planes.size() != info->planes) {
    return detail::fail(ErrorCode::InvalidArgument, to_string(format), " has ", int(info->planes), " planes, ",
                        planes.size(), " were given");
  }
  MEMHAL_TRY(check_image_size(width, height, *info, dtype));
  const int64_t esize = static_cast<int64_t>(size_of(dtype));
  Layout layout;
  layout.dtype_ = dtype;
  layout.format_ = format;
  for (std::size_t i = 0; i < planes.size(); ++i) {
    PlaneLayout plane = planes[i];
    const bool chroma = i > 0;
    plane.width = chroma ? width >> info->chroma_shift_x : width;
    plane.height = chroma ? height >> info->chroma_shift_y : height;
    plane.row_bytes = plane.width * info->plane_bytes_per_pixel[i] * esize;
    if (plane.buffer >= kMaxPlanes) {
      return detail::fail(ErrorCode::InvalidArgument, "plane ", i, " names buffer ", plane.buffer, "; at most ",
                          kMaxPlanes, " buffers");
    }
    if (plane.offset < 0 || plane.offset > (int64_t{1} << 48)) {
      return detail::fail(ErrorCode::InvalidArgument, "plane ", i, " has offset ", plane.offset);
    }
    if (plane.pitch < plane.row_bytes || plane.pitch > (int64_t{1} << 32)) {
      return detail::fail(ErrorCode::InvalidArgument, "plane ", i, " of ", to_string(format), " ", width, "x", height,
                          " has pitch ", plane.pitch, ", a row needs ", plane.row_bytes, " bytes");
    }
    layout.planes_[i] = plane;
  }
  if (!info->yuv || info->planes < 2) {
    // Interleaved and planar RGB images are plain strided tensors ({h, w, c}, {c, h, w}): their
    // planes must share one buffer and one pitch, evenly spaced.
    const int64_t step = planes.size() > 1 ? planes[1].offset - planes[0].offset : 0;
    for (std::size_t i = 1; i < planes.size(); ++i) {
      if (planes[i].buffer != 0 || planes[i].pitch != planes[0].pitch ||
          planes[i].offset != planes[0].offset + static_cast<int64_t>(i) * step) {
        return detail::fail(
            ErrorCode::InvalidArgument, to_string(format),
            " is one strided tensor: its planes need buffer 0, one pitch and evenly spaced offsets; plane ", i,
            " has buffer ", planes[i].buffer, ", offset ", planes[i].offset, ", pitch ", planes[i].pitch);
      }
    }
    const int64_t bpp = info->plane_bytes_per_pixel[0];
    const bool planar = info->planes > 1;
    const std::array<int64_t, 3> shape =
        planar ? std::array<int64_t, 3>{info->planes, height, width} : std::array{height, width, bpp};
    const std::array<int64_t, 3> strides =
        planar ? std::array{step, planes[0].pitch, esize} : std::array{planes[0].pitch, bpp * esize, esize};
    MEMHAL_ASSIGN_OR_RETURN(Layout plain, strided(shape, strides, planes[0].offset, dtype));
    plain.format_ = format;
    return plain;
  }
  layout.plane_count_ = static_cast<uint8_t>(planes.size());
  layout.rank_ = 2;
  layout.shape_[0] = height;
  layout.shape_[1] = width;
  layout.strides_[0] = layout.planes_[0].pitch;
  layout.strides_[1] = info->plane_bytes_per_pixel[0] * esize;
  layout.offset_ = layout.planes_[0].offset;
  return layout;
}

int64_t Layout::element_count() const noexcept {
  int64_t count = 1;
  for (std::size_t i = 0; i < rank_; ++i) count *= shape_[i];
  return count;
}

int64_t Layout::nbytes() const noexcept {
  if (plane_count_ == 0) return element_count() * static_cast<int64_t>(size_of(dtype_));
  int64_t total = 0;
  for (const auto& plane : planes()) total += plane.row_bytes * plane.height;
  return total;
}

bool Layout::is_contiguous() const noexcept {
  if (plane_count_ > 0) return false;
  if (empty()) return true;
  int64_t expected = static_cast<int64_t>(size_of(dtype_));
  for (std::size_t i = rank_; i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

uint32_t Layout::buffer_count() const noexcept {
  uint32_t count = 1;
  for (const auto& plane : planes()) count = std::max(count, plane.buffer + 1);
  return count;
}

ByteExtent Layout::byte_extent(uint32_t buffer) const noexcept {
  if (plane_count_ > 0) {
    ByteExtent extent{INT64_MAX, 0};
    for (const auto& plane : planes()) {
      if (plane.buffer != buffer) continue;
      extent.begin = std::min(extent.begin, plane.offset);
      extent.end = std::max(extent.end, plane.offset + plane.pitch * (plane.height - 1) + plane.row_bytes);
    }
    if (extent.begin == INT64_MAX) return {};
    return extent;
  }
  if (buffer != 0 || empty()) return {offset_, offset_};
  ByteExtent extent{offset_, offset_};
  for (std::size_t i = 0; i < rank_; ++i) {
    const int64_t reach = (shape_[i] - 1) * strides_[i];
    (reach < 0 ? extent.begin : extent.end) += reach;
  }
  extent.end += static_cast<int64_t>(size_of(dtype_));
  return extent;
}

Result<void> Layout::check_axis(std::size_t axis, const char* operation) const {
  if (axis >= rank_) {
    return detail::fail(ErrorCode::OutOfRange, operation, " axis ", axis, " of a rank-", int(rank_), " tensor");
  }
  return {};
}

Result<void> Layout::check_not_multi_plane(const char* operation) const {
  if (plane_count_ > 0) {
    return detail::fail(ErrorCode::NotImplemented, operation, " of a multi-plane ", to_string(*format_),
                        " image: only crop views apply; convert it to a single-plane format first");
  }
  return {};
}

Result<Layout> Layout::slice(std::size_t axis, int64_t begin, int64_t end) const {
  MEMHAL_TRY(check_not_multi_plane("slice"));
  MEMHAL_TRY(check_axis(axis, "slice"));
  if (begin > end)
    return detail::fail(ErrorCode::InvalidArgument, "slice [", begin, ", ", end, ") ends before it begins");
  if (begin < 0 || end > shape_[axis]) {
    return detail::fail(ErrorCode::OutOfRange, "slice [", begin, ", ", end, ") of axis ", axis, " outside [0, ",
                        shape_[axis], ")");
  }
  Layout out = *this;
  out.offset_ += begin * strides_[axis];
  out.shape_[axis] = end - begin;
  if (format_) {
    auto info = *pixel_format_info(*format_);
    const bool on_channels = axis == channel_axis(*format_, rank_);
    const bool splits_pairs = info.chroma_shift_x && axis == 1 && ((begin | end) & 1);
    if (on_channels || splits_pairs) out.format_.reset();
  }
  return out;
}

Result<Layout> Layout::flip(std::size_t axis) const {
  MEMHAL_TRY(check_not_multi_plane("flip"));
  MEMHAL_TRY(check_axis(axis, "flip"));
  Layout out = *this;
  if (shape_[axis] > 0) out.offset_ += (shape_[axis] - 1) * strides_[axis];
  out.strides_[axis] = -strides_[axis];
  // A flipped row of packed 4:2:2 pixels no longer pairs Y with its chroma; channels reversed
  // are another format.
  if (format_ && (axis == channel_axis(*format_, rank_) || (pixel_format_info(*format_)->chroma_shift_x && axis == 1)))
    out.format_.reset();
  return out;
}

Result<Layout> Layout::transpose(std::size_t a, std::size_t b) const {
  MEMHAL_TRY(check_not_multi_plane("transpose"));
  MEMHAL_TRY(check_axis(a, "transpose"));
  MEMHAL_TRY(check_axis(b, "transpose"));
  std::array<std::size_t, kMaxRank> axes{};
  std::iota(axes.begin(), axes.end(), std::size_t{0});
  std::swap(axes[a], axes[b]);
  return permute(std::span(axes.data(), rank_));
}

Result<Layout> Layout::permute(std::span<const std::size_t> axes) const {
  MEMHAL_TRY(check_not_multi_plane("permute"));
  if (axes.size() != rank_) {
    return detail::fail(ErrorCode::InvalidArgument, "permute of a rank-", int(rank_), " tensor needs ", int(rank_),
                        " axes, got ", axes.size());
  }
  std::array<bool, kMaxRank> seen{};
  Layout out = *this;
  for (std::size_t i = 0; i < rank_; ++i) {
    MEMHAL_TRY(check_axis(axes[i], "permute"));
    if (seen[axes[i]]) return detail::fail(ErrorCode::InvalidArgument, "permute names axis ", axes[i], " twice");
    seen[axes[i]] = true;
    out.shape_[i] = shape_[axes[i]];
    out.strides_[i] = strides_[axes[i]];
  }
  if (format_) {
    const std::size_t channels = channel_axis(*format_, rank_);
    const bool keeps_channels = channels == rank_ || axes[channels] == channels;
    const bool moves_packed_pairs = pixel_format_info(*format_)->chroma_shift_x && axes[1] != 1;
    if (!keeps_channels || moves_packed_pairs) out.format_.reset();
  }
  return out;
}

Result<Layout> Layout::reshape(std::span<const int64_t> shape) const {
  MEMHAL_TRY(check_not_multi_plane("reshape"));
  if (shape.size() > kMaxRank) {
    return detail::fail(ErrorCode::InvalidArgument, "reshape to rank ", shape.size(), "; at most ", kMaxRank);
  }
  std::array<int64_t, kMaxRank> target{};
  std::size_t inferred = kMaxRank;
  int64_t known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    target[i] = shape[i];
    if (shape[i] == -1 && inferred == kMaxRank) {
      inferred = i;
      continue;
    }
    if (shape[i] < 0 || mul_overflows(known, shape[i], &known)) {
      return detail::fail(ErrorCode::InvalidArgument, "reshape to ", shape_string(shape), ": bad dimension ", i);
    }
  }
  const int64_t count = element_count();
  if (inferred != kMaxRank) {
    if (known == 0 || count % known != 0) {
      return detail::fail(ErrorCode::InvalidArgument, "reshape of ", count, " elements to ", shape_string(shape),
                          ": cannot infer the -1 dimension");
    }
    target[inferred] = count / known;
    known = count;
  }
  if (known != count) {
    return detail::fail(ErrorCode::InvalidArgument, "reshape of shape ", shape_string(this->shape()), " (", count,
                        " elements) to ", shape_string(shape), " (", known, " elements)");
  }
  auto out_or = contiguous(std::span(target.data(), shape.size()), dtype_);
  if (!out_or) return out_or;
  Layout out = std::move(*out_or);
  out.offset_ = offset_;
  out.name_ = name_;
  if (count == 0) return out;

  // Walk groups of old and new dimensions with equal element products (size-1 dimensions
  // dropped). Inside a group the old dimensions must be nested (stride[i] == stride[i+1] *
  // shape[i+1]); the group's new strides then follow from its innermost old stride.
  std::array<int64_t, kMaxRank> old_shape{}, old_strides{};
  std::size_t old_rank = 0;
  for (std::size_t i = 0; i < rank_; ++i) {
    if (shape_[i] == 1) continue;
    old_shape[old_rank] = shape_[i];
    old_strides[old_rank++] = strides_[i];
  }
  std::size_t oi = 0, ni = 0;
  const std::size_t new_rank = shape.size();
  while (ni < new_rank || oi < old_rank) {
    if (ni < new_rank && target[ni] == 1) {
      out.strides_[ni] = (oi < old_rank ? old_strides[oi] * old_shape[oi] : static_cast<int64_t>(size_of(dtype_)));
      ++ni;
      continue;
    }
    const std::size_t old_begin = oi, new_begin = ni;
    int64_t old_product = old_shape[oi++];
    int64_t new_product = target[ni++];
    while (old_product != new_product) {
      if (old_product < new_product) {
        old_product *= old_shape[oi++];
      } else {
        new_product *= target[ni++];
      }
    }
    for (std::size_t k = old_begin; k + 1 < oi; ++k) {
      if (old_strides[k] != old_strides[k + 1] * old_shape[k + 1]) {
        return detail::fail(ErrorCode::InvalidArgument, "reshape of shape ", shape_string(this->shape()),
                            " with strides ", shape_string(strides()), " to ", shape_string(shape),
                            " needs a copy: materialize first");
      }
    }
    int64_t stride = old_strides[oi - 1];
    for (std::size_t k = ni; k-- > new_begin;) {
      out.strides_[k] = stride;
      stride *= target[k];
    }
  }
  return out;
}

Result<Layout> Layout::crop(int64_t x, int64_t y, int64_t width, int64_t height) const {
  if (!format_) return detail::fail(ErrorCode::InvalidArgument, "crop needs an image layout (one with a pixel format)");
  const auto info = *pixel_format_info(*format_);
  if (width < 0 || height < 0) {
    return detail::fail(ErrorCode::InvalidArgument, "crop of negative size ", width, "x", height);
  }
  const bool planar = channel_axis(*format_, rank_) == 0;
  const int64_t image_height = plane_count_ ? shape_[0] : shape_[planar ? 1 : 0];
  const int64_t image_width = plane_count_ ? shape_[1] : shape_[planar ? 2 : 1];
  if (x < 0 || y < 0 || x > image_width - width || y > image_height - height) {
    return detail::fail(ErrorCode::OutOfRange, "crop ", width, "x", height, "+", x, "+", y, " outside the ",
                        image_width, "x", image_height, " image");
  }
  const int64_t align_x = int64_t{1} << info.chroma_shift_x, align_y = int64_t{1} << info.chroma_shift_y;
  if ((x % align_x) || (width % align_x) || (y % align_y) || (height % align_y)) {
    return detail::fail(ErrorCode::InvalidArgument, "crop ", width, "x", height, "+", x, "+", y, " of ",
                        to_string(*format_), " must be aligned to its ", align_x, "x", align_y, " chroma subsampling");
  }
  if (plane_count_ == 0) {
    const std::size_t row_axis = planar ? 1 : 0;
    MEMHAL_ASSIGN_OR_RETURN(Layout rows, slice(row_axis, y, y + height));
    return rows.slice(row_axis + 1, x, x + width);
  }
  Layout out = *this;
  for (std::size_t i = 0; i < plane_count_; ++i) {
    PlaneLayout& plane = out.planes_[i];
    const int shift_x = i ? info.chroma_shift_x : 0, shift_y = i ? info.chroma_shift_y : 0;
    const int64_t bytes_per_pixel = info.plane_bytes_per_pixel[i] * static_cast<int64_t>(size_of(dtype_));
    plane.offset += (y >> shift_y) * plane.pitch + (x >> shift_x) * bytes_per_pixel;
    plane.width = width >> shift_x;
    plane.height = height >> shift_y;
    plane.row_bytes = plane.width * bytes_per_pixel;
  }
  out.shape_[0] = height;
  out.shape_[1] = width;
  out.offset_ = out.planes_[0].offset;
  return out;
}

Result<Layout> Layout::with_pixel_format(PixelFormat format) const {
  auto info = pixel_format_info(format);
  if (!info)
    return detail::fail(ErrorCode::InvalidArgument, "pixel format code ", code(format), " is not a PixelFormat");
  MEMHAL_TRY(check_not_multi_plane("with_pixel_format"));
  if (info->yuv && info->planes > 1) {
    return detail::fail(ErrorCode::InvalidArgument, to_string(format),
                        " has several planes: describe it with Layout::image_planes");
  }
  const bool planar = channel_axis(format, 3) == 0;
  const int64_t components = planar ? info->planes : info->plane_bytes_per_pixel[0];
  const bool shaped = rank_ == 3 && shape_[planar ? 0 : 2] == components &&
                      (planar || strides_[2] == static_cast<int64_t>(size_of(dtype_)));
  const bool paired = !info->chroma_shift_x || (shape_[1] % 2 == 0);
  if (!shaped || !paired) {
    return detail::fail(ErrorCode::InvalidArgument, "shape ", shape_string(shape()), " with strides ",
                        shape_string(strides()), " is not a ", to_string(format), " image (",
                        planar ? "{c, h, w}" : "{h, w, c} with adjacent components", ")");
  }
  Layout out = *this;
  out.format_ = format;
  return out;
}

Layout Layout::dense() const {
  if (plane_count_ > 0) {
    Layout out = *this;
    int64_t end = 0;
    for (std::size_t i = 0; i < plane_count_; ++i) {
      out.planes_[i].buffer = 0;
      out.planes_[i].offset = end;
      out.planes_[i].pitch = out.planes_[i].row_bytes;
      end += out.planes_[i].row_bytes * out.planes_[i].height;
    }
    out.strides_[0] = out.planes_[0].pitch;
    out.offset_ = 0;
    return out;
  }
  Layout out = *contiguous(shape(), dtype_);
  out.format_ = format_;
  out.name_ = name_;
  return out;
}

bool operator==(const Layout& a, const Layout& b) noexcept {
  if (a.dtype_ != b.dtype_ || a.rank_ != b.rank_ || a.offset_ != b.offset_ || a.format_ != b.format_ ||
      a.plane_count_ != b.plane_count_ || a.name_ != b.name_)
    return false;
  for (std::size_t i = 0; i < a.rank_; ++i) {
    if (a.shape_[i] != b.shape_[i] || a.strides_[i] != b.strides_[i]) return false;
  }
  for (std::size_t i = 0; i < a.plane_count_; ++i) {
    const auto &p = a.planes_[i], &q = b.planes_[i];
    if (p.buffer != q.buffer || p.offset != q.offset || p.pitch != q.pitch || p.width != q.width ||
        p.height != q.height || p.row_bytes != q.row_bytes)
      return false;
  }
  return true;
}

}  // namespace memhal
