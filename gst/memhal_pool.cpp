// MemhalPool: each buffer handed out is a lease on a memhal TensorPool slot (DmaBuf where a
// heap exists, else Shm) over a GstFdMemory made once per slot. The lease rides on the
// GstBuffer as qdata; a GstBuffer coming back to the pool is freed, not queued, so the slot
// is handed out again only when every holder is done with it — GStreamer elements and, through
// memhalsink's Channel shares, other processes.
#include "memhal_pool.hpp"

#include <gst/video/video.h>

#include <algorithm>
#include <chrono>
#include <memhal/gst.hpp>
#include <memhal/tensor_pool.hpp>
#include <mutex>
#include <optional>

GST_DEBUG_CATEGORY_STATIC(memhal_pool_debug);
#define GST_CAT_DEFAULT memhal_pool_debug

namespace {
struct PoolState {
  std::mutex mutex;
  std::optional<memhal::TensorPool> tensors;
  memhal::GstMemoryCache memories;
  guint default_count = 8;
};
}  // namespace

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
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps)) {
    GST_WARNING_OBJECT(pool, "caps %" GST_PTR_FORMAT " are not raw video", static_cast<void*>(caps));
    return FALSE;
  }
  auto format = memhal::pixel_format_from_gst(GST_VIDEO_INFO_FORMAT(&info));
  if (!format) {
    GST_WARNING_OBJECT(pool, "%s", format.error().message().c_str());
    return FALSE;
  }
  auto layout = memhal::Layout::image(GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info), *format);
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
      auto made = state->memories.buffer_from_tensor(*lease, true);
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
