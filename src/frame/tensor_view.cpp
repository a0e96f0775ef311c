#include <memhal/tensor_view.hpp>

#include <algorithm>

#include "core/strings.hpp"

namespace memhal {
namespace {

Result<void> check_rank(std::size_t rank) {
  if (rank > kMaxViewRank) {
    return detail::fail(ErrorCode::InvalidArgument, "a system view has at most ", kMaxViewRank, " dimensions; rank ",
                        rank, " was asked for");
  }
  return {};
}

}  // namespace

Result<TensorView> TensorView::contiguous(std::span<const int64_t> shape, DType dtype) {
  MEMHAL_TRY(check_rank(shape.size()));
  // Layout owns the shape and overflow rules; a view follows the same ones.
  MEMHAL_ASSIGN_OR_RETURN(const Layout layout, Layout::contiguous(shape, dtype));
  return strided(layout.shape(), layout.strides(), 0, dtype);
}

Result<TensorView> TensorView::strided(std::span<const int64_t> shape, std::span<const int64_t> strides, int64_t offset,
                                       DType dtype) {
  MEMHAL_TRY(check_rank(shape.size()));
  MEMHAL_TRY(Layout::strided(shape, strides, offset, dtype));
  TensorView view;
  view.dtype_ = dtype;
  view.rank_ = static_cast<uint8_t>(shape.size());
  std::copy(shape.begin(), shape.end(), view.shape_.begin());
  std::copy(strides.begin(), strides.end(), view.strides_.begin());
  view.offset_ = offset;
  return view;
}

int64_t TensorView::element_count() const noexcept {
  int64_t count = 1;
  for (std::size_t i = 0; i < rank_; ++i) count *= shape_[i];
  return count;
}

bool TensorView::is_contiguous() const noexcept {
  if (empty()) return true;
  int64_t expected = static_cast<int64_t>(element_size());
  for (std::size_t i = rank_; i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

ByteExtent TensorView::byte_extent() const noexcept {
  if (empty()) return {};
  ByteExtent extent{offset_, offset_};
  for (std::size_t i = 0; i < rank_; ++i) {
    const int64_t reach = (shape_[i] - 1) * strides_[i];
    (reach < 0 ? extent.begin : extent.end) += reach;
  }
  extent.end += static_cast<int64_t>(element_size());
  return extent;
}

Result<void> TensorView::check_axis(std::size_t axis, const char* operation) const {
  if (axis >= rank_) {
    return detail::fail(ErrorCode::OutOfRange, operation, " of axis ", axis, " of a rank-", int(rank_), " view");
  }
  return {};
}

Result<TensorView> TensorView::flip(std::size_t axis) const {
  MEMHAL_TRY(check_axis(axis, "flip"));
  TensorView out = *this;
  if (shape_[axis] > 0) out.offset_ += (shape_[axis] - 1) * strides_[axis];
  out.strides_[axis] = -strides_[axis];
  return out;
}

Result<TensorView> TensorView::transpose(std::size_t a, std::size_t b) const {
  MEMHAL_TRY(check_axis(a, "transpose"));
  MEMHAL_TRY(check_axis(b, "transpose"));
  TensorView out = *this;
  std::swap(out.shape_[a], out.shape_[b]);
  std::swap(out.strides_[a], out.strides_[b]);
  return out;
}

Result<TensorView> TensorView::crop(std::span<const int64_t> begins, std::span<const int64_t> sizes) const {
  if (begins.size() != rank_ || sizes.size() != rank_) {
    return detail::fail(ErrorCode::InvalidArgument, "crop of a rank-", int(rank_), " view needs ", int(rank_),
                        " begins and sizes, got ", begins.size(), " and ", sizes.size());
  }
  TensorView out = *this;
  for (std::size_t i = 0; i < rank_; ++i) {
    // Written so that no sum can overflow: begin and size are each checked against the axis.
    if (begins[i] < 0 || sizes[i] < 0 || begins[i] > shape_[i] || sizes[i] > shape_[i] - begins[i]) {
      return detail::fail(ErrorCode::OutOfRange, "crop of elements [", begins[i], ", ", begins[i], " + ", sizes[i],
                          ") of axis ", i, ", which has ", shape_[i]);
    }
    if (sizes[i] > 0) out.offset_ += begins[i] * strides_[i];
    out.shape_[i] = sizes[i];
  }
  return out;
}

TensorView TensorView::dense() const noexcept {
  TensorView out = *this;
  int64_t stride = static_cast<int64_t>(element_size());
  for (std::size_t i = rank_; i-- > 0;) {
    out.strides_[i] = stride;
    stride *= std::max<int64_t>(shape_[i], 1);
  }
  out.offset_ = 0;
  return out;
}

bool operator==(const TensorView& a, const TensorView& b) noexcept {
  return a.dtype_ == b.dtype_ && a.offset_ == b.offset_ && std::ranges::equal(a.shape(), b.shape()) &&
         std::ranges::equal(a.strides(), b.strides());
}

}  // namespace memhal
