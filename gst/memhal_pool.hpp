// MemhalPool: a GstBufferPool whose buffers are memhal TensorPool slots (see memhal_pool.cpp),
// and the layouts it gives `video/x-raw` and `other/tensors` caps.
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <memhal/error.hpp>
#include <memhal/layout.hpp>
#include <string>

G_BEGIN_DECLS
#define MEMHAL_TYPE_POOL (memhal_pool_get_type())
G_DECLARE_FINAL_TYPE(MemhalPool, memhal_pool, MEMHAL, POOL, GstBufferPool)
/// A new pool (configure it with caps, size and max buffers; max 0 takes `default_count`).
GstBufferPool* memhal_pool_new(guint default_count);
G_END_DECLS

namespace memhal::gst_plugin {

/// The NNStreamer caps convention for one model-input tensor: `other/tensors, format=static,
/// num_tensors=1, types=T, dimensions=W:H:3:1` (innermost first: planar, NCHW) or `3:W:H:1`
/// (interleaved, NHWC); trailing 1s may be left out.
struct TensorCaps {
  int64_t width = 0;
  int64_t height = 0;
  bool planar = true;
  DType dtype = DType::F32;
};
/// The NNStreamer type names memhalconvert writes, as a caps list.
#define MEMHAL_GST_TENSOR_TYPES "{ float32, uint8, int8, float16 }"
/// Reads fixed `other/tensors` caps. `InvalidArgument` naming the field that is missing, not
/// fixed or not one memhal writes.
Result<TensorCaps> tensor_caps_from(const GstStructure* structure);
/// The caps string of `caps`'s type (for `dimensions` fixation).
std::string tensor_dimensions(const TensorCaps& caps);
/// The memhal layout of a buffer of fixed `caps`: `video/x-raw` with GStreamer's default
/// strides and offsets (what elements without GstVideoMeta expect), or memhal's aligned image
/// layout when `video_meta` (the consumer reads the GstVideoMeta); `other/tensors` a dense
/// planar or interleaved RGB image of the tensor's dtype. Errors name the caps.
Result<Layout> layout_for_caps(GstCaps* caps, bool video_meta);

}  // namespace memhal::gst_plugin
