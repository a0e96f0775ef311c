// memhalconvert: a GstBaseTransform over memhal's ImageProcessor. In: every memhal format as
// video/x-raw, read in place (fd memory imported by fd, system memory mapped and wrapped with the
// buffer as keep-alive). Out: video/x-raw (RGB, BGR, RGBA, BGRA, GRAY8, NV12, I420, YUY2, RGBP)
// or a model input as other/tensors (NNStreamer's convention), written into memhal memory: the
// memhal pool downstream proposes (memhalsink's) or one of its own. Crop, flip, rotation, resize
// (stretch or letterbox with a pad colour), colour matrix and range, mean/std are properties,
// spelled as `memhal convert` spells its options. The backend is never chosen behind the user's
// back: `backend` (default cpu) pins it.
#include <gst/base/gstbasetransform.h>
#include <gst/video/video.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <memhal/gst.hpp>
#include <memhal/image_processor.hpp>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "elements.hpp"
#include "gst_internal.hpp"
#include "memhal_pool.hpp"

GST_DEBUG_CATEGORY_STATIC(memhal_convert_debug);
#define GST_CAT_DEFAULT memhal_convert_debug

#define MEMHAL_GST_OUTPUT_FORMATS "{ RGB, BGR, RGBA, BGRA, GRAY8, NV12, I420, YUY2, RGBP }"

namespace {

using memhal::ColorMatrix;
using memhal::ColorRange;
using memhal::ConvertOptions;
using memhal::ImageBackend;

constexpr int64_t kMaxSide = 16384;
constexpr guint kPoolSize = 6;

// A property's text and what it parsed to; `error` says why it did not.
struct Settings {
  ConvertOptions options;
  std::optional<ColorMatrix> matrix;  // none: from the input caps' colorimetry
  std::optional<ColorRange> range;
  ImageBackend backend = ImageBackend::Cpu;
  unsigned threads = 0;
  std::string error;  // the first bad property, reported when the element starts
  std::array<std::string, 12> text;
};

enum {
  PROP_0,
  PROP_BACKEND,
  PROP_RESIZE,
  PROP_INTERPOLATION,
  PROP_PAD,
  PROP_CROP,
  PROP_FLIP,
  PROP_ROTATION,
  PROP_MATRIX,
  PROP_RANGE,
  PROP_MEAN,
  PROP_STD,
  PROP_SWAP_RB,
  PROP_THREADS,
  PROP_CONVERSIONS,
};

struct ConvertState {
  std::mutex mutex;  // guards settings (properties may be set from any thread)
  Settings settings;
  ConvertOptions active;  // the options of the running stream (set_caps)
  std::optional<memhal::ImageProcessor> processor;
  GstVideoInfo in_info{};
  bool tensor_out = false;
  GstVideoInfo out_info{};
  std::atomic<guint64> conversions{0};
};

template <memhal::Vocabulary E>
std::string choices() {
  std::string out;
  for (E value : memhal::all<E>()) out += (out.empty() ? "" : "|") + std::string(memhal::to_string(value));
  return out;
}

template <memhal::Vocabulary E>
std::optional<std::string> parse_choice(const char* name, const std::string& text, E& target) {
  auto value = memhal::from_string<E>(text);
  if (!value) return std::string(name) + "='" + text + "' is not one of " + choices<E>();
  target = *value;
  return std::nullopt;
}

// Comma-separated numbers, `min_count`..`max_count` of them, each within [lo, hi].
std::optional<std::string> parse_numbers(const char* name, const std::string& text, std::size_t min_count,
                                         std::size_t max_count, double lo, double hi, std::vector<double>& out) {
  out.clear();
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    char* end = nullptr;
    const double value = std::strtod(part.c_str(), &end);
    if (part.empty() || *end != '\0' || !(value >= lo && value <= hi)) {
      std::ostringstream why;
      why << name << "='" << text << "': '" << part << "' is not a number in " << lo << ".." << hi;
      return why.str();
    }
    out.push_back(value);
  }
  if (out.size() < min_count || out.size() > max_count) {
    std::ostringstream why;
    why << name << "='" << text << "' takes " << min_count << (min_count == max_count ? "" : " to ")
        << (min_count == max_count ? "" : std::to_string(max_count)) << " comma-separated values";
    return why.str();
  }
  return std::nullopt;
}

// Applies property `id` = `text` to `s`; the reason when the text is bad.
std::optional<std::string> apply(Settings& s, guint id, const std::string& text) {
  auto& o = s.options;
  std::vector<double> v;
  switch (id) {
    case PROP_BACKEND: return parse_choice("backend", text, s.backend);
    case PROP_RESIZE: return parse_choice("resize", text, o.resize);
    case PROP_INTERPOLATION: return parse_choice("interpolation", text, o.interpolation);
    case PROP_FLIP: return parse_choice("flip", text, o.flip);
    case PROP_ROTATION: return parse_choice("rotation", text, o.rotation);
    case PROP_MATRIX:
    case PROP_RANGE: {
      if (text == "auto") {
        if (id == PROP_MATRIX) s.matrix.reset();
        if (id == PROP_RANGE) s.range.reset();
        return std::nullopt;
      }
      if (id == PROP_MATRIX) {
        ColorMatrix m{};
        if (auto bad = parse_choice("matrix", text, m)) return *bad + "|auto";
        s.matrix = m;
      } else {
        ColorRange r{};
        if (auto bad = parse_choice("range", text, r)) return *bad + "|auto";
        s.range = r;
      }
      return std::nullopt;
    }
    case PROP_PAD:
      if (auto bad = parse_numbers("pad", text, 3, 4, 0, 255, v)) return bad;
      for (std::size_t i = 0; i < 4; ++i) o.pad[i] = i < v.size() ? static_cast<uint8_t>(v[i]) : 255;
      return std::nullopt;
    case PROP_CROP:
      if (text.empty()) {
        o.crop.reset();
        return std::nullopt;
      }
      if (auto bad = parse_numbers("crop", text, 4, 4, 0, kMaxSide, v)) return bad;
      if (v[2] < 1 || v[3] < 1) return "crop='" + text + "': width and height must be at least 1";
      o.crop = memhal::Rect{static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1]), static_cast<int64_t>(v[2]),
                            static_cast<int64_t>(v[3])};
      return std::nullopt;
    case PROP_MEAN:
    case PROP_STD: {
      const bool mean = id == PROP_MEAN;
      // A std of 0 would divide by zero; below 1e-6 the output is not a number a model can use.
      if (auto bad = parse_numbers(mean ? "mean" : "std", text, 1, 4, mean ? -1e6 : 1e-6, 1e6, v)) return bad;
      auto& target = mean ? o.mean : o.std;
      for (std::size_t i = 0; i < 4; ++i) target[i] = static_cast<float>(v[std::min(i, v.size() - 1)]);
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

constexpr const char* kDefaults[] = {nullptr, "cpu",  "stretch", "bilinear", "114,114,114,255", "",
                                     "none",  "none", "auto",    "auto",     "0,0,0",           "1,1,1"};

// The size of the oriented crop of a `w` x `h` source: the output size when nothing says otherwise.
std::pair<gint, gint> oriented_size(const ConvertOptions& o, gint w, gint h) {
  const gint cw = o.crop ? static_cast<gint>(o.crop->width) : w;
  const gint ch = o.crop ? static_cast<gint>(o.crop->height) : h;
  const bool turned = o.rotation == memhal::Rotation::Cw90 || o.rotation == memhal::Rotation::Cw270;
  return turned ? std::pair{ch, cw} : std::pair{cw, ch};
}

std::string caps_text(const GstCaps* caps) {
  gchar* text = gst_caps_to_string(caps);
  std::string out = text != nullptr ? text : "(null)";
  g_free(text);
  return out;
}

}  // namespace

struct _MemhalConvert {
  GstBaseTransform parent;
  ConvertState* state;
};

G_DEFINE_TYPE(MemhalConvert, memhal_convert, GST_TYPE_BASE_TRANSFORM)

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(MEMHAL_GST_VIDEO_FORMATS)));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(
        MEMHAL_GST_OUTPUT_FORMATS) ";"
                                   "other/tensors, format=(string)static, num_tensors=(int)1, "
                                   "types=(string)" MEMHAL_GST_TENSOR_TYPES ", framerate=(fraction)[0/1, MAX]"));

static GstCaps* memhal_convert_transform_caps(GstBaseTransform* trans, GstPadDirection direction, GstCaps* caps,
                                              GstCaps* filter) {
  GstCaps* result = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    const GstStructure* in = gst_caps_get_structure(caps, i);
    const GValue* framerate = gst_structure_get_value(in, "framerate");
    std::vector<GstStructure*> made;
    if (direction == GST_PAD_SINK) {
      GstCaps* templ = gst_static_caps_get(&src_template.static_caps);
      for (guint t = 0; t < gst_caps_get_size(templ); ++t)
        made.push_back(gst_structure_copy(gst_caps_get_structure(templ, t)));
      gst_caps_unref(templ);
    } else {
      GstCaps* templ = gst_static_caps_get(&sink_template.static_caps);
      made.push_back(gst_structure_copy(gst_caps_get_structure(templ, 0)));
      gst_caps_unref(templ);
    }
    for (GstStructure* s : made) {
      if (gst_structure_has_name(s, "video/x-raw")) {
        gst_structure_set(s, "width", GST_TYPE_INT_RANGE, 1, static_cast<gint>(kMaxSide), "height", GST_TYPE_INT_RANGE,
                          1, static_cast<gint>(kMaxSide), nullptr);
      }
      if (framerate != nullptr) gst_structure_set_value(s, "framerate", framerate);
      result = gst_caps_merge_structure(result, s);  // keeps the order: video before tensors
    }
  }
  if (filter != nullptr) {
    GstCaps* filtered = gst_caps_intersect_full(filter, result, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(result);
    result = filtered;
  }
  GST_DEBUG_OBJECT(trans, "%s %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT, direction == GST_PAD_SINK ? "sink" : "src",
                   static_cast<void*>(caps), static_cast<void*>(result));
  return result;
}

static GstCaps* memhal_convert_fixate_caps(GstBaseTransform* trans, GstPadDirection direction, GstCaps* caps,
                                           GstCaps* othercaps) {
  auto* self = MEMHAL_CONVERT(trans);
  othercaps = gst_caps_truncate(othercaps);
  if (direction != GST_PAD_SINK) return gst_caps_fixate(othercaps);
  othercaps = gst_caps_make_writable(othercaps);
  const GstStructure* in = gst_caps_get_structure(caps, 0);
  GstStructure* out = gst_caps_get_structure(othercaps, 0);
  gint w = 0;
  gint h = 0;
  gst_structure_get_int(in, "width", &w);
  gst_structure_get_int(in, "height", &h);
  ConvertOptions options;
  {
    const std::lock_guard lock(self->state->mutex);
    options = self->state->settings.options;
  }
  const auto [dw, dh] = oriented_size(options, w, h);
  gint fps_n = 0;
  gint fps_d = 1;
  if (gst_structure_get_fraction(in, "framerate", &fps_n, &fps_d) && gst_structure_has_field(out, "framerate")) {
    gst_structure_fixate_field_nearest_fraction(out, "framerate", fps_n, fps_d);
  }
  if (gst_structure_has_name(out, "video/x-raw")) {
    const gchar* format = gst_structure_get_string(in, "format");
    if (format != nullptr) gst_structure_fixate_field_string(out, "format", format);
    gst_structure_fixate_field_nearest_int(out, "width", dw);
    gst_structure_fixate_field_nearest_int(out, "height", dh);
    if (gst_structure_has_field(out, "pixel-aspect-ratio")) {
      gst_structure_fixate_field_nearest_fraction(out, "pixel-aspect-ratio", 1, 1);
    }
  } else {
    gst_structure_fixate_field_string(out, "types", "float32");
    const GValue* dims = gst_structure_get_value(out, "dimensions");
    if (dims == nullptr || !gst_value_is_fixed(dims)) {
      gst_structure_set(out, "dimensions", G_TYPE_STRING,
                        memhal::gst_plugin::tensor_dimensions({dw, dh, true, memhal::DType::F32}).c_str(), nullptr);
    }
  }
  othercaps = gst_caps_fixate(othercaps);
  GST_DEBUG_OBJECT(trans, "fixated to %" GST_PTR_FORMAT, static_cast<void*>(othercaps));
  return othercaps;
}

static gboolean memhal_convert_start(GstBaseTransform* trans) {
  auto* self = MEMHAL_CONVERT(trans);
  auto* state = self->state;
  Settings settings;
  {
    const std::lock_guard lock(state->mutex);
    settings = state->settings;
  }
  if (!settings.error.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("memhalconvert: bad property %s", settings.error.c_str()), (nullptr));
    return FALSE;
  }
  auto processor = memhal::ImageProcessor::create({.threads = settings.threads, .backend = settings.backend});
  if (!processor) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                      ("memhalconvert cannot start an ImageProcessor on backend %s",
                       std::string(memhal::to_string(settings.backend)).c_str()),
                      ("%s", processor.error().message().c_str()));
    return FALSE;
  }
  state->processor = std::move(*processor);
  state->conversions = 0;
  return TRUE;
}

static gboolean memhal_convert_stop(GstBaseTransform* trans) {
  MEMHAL_CONVERT(trans)->state->processor.reset();
  return TRUE;
}

// The output size must be one the options can fill; formats and sizes memhal cannot convert are
// refused here, naming the caps, so negotiation fails rather than the first buffer.
static gboolean memhal_convert_set_caps(GstBaseTransform* trans, GstCaps* incaps, GstCaps* outcaps) {
  auto* self = MEMHAL_CONVERT(trans);
  auto* state = self->state;
  auto refuse = [&](const std::string& why) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                      ("not-negotiated: memhalconvert cannot convert %s to %s", caps_text(incaps).c_str(),
                       caps_text(outcaps).c_str()),
                      ("%s", why.c_str()));
    return FALSE;
  };
  GstVideoInfo in_info;
  if (!gst_video_info_from_caps(&in_info, incaps)) return refuse("the input caps are not raw video");
  auto in_layout = memhal::gst_plugin::layout_for_caps(incaps, false);
  if (!in_layout) return refuse(in_layout.error().message());
  auto out_layout = memhal::gst_plugin::layout_for_caps(outcaps, true);
  if (!out_layout) return refuse(out_layout.error().message());
  const bool tensor_out = gst_structure_has_name(gst_caps_get_structure(outcaps, 0), "other/tensors");
  GstVideoInfo out_info;
  gst_video_info_init(&out_info);
  if (!tensor_out) gst_video_info_from_caps(&out_info, outcaps);

  Settings settings;
  {
    const std::lock_guard lock(state->mutex);
    settings = state->settings;
  }
  ConvertOptions options = settings.options;
  const GstVideoColorimetry& colorimetry = GST_VIDEO_INFO_COLORIMETRY(&in_info);
  if (settings.matrix) {
    options.matrix = *settings.matrix;
  } else if (GST_VIDEO_INFO_IS_YUV(&in_info)) {
    switch (colorimetry.matrix) {
      case GST_VIDEO_COLOR_MATRIX_BT709: options.matrix = ColorMatrix::Bt709; break;
      case GST_VIDEO_COLOR_MATRIX_BT601:
      case GST_VIDEO_COLOR_MATRIX_UNKNOWN: options.matrix = ColorMatrix::Bt601; break;
      default: {
        gchar* name = gst_video_colorimetry_to_string(&colorimetry);
        const std::string why = std::string("the input's colour matrix (colorimetry ") +
                                (name != nullptr ? name : "?") +
                                ") is neither BT.601 nor BT.709; set matrix=bt601 or matrix=bt709 to convert anyway";
        g_free(name);
        return refuse(why);
      }
    }
  }
  if (settings.range) {
    options.range = *settings.range;
  } else {
    options.range = colorimetry.range == GST_VIDEO_COLOR_RANGE_0_255 && GST_VIDEO_INFO_IS_YUV(&in_info)
                        ? ColorRange::Full
                        : ColorRange::Limited;
  }
  // A crop must lie inside the source (checked by convert too; here it names the caps).
  if (options.crop && (options.crop->x + options.crop->width > GST_VIDEO_INFO_WIDTH(&in_info) ||
                       options.crop->y + options.crop->height > GST_VIDEO_INFO_HEIGHT(&in_info))) {
    std::ostringstream why;
    why << "crop " << options.crop->x << "," << options.crop->y << "," << options.crop->width << ","
        << options.crop->height << " lies outside the " << GST_VIDEO_INFO_WIDTH(&in_info) << "x"
        << GST_VIDEO_INFO_HEIGHT(&in_info) << " input";
    return refuse(why.str());
  }
  // Same format and size and nothing to do: buffers pass through untouched.
  const bool identity = !options.crop && options.flip == memhal::Flip::None &&
                        options.rotation == memhal::Rotation::None && !options.swap_rb && !tensor_out &&
                        GST_VIDEO_INFO_FORMAT(&in_info) == GST_VIDEO_INFO_FORMAT(&out_info) &&
                        GST_VIDEO_INFO_WIDTH(&in_info) == GST_VIDEO_INFO_WIDTH(&out_info) &&
                        GST_VIDEO_INFO_HEIGHT(&in_info) == GST_VIDEO_INFO_HEIGHT(&out_info);
  gst_base_transform_set_passthrough(trans, identity);
  const std::lock_guard lock(state->mutex);
  state->in_info = in_info;
  state->out_info = out_info;
  state->tensor_out = tensor_out;
  state->active = options;
  return TRUE;
}

// Upstream may hand over any layout it describes in a GstVideoMeta.
static gboolean memhal_convert_propose_allocation(GstBaseTransform* trans, GstQuery* decide_query, GstQuery* query) {
  if (decide_query == nullptr) {  // passthrough: downstream decides
    return GST_BASE_TRANSFORM_CLASS(memhal_convert_parent_class)->propose_allocation(trans, decide_query, query);
  }
  gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
  return TRUE;
}

// Output goes into memhal memory: the memhal pool downstream proposes (memhalsink's), else one of
// our own; any other pool downstream offers is replaced.
static gboolean memhal_convert_decide_allocation(GstBaseTransform* trans, GstQuery* query) {
  GstCaps* caps = nullptr;
  gst_query_parse_allocation(query, &caps, nullptr);
  if (caps == nullptr) return FALSE;
  GstBufferPool* pool = nullptr;
  guint min = 0;
  guint max = 0;
  if (gst_query_get_n_allocation_pools(query) > 0) {
    gst_query_parse_nth_allocation_pool(query, 0, &pool, nullptr, &min, &max);
    if (pool != nullptr && !MEMHAL_IS_POOL(pool)) gst_clear_object(&pool);
  }
  const bool ours = pool == nullptr;
  if (ours) {
    pool = memhal_pool_new(kPoolSize);
    min = 0;
    max = kPoolSize;
  }
  GstStructure* config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, 0, min, max);
  if (gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr)) {
    gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  }
  if (!gst_buffer_pool_set_config(pool, config)) {
    GST_ELEMENT_ERROR(trans, RESOURCE, SETTINGS,
                      ("memhalconvert cannot configure a memhal pool for %s", caps_text(caps).c_str()), (nullptr));
    gst_object_unref(pool);
    return FALSE;
  }
  config = gst_buffer_pool_get_config(pool);
  guint size = 0;
  gst_buffer_pool_config_get_params(config, nullptr, &size, &min, &max);
  gst_structure_free(config);
  if (gst_query_get_n_allocation_pools(query) > 0) {
    gst_query_set_nth_allocation_pool(query, 0, pool, size, min, max);
  } else {
    gst_query_add_allocation_pool(query, pool, size, min, max);
  }
  GST_DEBUG_OBJECT(trans, "output into %s memhal pool for %" GST_PTR_FORMAT, ours ? "its own" : "downstream's",
                   static_cast<void*>(caps));
  gst_object_unref(pool);
  return TRUE;
}

static GstFlowReturn memhal_convert_transform(GstBaseTransform* trans, GstBuffer* inbuf, GstBuffer* outbuf) {
  auto* self = MEMHAL_CONVERT(trans);
  auto* state = self->state;
  auto failed = [&](const char* what, const memhal::Error& error) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("memhalconvert: %s", what), ("%s", error.message().c_str()));
    return GST_FLOW_ERROR;
  };
  GstVideoInfo in_info;
  ConvertOptions options;
  {
    const std::lock_guard lock(state->mutex);
    in_info = state->in_info;
    options = state->active;
  }
  auto src = memhal::tensor_from_gst_buffer(inbuf, in_info);
  if (!src) return failed("cannot read the input buffer", src.error());
  const memhal::Tensor* carried = memhal::gst_detail::carried_tensor(outbuf);
  if (carried == nullptr) {
    return failed("the output buffer is not memhal memory",
                  memhal::Error(memhal::ErrorCode::Internal, "its pool is not the memhal pool decide_allocation set"));
  }
  memhal::Tensor dst = *carried;
  auto done = state->processor->convert(*src, dst, options);
  if (!done) return failed("conversion failed", done.error());
  ++state->conversions;
  return GST_FLOW_OK;
}

static void memhal_convert_set_property(GObject* object, guint id, const GValue* value, GParamSpec* spec) {
  auto* state = MEMHAL_CONVERT(object)->state;
  const std::lock_guard lock(state->mutex);
  auto& s = state->settings;
  if (id == PROP_SWAP_RB) {
    s.options.swap_rb = g_value_get_boolean(value);
    return;
  }
  if (id == PROP_THREADS) {
    s.threads = g_value_get_uint(value);
    return;
  }
  if (id >= PROP_CONVERSIONS || id == PROP_0) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
    return;
  }
  const gchar* text = g_value_get_string(value);
  s.text[id] = text != nullptr ? text : kDefaults[id];
  // Every text property re-parsed, so a corrected value clears an earlier error.
  s.error.clear();
  for (guint p = PROP_BACKEND; p <= PROP_STD; ++p) {
    if (auto bad = apply(s, p, s.text[p]); bad && s.error.empty()) s.error = *bad;
  }
  if (!s.error.empty()) GST_WARNING_OBJECT(object, "bad property %s", s.error.c_str());
}

static void memhal_convert_get_property(GObject* object, guint id, GValue* value, GParamSpec* spec) {
  auto* state = MEMHAL_CONVERT(object)->state;
  const std::lock_guard lock(state->mutex);
  if (id == PROP_SWAP_RB) {
    g_value_set_boolean(value, state->settings.options.swap_rb);
  } else if (id == PROP_THREADS) {
    g_value_set_uint(value, state->settings.threads);
  } else if (id == PROP_CONVERSIONS) {
    g_value_set_uint64(value, state->conversions.load());
  } else if (id > PROP_0 && id < PROP_SWAP_RB) {
    g_value_set_string(value, state->settings.text[id].c_str());
  } else {
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
  }
}

static void memhal_convert_finalize(GObject* object) {
  delete MEMHAL_CONVERT(object)->state;
  G_OBJECT_CLASS(memhal_convert_parent_class)->finalize(object);
}

static void memhal_convert_class_init(MemhalConvertClass* klass) {
  auto* object = G_OBJECT_CLASS(klass);
  object->set_property = memhal_convert_set_property;
  object->get_property = memhal_convert_get_property;
  object->finalize = memhal_convert_finalize;
  const auto rw = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
  auto text = [&](guint id, const char* name, const char* blurb) {
    g_object_class_install_property(object, id, g_param_spec_string(name, name, blurb, kDefaults[id], rw));
  };
  const std::string backends = "Image backend, " + choices<ImageBackend>() + " (never chosen for you)";
  const std::string resizes = "Resize mode, " + choices<memhal::ResizeMode>() + " (letterbox keeps the aspect ratio)";
  const std::string interps = "Resampling, " + choices<memhal::Interpolation>();
  const std::string flips = "Mirror the source, " + choices<memhal::Flip>();
  const std::string rotations = "Rotate clockwise after the flip, " + choices<memhal::Rotation>();
  const std::string matrices = "YUV matrix, " + choices<ColorMatrix>() + "|auto (auto: the input caps' colorimetry)";
  const std::string ranges = "YUV range, " + choices<ColorRange>() + "|auto (auto: the input caps' colorimetry)";
  // The blurbs must outlive the class (G_PARAM_STATIC_STRINGS): keep them.
  static const std::array<std::string, 7> blurbs{backends, resizes, interps, flips, rotations, matrices, ranges};
  text(PROP_BACKEND, "backend", blurbs[0].c_str());
  text(PROP_RESIZE, "resize", blurbs[1].c_str());
  text(PROP_INTERPOLATION, "interpolation", blurbs[2].c_str());
  text(PROP_PAD, "pad", "Letterbox colour R,G,B[,A], each 0..255");
  text(PROP_CROP, "crop", "Source rectangle X,Y,W,H (empty: the whole source)");
  text(PROP_FLIP, "flip", blurbs[3].c_str());
  text(PROP_ROTATION, "rotation", blurbs[4].c_str());
  text(PROP_MATRIX, "matrix", blurbs[5].c_str());
  text(PROP_RANGE, "range", blurbs[6].c_str());
  text(PROP_MEAN, "mean", "Per-channel mean of float tensor outputs, A[,B,C[,D]]: (x/255 - mean)/std");
  text(PROP_STD, "std", "Per-channel std of float tensor outputs, A[,B,C[,D]], each above 0");
  g_object_class_install_property(
      object, PROP_SWAP_RB,
      g_param_spec_boolean("swap-rb", "swap-rb", "Exchange R and B in the output (BGR model inputs)", FALSE, rw));
  g_object_class_install_property(
      object, PROP_THREADS,
      g_param_spec_uint("threads", "threads", "Worker threads of the CPU backend (0: one per hardware thread)", 0, 256,
                        0, rw));
  g_object_class_install_property(
      object, PROP_CONVERSIONS,
      g_param_spec_uint64("conversions", "conversions", "Buffers converted (not passed through)", 0, G_MAXUINT64, 0,
                          static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  auto* element = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element, &sink_template);
  gst_element_class_add_static_pad_template(element, &src_template);
  gst_element_class_set_static_metadata(
      element, "memhal converter", "Filter/Converter/Video/Scaler",
      "Converts, crops, flips, rotates, resizes and letterboxes video with memhal's ImageProcessor, into video or a "
      "model-input tensor (other/tensors), in memhal memory",
      "memhal");
  auto* base = GST_BASE_TRANSFORM_CLASS(klass);
  base->passthrough_on_same_caps = FALSE;
  base->start = memhal_convert_start;
  base->stop = memhal_convert_stop;
  base->transform_caps = memhal_convert_transform_caps;
  base->fixate_caps = memhal_convert_fixate_caps;
  base->set_caps = memhal_convert_set_caps;
  base->propose_allocation = memhal_convert_propose_allocation;
  base->decide_allocation = memhal_convert_decide_allocation;
  base->transform = memhal_convert_transform;
  GST_DEBUG_CATEGORY_INIT(memhal_convert_debug, "memhalconvert", 0, "memhal converter");
}

static void memhal_convert_init(MemhalConvert* self) {
  self->state = new ConvertState();
  for (guint p = PROP_BACKEND; p <= PROP_STD; ++p) self->state->settings.text[p] = kDefaults[p];
}
