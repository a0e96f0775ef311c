/// @file
/// `SystemView`: the `MemoryDomainKind::SystemView` payload — shared CPU bytes read through a
/// `TensorView`.
///
/// The zero-copy way to hand a flipped, transposed, rotated or cropped frame down a pipeline:
/// every transform composes strides over the same bytes (the result shares them, `data()` of
/// the bytes unchanged), and `materialize()` makes the one dense copy a consumer that needs
/// packed bytes pays. Rotations act on the first two axes (rows, columns: an `{h, w, c}` image)
/// and are compositions of `transpose` and `flip`. A view that `MemoryDomain::from_tensor` made
/// from a strided tensor remembers that tensor (storage and whole `Layout`) for `to_tensor()`;
/// its shares do too, a transformed or materialised view does not.
///
/// Thread-safety: a value (one thread at a time); views sharing bytes may be used and dropped
/// on different threads at once. The bytes are never written through a view.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/shared_bytes.hpp>
#include <memhal/tensor_view.hpp>
#include <memhal/vocabulary.hpp>
#include <memory>
#include <span>

namespace memhal {

class MemoryDomain;
class Tensor;

class MEMHAL_EXPORT SystemView {
 public:
  static constexpr MemoryDomainKind kKind = MemoryDomainKind::SystemView;

  /// A view of `bytes` through `view`. `OutOfRange` when the view reaches outside the bytes.
  static Result<SystemView> create(SharedBytes bytes, TensorView view);

  const SharedBytes& bytes() const noexcept { return bytes_; }
  const TensorView& view() const noexcept { return view_; }
  /// Element 0 (null for an empty view); step through the others with `view().strides()`.
  const std::byte* element0() const noexcept { return bytes_.data() + view_.offset(); }
  bool is_contiguous() const noexcept { return view_.is_contiguous(); }

  /// Zero-copy transforms; errors as the `TensorView` functions of the same name.
  Result<SystemView> flip(std::size_t axis) const;
  Result<SystemView> transpose(std::size_t a, std::size_t b) const;
  Result<SystemView> crop(std::span<const int64_t> begins, std::span<const int64_t> sizes) const;
  Result<SystemView> crop(std::initializer_list<int64_t> begins, std::initializer_list<int64_t> sizes) const {
    return crop(std::span<const int64_t>(begins.begin(), begins.size()),
                std::span<const int64_t>(sizes.begin(), sizes.size()));
  }
  /// Clockwise rotations of axes 0 (rows) and 1 (columns). `InvalidArgument` below rank 2.
  Result<SystemView> rotate90() const;
  Result<SystemView> rotate180() const;
  Result<SystemView> rotate270() const;

  /// A new dense row-major copy of the elements in new owned bytes. `OutOfMemory` on failure.
  Result<SystemView> materialize() const;
  /// The elements as packed row-major bytes: this view's own bytes (a count bump) when it is
  /// contiguous, else a materialised copy. `OutOfMemory` on failure.
  Result<SharedBytes> packed_bytes() const;

  /// Another view of the same bytes (a count bump; never a copy).
  SystemView share() const noexcept { return *this; }

 private:
  SystemView(SharedBytes bytes, TensorView view) noexcept : bytes_(std::move(bytes)), view_(view) {}
  Result<SystemView> with(Result<TensorView> view) const;

  friend class MemoryDomain;  // sets and reads source_
  SharedBytes bytes_;
  TensorView view_;
  std::shared_ptr<const Tensor> source_;  ///< the tensor this view is, when made from one
};

}  // namespace memhal
