// memhalsink: serves every buffer to the memhal programs and memhalsrc elements connected to
// `socket` (an ipc::Listener; each consumer its own Channel). Buffers from the pool it proposes
// upstream, and fd-backed buffers from elsewhere, cross without a copy; anything else is copied
// into a memhal Shm pool, counted (`copies`) and logged at GST_PERFORMANCE.
#include <gst/base/gstbasesink.h>
#include <gst/video/video.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memhal/channel.hpp>
#include <memhal/frame.hpp>
#include <memhal/gst.hpp>
#include <memhal/memory_domain.hpp>
#include <memhal/tensor_pool.hpp>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "elements.hpp"
#include "memhal_pool.hpp"

GST_DEBUG_CATEGORY_STATIC(memhal_sink_debug);
#define GST_CAT_DEFAULT memhal_sink_debug
GST_DEBUG_CATEGORY_EXTERN(GST_CAT_PERFORMANCE);

namespace {

constexpr guint kDefaultPoolSize = 8;

struct SinkState {
  std::string socket;
  guint pool_size = kDefaultPoolSize;
  guint wait_consumers = 0;
  std::atomic<guint64> copies{0};
  std::atomic<guint64> frames{0};
  GstVideoInfo info{};
  std::optional<memhal::TensorPool> copy_pool;  // for buffers that are not fd-backed
  uint64_t sequence = 0;

  std::optional<memhal::ipc::Listener> listener;
  std::thread acceptor;
  std::atomic<bool> running{false};
  std::mutex mutex;  // guards consumers and unlocked
  std::condition_variable changed;
  std::vector<memhal::ipc::Channel> consumers;
  bool unlocked = false;
  bool started = false;  // wait-consumers was met once: from then on, serve whoever is there
};

enum { PROP_0, PROP_SOCKET, PROP_POOL_SIZE, PROP_WAIT_CONSUMERS, PROP_COPIES, PROP_FRAMES, PROP_CONSUMERS };

}  // namespace

struct _MemhalSink {
  GstBaseSink parent;
  SinkState* state;
};

G_DEFINE_TYPE(MemhalSink, memhal_sink, GST_TYPE_BASE_SINK)

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(MEMHAL_GST_VIDEO_FORMATS)));

static void accept_loop(MemhalSink* self) {
  auto* state = self->state;
  while (state->running.load()) {
    auto channel = state->listener->accept(std::chrono::milliseconds(50));
    if (!channel) {
      if (channel.error().code() != memhal::ErrorCode::Busy) {
        GST_WARNING_OBJECT(self, "accept on %s: %s", state->socket.c_str(), channel.error().message().c_str());
      }
      continue;
    }
    const std::lock_guard lock(state->mutex);
    state->consumers.push_back(std::move(*channel));
    GST_INFO_OBJECT(self, "consumer %zu connected to %s", state->consumers.size(), state->socket.c_str());
    state->changed.notify_all();
  }
}

static gboolean memhal_sink_start(GstBaseSink* sink) {
  auto* self = MEMHAL_SINK(sink);
  auto* state = self->state;
  if (state->socket.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("memhalsink needs a socket path (socket=PATH)"), (nullptr));
    return FALSE;
  }
  auto listener = memhal::ipc::Listener::bind(state->socket);
  if (!listener) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE, ("memhalsink cannot listen on %s", state->socket.c_str()),
                      ("%s", listener.error().message().c_str()));
    return FALSE;
  }
  state->listener = std::move(*listener);
  state->running = true;
  state->acceptor = std::thread(accept_loop, self);
  state->copies = 0;
  state->frames = 0;
  state->sequence = 0;
  state->started = false;
  return TRUE;
}

static gboolean memhal_sink_stop(GstBaseSink* sink) {
  auto* state = MEMHAL_SINK(sink)->state;
  state->running = false;
  if (state->acceptor.joinable()) state->acceptor.join();
  const std::lock_guard lock(state->mutex);
  state->consumers.clear();
  state->listener.reset();
  state->copy_pool.reset();
  return TRUE;
}

// Caps the template admits but memhal cannot lay out (an odd size for subsampled chroma) are
// refused here, naming them, rather than at the first buffer.
static gboolean memhal_sink_set_caps(GstBaseSink* sink, GstCaps* caps) {
  auto* self = MEMHAL_SINK(sink);
  GstVideoInfo info;
  auto layout = gst_video_info_from_caps(&info, caps)
                    ? memhal::gst_plugin::layout_for_caps(caps, false)
                    : memhal::Result<memhal::Layout>(memhal::unexpected(
                          memhal::Error(memhal::ErrorCode::InvalidArgument, "not a raw video format")));
  if (!layout) {
    gchar* text = gst_caps_to_string(caps);
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("not-negotiated: memhalsink does not support caps %s", text),
                      ("%s", layout.error().message().c_str()));
    g_free(text);
    return FALSE;
  }
  self->state->info = info;
  self->state->copy_pool.reset();
  return TRUE;
}

static gboolean memhal_sink_propose_allocation(GstBaseSink* sink, GstQuery* query) {
  auto* self = MEMHAL_SINK(sink);
  GstCaps* caps = nullptr;
  gboolean need_pool = FALSE;
  gst_query_parse_allocation(query, &caps, &need_pool);
  GstVideoInfo info;
  if (caps == nullptr || !gst_video_info_from_caps(&info, caps) ||
      !memhal::pixel_format_from_gst(GST_VIDEO_INFO_FORMAT(&info))) {
    return FALSE;
  }
  if (need_pool) {
    GstBufferPool* pool = memhal_pool_new(self->state->pool_size);
    GstStructure* config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_set_params(config, caps, static_cast<guint>(GST_VIDEO_INFO_SIZE(&info)), 0,
                                      self->state->pool_size);
    gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
    if (!gst_buffer_pool_set_config(pool, config)) {
      GST_WARNING_OBJECT(self, "could not configure a memhal pool for %" GST_PTR_FORMAT, static_cast<void*>(caps));
      gst_object_unref(pool);
      return FALSE;
    }
    // The pool sized its buffers to the memhal layout: propose what it says.
    config = gst_buffer_pool_get_config(pool);
    guint size = 0;
    gst_buffer_pool_config_get_params(config, nullptr, &size, nullptr, nullptr);
    gst_structure_free(config);
    gst_query_add_allocation_pool(query, pool, size, 0, self->state->pool_size);
    gst_object_unref(pool);
  }
  gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
  return TRUE;
}

// The buffer as a tensor other processes can map: itself when fd-backed, else a copy.
static memhal::Result<memhal::Tensor> shareable(MemhalSink* self, GstBuffer* buffer) {
  auto* state = self->state;
  MEMHAL_ASSIGN_OR_RETURN(memhal::Tensor tensor, memhal::tensor_from_gst_buffer(buffer, state->info));
  if (tensor.memory() == memhal::MemoryKind::Shm || tensor.memory() == memhal::MemoryKind::DmaBuf) return tensor;
  if (!state->copy_pool) {
    MEMHAL_ASSIGN_OR_RETURN(const memhal::Layout layout,
                            memhal::Layout::image(GST_VIDEO_INFO_WIDTH(&state->info),
                                                  GST_VIDEO_INFO_HEIGHT(&state->info), *tensor.pixel_format()));
    MEMHAL_ASSIGN_OR_RETURN(state->copy_pool,
                            memhal::TensorPool::create(layout, state->pool_size, memhal::MemoryKind::Shm));
  }
  MEMHAL_ASSIGN_OR_RETURN(memhal::Tensor copy, state->copy_pool->acquire(std::chrono::seconds(10)));
  MEMHAL_TRY(tensor.copy_to(copy));
  const guint64 copies = ++state->copies;
  GST_CAT_DEBUG_OBJECT(GST_CAT_PERFORMANCE, self,
                       "memhalsink: memcpy %" G_GINT64_FORMAT
                       " bytes of a buffer that is not fd-backed (copy %" G_GUINT64_FORMAT ")",
                       tensor.nbytes(), copies);
  return copy;
}

static GstFlowReturn memhal_sink_render(GstBaseSink* sink, GstBuffer* buffer) {
  auto* self = MEMHAL_SINK(sink);
  auto* state = self->state;
  {
    std::unique_lock lock(state->mutex);
    state->changed.wait(
        lock, [&] { return state->unlocked || state->started || state->consumers.size() >= state->wait_consumers; });
    state->started = state->started || state->consumers.size() >= state->wait_consumers;
    if (state->unlocked) {
      lock.unlock();
      const GstFlowReturn ret = gst_base_sink_wait_preroll(sink);
      if (ret != GST_FLOW_OK) return ret;
    }
  }
  auto tensor = shareable(self, buffer);
  if (!tensor) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("memhalsink cannot serve a buffer"),
                      ("%s", tensor.error().message().c_str()));
    return GST_FLOW_ERROR;
  }
  auto payload = memhal::MemoryDomain::from_tensor(*tensor);
  if (!payload) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("memhalsink cannot serve a buffer"),
                      ("%s", payload.error().message().c_str()));
    return GST_FLOW_ERROR;
  }
  memhal::Frame frame{std::move(*payload), {}, state->sequence++, {}};
  if (GST_BUFFER_PTS_IS_VALID(buffer)) frame.timing.pts = static_cast<int64_t>(GST_BUFFER_PTS(buffer));
  if (GST_BUFFER_DTS_IS_VALID(buffer)) frame.timing.dts = static_cast<int64_t>(GST_BUFFER_DTS(buffer));
  if (GST_BUFFER_DURATION_IS_VALID(buffer)) frame.timing.duration = static_cast<int64_t>(GST_BUFFER_DURATION(buffer));
  const std::lock_guard lock(state->mutex);
  for (auto it = state->consumers.begin(); it != state->consumers.end();) {
    auto sent = it->send(frame);
    if (sent) {
      ++it;
      continue;
    }
    // A consumer that went away (or failed) is dropped; the others go on being served.
    GST_WARNING_OBJECT(self, "dropping a consumer of %s: %s", state->socket.c_str(), sent.error().message().c_str());
    it = state->consumers.erase(it);
  }
  ++state->frames;
  return GST_FLOW_OK;
}

static gboolean memhal_sink_unlock(GstBaseSink* sink) {
  auto* state = MEMHAL_SINK(sink)->state;
  const std::lock_guard lock(state->mutex);
  state->unlocked = true;
  state->changed.notify_all();
  return TRUE;
}

static gboolean memhal_sink_unlock_stop(GstBaseSink* sink) {
  auto* state = MEMHAL_SINK(sink)->state;
  const std::lock_guard lock(state->mutex);
  state->unlocked = false;
  return TRUE;
}

static void memhal_sink_set_property(GObject* object, guint id, const GValue* value, GParamSpec* spec) {
  auto* state = MEMHAL_SINK(object)->state;
  switch (id) {
    case PROP_SOCKET: {
      const gchar* path = g_value_get_string(value);
      state->socket = path != nullptr ? path : "";
      break;
    }
    case PROP_POOL_SIZE: state->pool_size = g_value_get_uint(value); break;
    case PROP_WAIT_CONSUMERS: {
      const std::lock_guard lock(state->mutex);
      state->wait_consumers = g_value_get_uint(value);
      state->changed.notify_all();
      break;
    }
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
  }
}

static void memhal_sink_get_property(GObject* object, guint id, GValue* value, GParamSpec* spec) {
  auto* state = MEMHAL_SINK(object)->state;
  switch (id) {
    case PROP_SOCKET: g_value_set_string(value, state->socket.c_str()); break;
    case PROP_POOL_SIZE: g_value_set_uint(value, state->pool_size); break;
    case PROP_WAIT_CONSUMERS: g_value_set_uint(value, state->wait_consumers); break;
    case PROP_COPIES: g_value_set_uint64(value, state->copies.load()); break;
    case PROP_FRAMES: g_value_set_uint64(value, state->frames.load()); break;
    case PROP_CONSUMERS: {
      const std::lock_guard lock(state->mutex);
      g_value_set_uint(value, static_cast<guint>(state->consumers.size()));
      break;
    }
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
  }
}

static void memhal_sink_finalize(GObject* object) {
  delete MEMHAL_SINK(object)->state;
  G_OBJECT_CLASS(memhal_sink_parent_class)->finalize(object);
}

static void memhal_sink_class_init(MemhalSinkClass* klass) {
  auto* object = G_OBJECT_CLASS(klass);
  object->set_property = memhal_sink_set_property;
  object->get_property = memhal_sink_get_property;
  object->finalize = memhal_sink_finalize;
  const auto rw = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
  const auto ro = static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_property(
      object, PROP_SOCKET,
      g_param_spec_string("socket", "Socket", "Path of the Unix socket memhal consumers connect to", nullptr, rw));
  g_object_class_install_property(
      object, PROP_POOL_SIZE,
      g_param_spec_uint("pool-size", "Pool size", "Buffers in the memhal pool proposed upstream (and the copy pool)", 2,
                        1024, kDefaultPoolSize, rw));
  g_object_class_install_property(
      object, PROP_WAIT_CONSUMERS,
      g_param_spec_uint(
          "wait-consumers", "Wait for consumers",
          "Hold the first buffer until this many consumers are connected; then serve whoever is connected", 0, 1024, 0,
          rw));
  g_object_class_install_property(
      object, PROP_COPIES,
      g_param_spec_uint64("copies", "Copies", "Buffers copied because they were not fd-backed", 0, G_MAXUINT64, 0, ro));
  g_object_class_install_property(object, PROP_FRAMES,
                                  g_param_spec_uint64("frames", "Frames", "Buffers served", 0, G_MAXUINT64, 0, ro));
  g_object_class_install_property(
      object, PROP_CONSUMERS,
      g_param_spec_uint("consumers", "Consumers", "Consumers connected now", 0, G_MAXUINT, 0, ro));

  auto* element = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element, &sink_template);
  gst_element_class_set_static_metadata(element, "memhal sink", "Sink/Video",
                                        "Serves video frames to memhal programs and memhalsrc over a Unix socket, "
                                        "without copying",
                                        "memhal");
  auto* base = GST_BASE_SINK_CLASS(klass);
  base->start = memhal_sink_start;
  base->stop = memhal_sink_stop;
  base->set_caps = memhal_sink_set_caps;
  base->propose_allocation = memhal_sink_propose_allocation;
  base->render = memhal_sink_render;
  base->unlock = memhal_sink_unlock;
  base->unlock_stop = memhal_sink_unlock_stop;
  GST_DEBUG_CATEGORY_INIT(memhal_sink_debug, "memhalsink", 0, "memhal sink");
}

static void memhal_sink_init(MemhalSink* self) {
  self->state = new SinkState();
  gst_base_sink_set_sync(GST_BASE_SINK(self), FALSE);
}
