/// @file
/// `TensorView`: how a `SystemView` reads its shared bytes — dtype, rank (at most
/// `kMaxViewRank`), shape, signed byte strides and a byte offset.
///
/// A value type. Every factory and transform validates its arguments and checks sizes for
/// overflow, so a `TensorView` that exists is well formed (it does not know its bytes:
/// `SystemView` checks that the view fits them). Transforms compute a new view of the same
/// bytes and copy nothing: `flip` negates a stride, `transpose` swaps two axes, `crop` narrows
/// each axis. Conventions follow `Layout`: strides in bytes, may be negative; a new view is
/// dense row-major; `is_contiguous()` means dense row-major with no gaps (the strides of
/// size-1 dimensions do not matter); a zero-sized dimension gives an empty view.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/layout.hpp>
#include <memhal/vocabulary.hpp>
#include <span>

namespace memhal {

inline constexpr std::size_t kMaxViewRank = 6;  ///< highest rank of a `TensorView`

class MEMHAL_EXPORT TensorView {
 public:
  /// A dense row-major view at offset 0. `InvalidArgument` for a rank above `kMaxViewRank`,
  /// a negative dimension, a dtype outside the vocabulary, or a byte size that overflows.
  static Result<TensorView> contiguous(std::span<const int64_t> shape, DType dtype);
  static Result<TensorView> contiguous(std::initializer_list<int64_t> shape, DType dtype) {
    return contiguous(std::span<const int64_t>(shape.begin(), shape.size()), dtype);
  }
  /// A view with the given byte strides and offset. Validated as `contiguous`, plus: shape and
  /// strides of equal rank, and no element before byte 0.
  static Result<TensorView> strided(std::span<const int64_t> shape, std::span<const int64_t> strides, int64_t offset,
                                    DType dtype);

  DType dtype() const noexcept { return dtype_; }
  std::size_t rank() const noexcept { return rank_; }
  std::span<const int64_t> shape() const noexcept { return {shape_.data(), rank_}; }
  std::span<const int64_t> strides() const noexcept { return {strides_.data(), rank_}; }
  /// Byte offset of element 0 from the start of the bytes.
  int64_t offset() const noexcept { return offset_; }
  std::size_t element_size() const noexcept { return size_of(dtype_); }
  int64_t element_count() const noexcept;
  /// Bytes of the elements themselves (no gaps).
  int64_t nbytes() const noexcept { return element_count() * static_cast<int64_t>(element_size()); }
  bool is_contiguous() const noexcept;
  bool empty() const noexcept { return element_count() == 0; }
  /// The bytes `[begin, end)` the view touches (both 0 for an empty view).
  ByteExtent byte_extent() const noexcept;

  /// Reverses `axis`. `OutOfRange` for an axis beyond the rank.
  Result<TensorView> flip(std::size_t axis) const;
  /// Swaps axes `a` and `b`. `OutOfRange` for an axis beyond the rank.
  Result<TensorView> transpose(std::size_t a, std::size_t b) const;
  /// Elements `[begins[i], begins[i] + sizes[i])` of every axis `i`. `InvalidArgument` when
  /// the spans' lengths differ from the rank, `OutOfRange` for a range outside an axis (never
  /// clamped).
  Result<TensorView> crop(std::span<const int64_t> begins, std::span<const int64_t> sizes) const;

  /// The same shape and dtype, dense row-major at offset 0.
  TensorView dense() const noexcept;

  friend MEMHAL_EXPORT bool operator==(const TensorView& a, const TensorView& b) noexcept;

 private:
  TensorView() = default;
  Result<void> check_axis(std::size_t axis, const char* operation) const;

  DType dtype_ = DType::U8;
  uint8_t rank_ = 0;
  std::array<int64_t, kMaxViewRank> shape_{};
  std::array<int64_t, kMaxViewRank> strides_{};
  int64_t offset_ = 0;
};

}  // namespace memhal
