// Private access to Tensor internals for the layers that build tensors from storage.
#pragma once

#include <memhal/tensor.hpp>

#include "storage/storage.hpp"

namespace memhal::detail {

struct TensorAccess {
  using Buffers = Tensor::Buffers;

  /// A tensor over `buffers`; the caller has checked that `layout` fits inside them.
  static Tensor make(Layout layout, Buffers buffers) { return Tensor(std::move(layout), std::move(buffers)); }
  static const Buffers& buffers(const Tensor& tensor) { return tensor.buffers_; }
};

/// Checks that every buffer `layout` names exists and is long enough for it.
Result<void> check_layout_fits(const Layout& layout, const TensorAccess::Buffers& buffers);

}  // namespace memhal::detail
