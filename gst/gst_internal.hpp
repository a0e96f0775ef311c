// Shared between the bridge and the plugin's elements; not installed.
#pragma once

#include <gst/gst.h>

#include <array>
#include <memhal/layout.hpp>
#include <memhal/tensor.hpp>
#include <memhal/tensor_map.hpp>
#include <vector>

namespace memhal::gst_detail {

/// The quark of a `Tensor*` carried as qdata (destroyed with its object).
GQuark tensor_quark();
/// The tensor `buffer` (or its first memory) carries: a memhal pool's lease, the tensor of
/// `gst_buffer_from_tensor`; nullptr when none.
const Tensor* carried_tensor(GstBuffer* buffer);
/// Carries a copy of `tensor` on `object` until the object is finalized.
void attach_tensor(GstMiniObject* object, const Tensor& tensor);
/// Every plane of an image layout with buffer, offset, pitch, width, height and row bytes
/// (interleaved and planar-RGB layouts too, which have no `Layout::planes()`).
std::vector<PlaneLayout> planes_of(const Layout& layout);
/// Where buffer 0 of a single-buffer map begins (plane and layout offsets count from there).
inline const std::byte* buffer_base(const TensorMap& map, const Layout& layout) {
  return layout.is_multi_plane() ? map.const_plane(0) - layout.planes()[0].offset : map.const_data() - layout.offset();
}

}  // namespace memhal::gst_detail
