// memhalsrc: connects to a memhal Channel (a memhalsink, a memhal program) at `socket` and
// pushes each received frame as a GstBuffer over the same memory: one GstFdMemory or
// GstDmaBufMemory per memhal buffer, made once and reused; each GstBuffer holds its frame's
// share (released to the sender when GStreamer frees the buffer), a GstVideoMeta with the
// planes' offsets and pitches, and the frame's timing. Caps follow the frames' images.
#include <gst/base/gstpushsrc.h>
#include <gst/video/video.h>

#include <atomic>
#include <chrono>
#include <memhal/channel.hpp>
#include <memhal/gst.hpp>
#include <memhal/memory_domain.hpp>
#include <optional>
#include <string>
#include <vector>

#include "elements.hpp"
#include "gst_internal.hpp"

GST_DEBUG_CATEGORY_STATIC(memhal_src_debug);
#define GST_CAT_DEFAULT memhal_src_debug

namespace {

struct SrcState {
  std::string socket;
  std::optional<memhal::ipc::Channel> channel;
  memhal::GstMemoryCache memories;
  GstCaps* caps = nullptr;
  std::vector<int64_t> caps_key;  // what `caps` were made from: the next frames' are not remade
  std::atomic<bool> unlocked{false};
  std::atomic<guint64> frames{0};
};

enum { PROP_0, PROP_SOCKET, PROP_FRAMES, PROP_MEMORIES };

}  // namespace

struct _MemhalSrc {
  GstPushSrc parent;
  SrcState* state;
};

G_DEFINE_TYPE(MemhalSrc, memhal_src, GST_TYPE_PUSH_SRC)

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(MEMHAL_GST_VIDEO_FORMATS)));

static gboolean memhal_src_start(GstBaseSrc* src) {
  auto* self = MEMHAL_SRC(src);
  auto* state = self->state;
  if (state->socket.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("memhalsrc needs a socket path (socket=PATH)"), (nullptr));
    return FALSE;
  }
  auto channel = memhal::ipc::Channel::connect(state->socket);
  if (!channel) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ, ("memhalsrc cannot connect to %s", state->socket.c_str()),
                      ("%s", channel.error().message().c_str()));
    return FALSE;
  }
  state->channel = std::move(*channel);
  state->frames = 0;
  return TRUE;
}

static gboolean memhal_src_stop(GstBaseSrc* src) {
  auto* state = MEMHAL_SRC(src)->state;
  state->memories.clear();
  state->channel.reset();
  gst_caps_replace(&state->caps, nullptr);
  state->caps_key.clear();
  return TRUE;
}

// Caps are set from each frame in create, not negotiated up front.
static gboolean memhal_src_negotiate(GstBaseSrc*) {
  return TRUE;
}

// What a frame's caps depend on: its pixel format, its planes' size and its duration.
static std::vector<int64_t> caps_key(const memhal::Tensor& tensor, int64_t duration) {
  const auto format = tensor.pixel_format();
  const auto planes = memhal::gst_detail::planes_of(tensor.layout());
  if (!format || planes.empty()) return {-1};
  return {static_cast<int64_t>(*format), planes[0].width, planes[0].height, duration};
}

static GstFlowReturn push_frame(MemhalSrc* self, const memhal::Frame& frame, const memhal::Tensor& tensor,
                                GstBuffer** out);

static GstFlowReturn memhal_src_create(GstPushSrc* push, GstBuffer** out) {
  auto* self = MEMHAL_SRC(push);
  auto* state = self->state;
  memhal::Result<memhal::Frame> frame = memhal::unexpected(memhal::Error(memhal::ErrorCode::Busy, ""));
  for (;;) {
    if (state->unlocked.load()) return GST_FLOW_FLUSHING;
    frame = state->channel->receive_frame(std::chrono::milliseconds(50));
    if (frame || frame.error().code() != memhal::ErrorCode::Busy) break;
  }
  if (!frame) {
    if (frame.error().code() == memhal::ErrorCode::Unavailable) {
      GST_INFO_OBJECT(self, "%s closed: end of stream", state->socket.c_str());
      return GST_FLOW_EOS;
    }
    GST_ELEMENT_ERROR(self, STREAM, DECODE, ("memhalsrc received a bad frame from %s", state->socket.c_str()),
                      ("%s", frame.error().message().c_str()));
    return GST_FLOW_ERROR;
  }
  auto tensor = frame->payload.to_tensor();
  if (tensor && !state->caps_key.empty()) {
    const std::vector<int64_t> key = caps_key(*tensor, frame->timing.duration.value_or(0));
    if (key == state->caps_key) return push_frame(self, *frame, *tensor, out);
  }
  memhal::Result<GstCaps*> caps = tensor ? memhal::gst_caps_from_tensor(*tensor, frame->timing.duration.value_or(0))
                                         : memhal::Result<GstCaps*>(memhal::unexpected(tensor.error()));
  if (!caps) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                      ("not-negotiated: a frame from %s has no video/x-raw caps", state->socket.c_str()),
                      ("%s", caps.error().message().c_str()));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (state->caps == nullptr || !gst_caps_is_equal(state->caps, *caps)) {
    if (!gst_base_src_set_caps(GST_BASE_SRC(self), *caps)) {
      gchar* text = gst_caps_to_string(*caps);
      GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("not-negotiated: downstream of memhalsrc does not accept %s", text),
                        (nullptr));
      g_free(text);
      gst_caps_unref(*caps);
      return GST_FLOW_NOT_NEGOTIATED;
    }
    gst_caps_replace(&state->caps, *caps);
  }
  gst_caps_unref(*caps);
  state->caps_key = caps_key(*tensor, frame->timing.duration.value_or(0));
  return push_frame(self, *frame, *tensor, out);
}

// The frame as a GstBuffer over cached memory, with its timing.
static GstFlowReturn push_frame(MemhalSrc* self, const memhal::Frame& frame, const memhal::Tensor& tensor,
                                GstBuffer** out) {
  auto* state = self->state;
  auto buffer = state->memories.buffer_from_tensor(tensor);
  if (!buffer) {
    GST_ELEMENT_ERROR(self, RESOURCE, READ, ("memhalsrc cannot wrap a frame from %s", state->socket.c_str()),
                      ("%s", buffer.error().message().c_str()));
    return GST_FLOW_ERROR;
  }
  if (frame.timing.pts) GST_BUFFER_PTS(*buffer) = static_cast<GstClockTime>(*frame.timing.pts);
  if (frame.timing.dts) GST_BUFFER_DTS(*buffer) = static_cast<GstClockTime>(*frame.timing.dts);
  if (frame.timing.duration) GST_BUFFER_DURATION(*buffer) = static_cast<GstClockTime>(*frame.timing.duration);
  GST_BUFFER_OFFSET(*buffer) = frame.sequence;
  ++state->frames;
  *out = *buffer;
  return GST_FLOW_OK;
}

static gboolean memhal_src_unlock(GstBaseSrc* src) {
  MEMHAL_SRC(src)->state->unlocked = true;
  return TRUE;
}

static gboolean memhal_src_unlock_stop(GstBaseSrc* src) {
  MEMHAL_SRC(src)->state->unlocked = false;
  return TRUE;
}

static void memhal_src_set_property(GObject* object, guint id, const GValue* value, GParamSpec* spec) {
  auto* state = MEMHAL_SRC(object)->state;
  if (id == PROP_SOCKET) {
    const gchar* path = g_value_get_string(value);
    state->socket = path != nullptr ? path : "";
  } else {
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
  }
}

static void memhal_src_get_property(GObject* object, guint id, GValue* value, GParamSpec* spec) {
  auto* state = MEMHAL_SRC(object)->state;
  switch (id) {
    case PROP_SOCKET: g_value_set_string(value, state->socket.c_str()); break;
    case PROP_FRAMES: g_value_set_uint64(value, state->frames.load()); break;
    case PROP_MEMORIES: g_value_set_uint64(value, state->memories.memories_made()); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
  }
}

static void memhal_src_finalize(GObject* object) {
  auto* state = MEMHAL_SRC(object)->state;
  gst_caps_replace(&state->caps, nullptr);
  delete state;
  G_OBJECT_CLASS(memhal_src_parent_class)->finalize(object);
}

static void memhal_src_class_init(MemhalSrcClass* klass) {
  auto* object = G_OBJECT_CLASS(klass);
  object->set_property = memhal_src_set_property;
  object->get_property = memhal_src_get_property;
  object->finalize = memhal_src_finalize;
  const auto rw = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
  const auto ro = static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_property(
      object, PROP_SOCKET,
      g_param_spec_string("socket", "Socket", "Path of the memhal Channel listener to connect to", nullptr, rw));
  g_object_class_install_property(object, PROP_FRAMES,
                                  g_param_spec_uint64("frames", "Frames", "Frames received", 0, G_MAXUINT64, 0, ro));
  g_object_class_install_property(
      object, PROP_MEMORIES,
      g_param_spec_uint64("memories", "Memories", "GstMemory objects made (one per memhal buffer; reused after)", 0,
                          G_MAXUINT64, 0, ro));

  auto* element = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element, &src_template);
  gst_element_class_set_static_metadata(element, "memhal source", "Source/Video",
                                        "Pushes the frames of a memhal Channel (memhalsink, memhal programs) as "
                                        "buffers over the same memory",
                                        "memhal");
  auto* base = GST_BASE_SRC_CLASS(klass);
  base->start = memhal_src_start;
  base->stop = memhal_src_stop;
  base->negotiate = memhal_src_negotiate;
  base->unlock = memhal_src_unlock;
  base->unlock_stop = memhal_src_unlock_stop;
  GST_PUSH_SRC_CLASS(klass)->create = memhal_src_create;
  GST_DEBUG_CATEGORY_INIT(memhal_src_debug, "memhalsrc", 0, "memhal source");
}

static void memhal_src_init(MemhalSrc* self) {
  self->state = new SrcState();
  gst_base_src_set_format(GST_BASE_SRC(self), GST_FORMAT_TIME);
}
