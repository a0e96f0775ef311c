#include <memhal/system_view.hpp>

#include "core/strings.hpp"
#include "tensor/strided_copy.hpp"

namespace memhal {
namespace {

Result<void> check_rotatable(const TensorView& view) {
  if (view.rank() < 2) {
    return detail::fail(ErrorCode::InvalidArgument, "rotation of a rank-", view.rank(),
                        " view: it needs rows and columns (rank 2 or more)");
  }
  return {};
}

}  // namespace

Result<SystemView> SystemView::create(SharedBytes bytes, TensorView view) {
  const ByteExtent extent = view.byte_extent();
  if (!view.empty() && (extent.begin < 0 || extent.end > static_cast<int64_t>(bytes.size()))) {
    return detail::fail(ErrorCode::OutOfRange, "system view needs bytes [", extent.begin, ", ", extent.end, ") of a ",
                        bytes.size(), "-byte buffer");
  }
  return SystemView(std::move(bytes), view);
}

Result<SystemView> SystemView::with(Result<TensorView> view) const {
  if (!view.has_value()) return unexpected(std::move(view).error());
  // A transform of a view that fits stays inside the same extent, so no new check is needed.
  return SystemView(bytes_, *view);
}

Result<SystemView> SystemView::flip(std::size_t axis) const {
  return with(view_.flip(axis));
}

Result<SystemView> SystemView::transpose(std::size_t a, std::size_t b) const {
  return with(view_.transpose(a, b));
}

Result<SystemView> SystemView::crop(std::span<const int64_t> begins, std::span<const int64_t> sizes) const {
  return with(view_.crop(begins, sizes));
}

Result<SystemView> SystemView::rotate90() const {
  MEMHAL_TRY(check_rotatable(view_));
  // out[r][c] = in[h - 1 - c][r]: rows become columns, read bottom-up.
  MEMHAL_ASSIGN_OR_RETURN(const SystemView turned, transpose(0, 1));
  return turned.flip(1);
}

Result<SystemView> SystemView::rotate180() const {
  MEMHAL_TRY(check_rotatable(view_));
  MEMHAL_ASSIGN_OR_RETURN(const SystemView upside_down, flip(0));
  return upside_down.flip(1);
}

Result<SystemView> SystemView::rotate270() const {
  MEMHAL_TRY(check_rotatable(view_));
  // out[r][c] = in[c][w - 1 - r]: columns become rows, read right to left.
  MEMHAL_ASSIGN_OR_RETURN(const SystemView turned, transpose(0, 1));
  return turned.flip(0);
}

Result<SystemView> SystemView::materialize() const {
  const TensorView dense = view_.dense();
  MEMHAL_ASSIGN_OR_RETURN(SharedBytes copy,
                          SharedBytes::allocate_for_overwrite(static_cast<std::size_t>(dense.nbytes())));
  if (!view_.empty()) {
    detail::copy_strided(element0(), view_.strides(), copy.mutable_data(), dense.strides(), view_.shape(),
                         view_.element_size());
  }
  return SystemView(std::move(copy), dense);
}

Result<SharedBytes> SystemView::packed_bytes() const {
  if (view_.is_contiguous()) {
    return bytes_.subrange(static_cast<std::size_t>(view_.empty() ? 0 : view_.offset()),
                           static_cast<std::size_t>(view_.nbytes()));
  }
  MEMHAL_ASSIGN_OR_RETURN(const SystemView dense, materialize());
  return dense.bytes_;
}

}  // namespace memhal
