// MemhalPool: each buffer handed out is a lease on a memhal TensorPool slot (DmaBuf where a
// heap exists, else Shm) over a GstFdMemory made once per slot. The lease rides on the
// GstBuffer as qdata; a GstBuffer coming back to the pool is freed, not queued, so the slot
// is handed out again only when every holder is done with it — GStreamer elements and, through
// memhalsink's Channel shares, other processes.
#include "memhal_pool.hpp"

#include <gst/video/video.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <memhal/gst.hpp>
#include <memhal/tensor_pool.hpp>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

GST_DEBUG_CATEGORY_STATIC(memhal_pool_debug);
#define GST_CAT_DEFAULT memhal_pool_debug

namespace {
struct PoolState {
  std::mutex mutex;
  std::optional<memhal::TensorPool> tensors;
  memhal::GstMemoryCache memories;
  guint default_count = 8;
  bool video_meta = true;  // buffers carry a GstVideoMeta (video/x-raw caps)
};
}  // namespace

namespace memhal::gst_plugin {
namespace {
template <class... Args>
Unexpected fail(Args&&... args) {
  std::ostringstream out;
  (out << ... << args);
  return unexpected(Error(ErrorCode::InvalidArgument, out.str()));
}

std::string caps_text(GstCaps* caps) {
  gchar* text = gst_caps_to_string(caps);
  std::string result = text != nullptr ? text : "(null)";
  g_free(text);
  return result;
}

struct TensorType {
  const char* name;
  DType dtype;
};
constexpr TensorType kTensorTypes[] = {
    {"float32", DType::F32}, {"uint8", DType::U8}, {"int8", DType::I8}, {"float16", DType::F16}};
}  // namespace

Result<TensorCaps> tensor_caps_from(const GstStructure* s) {
  const gchar* format = gst_structure_get_string(s, "format");
  if (format == nullptr || std::string_view(format) != "static") {
    return fail("other/tensors caps need format=static (got ", format != nullptr ? format : "none", ")");
  }
  gint count = 0;
  if (!gst_structure_get_int(s, "num_tensors", &count) || count != 1) {
    return fail("other/tensors caps need num_tensors=1 (memhalconvert writes one tensor)");
  }
  TensorCaps caps;
  const gchar* type = gst_structure_get_string(s, "types");
  bool known = false;
  for (const auto& t : kTensorTypes) {
    if (type != nullptr && std::string_view(type) == t.name) {
      caps.dtype = t.dtype;
      known = true;
    }
  }
  if (!known) {
    return fail("other/tensors types=", type != nullptr ? type : "(not fixed)", " is not one memhal writes (",
                MEMHAL_GST_TENSOR_TYPES, ")");
  }
  const gchar* dimensions = gst_structure_get_string(s, "dimensions");
  if (dimensions == nullptr) return fail("other/tensors caps without fixed dimensions (W:H:3:1 or 3:W:H:1)");
  std::vector<int64_t> dims;
  std::istringstream in(dimensions);
  for (std::string part; std::getline(in, part, ':');) {
    char* end = nullptr;
    const long long value = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || value < 1 || value > 16384) {
      return fail("other/tensors dimensions=", dimensions, ": '", part, "' is not a size of 1..16384");
    }
    dims.push_back(value);
  }
  while (dims.size() < 4) dims.push_back(1);
  if (dims.size() != 4 || dims[3] != 1) {
    return fail("other/tensors dimensions=", dimensions, ": memhalconvert writes one image, W:H:3:1 or 3:W:H:1");
  }
  if (dims[2] == 3) {
    caps = TensorCaps{dims[0], dims[1], true, caps.dtype};
  } else if (dims[0] == 3) {
    caps = TensorCaps{dims[1], dims[2], false, caps.dtype};
  } else {
    return fail("other/tensors dimensions=", dimensions,
                ": memhalconvert writes 3 channels, W:H:3:1 (planar, NCHW) or 3:W:H:1 (interleaved, NHWC)");
  }
  return caps;
}

std::string tensor_dimensions(const TensorCaps& caps) {
  std::ostringstream out;
  if (caps.planar) {
    out << caps.width << ':' << caps.height << ":3:1";
  } else {
    out << "3:" << caps.width << ':' << caps.height << ":1";
  }
  return out.str();
}

Result<Layout> layout_for_caps(GstCaps* caps, bool video_meta) {
  if (caps == nullptr || gst_caps_get_size(caps) != 1 || !gst_caps_is_fixed(caps)) {
    return fail("caps ", caps != nullptr ? caps_text(caps) : "(none)", " are not fixed");
  }
  const GstStructure* s = gst_caps_get_structure(caps, 0);
  if (gst_structure_has_name(s, "other/tensors")) {
    auto tensor = tensor_caps_from(s);
    if (!tensor) return fail(tensor.error().message(), " (caps ", caps_text(caps), ")");
    return Layout::image(tensor->width, tensor->height, tensor->planar ? PixelFormat::PlanarRgb : PixelFormat::Rgb,
                         tensor->dtype, 1);
  }
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps)) return fail("caps ", caps_text(caps), " are not raw video");
  MEMHAL_ASSIGN_OR_RETURN(const PixelFormat format, pixel_format_from_gst(GST_VIDEO_INFO_FORMAT(&info)));
  if (video_meta) return Layout::image(GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info), format);
  std::array<PlaneLayout, kMaxPlanes> planes{};
  const guint count = GST_VIDEO_INFO_N_PLANES(&info);
  for (guint i = 0; i < count && i < kMaxPlanes; ++i) {
    planes[i] = PlaneLayout{0, static_cast<int64_t>(GST_VIDEO_INFO_PLANE_OFFSET(&info, i)),
                            GST_VIDEO_INFO_PLANE_STRIDE(&info, i)};
  }
  return Layout::image_planes(GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info), format,
                              std::span(planes.data(), std::min<std::size_t>(count, kMaxPlanes)));
}

}  // namespace memhal::gst_plugin

struct _MemhalPool {
  GstBufferPool parent;
  PoolState* state;
};

G_DEFINE_TYPE(MemhalPool, memhal_pool, GST_TYPE_BUFFER_POOL)

static const gchar** memhal_pool_get_options(GstBufferPool*) {
  static const gchar* options[] = {GST_BUFFER_POOL_OPTION_VIDEO_META, nullptr};
  return options;
}

static gboolean memhal_pool_set_config(GstBufferPool* pool, GstStructure* config) {
  auto* self = MEMHAL_POOL(pool);
  GstCaps* caps = nullptr;
  guint size = 0;
  guint min = 0;
  guint max = 0;
  if (!gst_buffer_pool_config_get_params(config, &caps, &size, &min, &max) || caps == nullptr) {
    GST_WARNING_OBJECT(pool, "configuration without caps");
    return FALSE;
  }
  const bool video_meta = gst_structure_has_name(gst_caps_get_structure(caps, 0), "video/x-raw");
  auto layout = memhal::gst_plugin::layout_for_caps(
      caps, video_meta && gst_buffer_pool_config_has_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META));
  if (!layout) {
    GST_WARNING_OBJECT(pool, "%s", layout.error().message().c_str());
    return FALSE;
  }
  const guint count = max != 0 ? max : std::max(self->state->default_count, min);
  auto tensors = memhal::TensorPool::create(*layout, count, memhal::MemoryKind::DmaBuf);
  if (!tensors) tensors = memhal::TensorPool::create(*layout, count, memhal::MemoryKind::Shm);
  if (!tensors) {
    GST_ERROR_OBJECT(pool, "%s", tensors.error().message().c_str());
    return FALSE;
  }
  GST_INFO_OBJECT(pool, "%u %s buffers of %" G_GINT64_FORMAT " bytes for %" GST_PTR_FORMAT, count,
                  tensors->memory() == memhal::MemoryKind::DmaBuf ? "dmabuf" : "shm", layout->byte_extent().end,
                  static_cast<void*>(caps));
  {
    const std::lock_guard lock(self->state->mutex);
    self->state->memories.clear();
    self->state->tensors = std::move(*tensors);
    self->state->video_meta = video_meta;
  }
  gst_buffer_pool_config_set_params(config, caps, static_cast<guint>(layout->byte_extent().end), 0, count);
  return GST_BUFFER_POOL_CLASS(memhal_pool_parent_class)->set_config(pool, config);
}

// Buffers are made on demand, not preallocated and queued.
static gboolean memhal_pool_start(GstBufferPool*) {
  return TRUE;
}
static gboolean memhal_pool_stop(GstBufferPool* pool) {
  const std::lock_guard lock(MEMHAL_POOL(pool)->state->mutex);
  MEMHAL_POOL(pool)->state->memories.clear();
  return TRUE;
}

static GstFlowReturn memhal_pool_acquire_buffer(GstBufferPool* pool, GstBuffer** buffer,
                                                GstBufferPoolAcquireParams* params) {
  auto* state = MEMHAL_POOL(pool)->state;
  const bool dont_wait = params != nullptr && (params->flags & GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT) != 0;
  for (;;) {
    memhal::Result<memhal::Tensor> lease = memhal::unexpected(memhal::Error(memhal::ErrorCode::Busy, "not configured"));
    {
      const std::lock_guard lock(state->mutex);
      if (!state->tensors) return GST_FLOW_ERROR;
      lease = dont_wait ? state->tensors->try_acquire() : state->tensors->acquire(std::chrono::milliseconds(20));
    }
    if (lease) {
      const std::lock_guard lock(state->mutex);
      auto made = state->memories.buffer_from_tensor(*lease, true, state->video_meta);
      if (!made) {
        GST_ERROR_OBJECT(pool, "%s", made.error().message().c_str());
        return GST_FLOW_ERROR;
      }
      *buffer = *made;
      return GST_FLOW_OK;
    }
    if (lease.error().code() != memhal::ErrorCode::Busy) {
      GST_ERROR_OBJECT(pool, "%s", lease.error().message().c_str());
      return GST_FLOW_ERROR;
    }
    if (dont_wait) return GST_FLOW_EOS;
    if (GST_BUFFER_POOL_IS_FLUSHING(pool)) return GST_FLOW_FLUSHING;
    // Every slot is held (by GStreamer or by a consumer process): go on waiting for a release.
  }
}

static void memhal_pool_release_buffer(GstBufferPool*, GstBuffer* buffer) {
  // Not queued: freeing it drops its lease, and the slot comes back once nobody holds it.
  gst_buffer_unref(buffer);
}

static void memhal_pool_finalize(GObject* object) {
  delete MEMHAL_POOL(object)->state;
  G_OBJECT_CLASS(memhal_pool_parent_class)->finalize(object);
}

static void memhal_pool_class_init(MemhalPoolClass* klass) {
  G_OBJECT_CLASS(klass)->finalize = memhal_pool_finalize;
  auto* pool = GST_BUFFER_POOL_CLASS(klass);
  pool->get_options = memhal_pool_get_options;
  pool->set_config = memhal_pool_set_config;
  pool->start = memhal_pool_start;
  pool->stop = memhal_pool_stop;
  pool->acquire_buffer = memhal_pool_acquire_buffer;
  pool->release_buffer = memhal_pool_release_buffer;
  GST_DEBUG_CATEGORY_INIT(memhal_pool_debug, "memhalpool", 0, "memhal buffer pool");
}

static void memhal_pool_init(MemhalPool* self) {
  self->state = new PoolState();
}

GstBufferPool* memhal_pool_new(guint default_count) {
  auto* pool = MEMHAL_POOL(g_object_new(MEMHAL_TYPE_POOL, nullptr));
  gst_object_ref_sink(pool);
  pool->state->default_count = default_count;
  return GST_BUFFER_POOL(pool);
}
