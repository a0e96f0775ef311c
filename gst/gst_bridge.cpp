// GstBuffer <-> Tensor without copying (see memhal/gst.hpp).
#include <gst/allocators/allocators.h>
#include <unistd.h>

#include <array>
#include <memhal/gst.hpp>
#include <memhal/memory_domain.hpp>
#include <memhal/owned_dma_buf.hpp>
#include <memhal/tensor_map.hpp>
#include <memhal/vocabulary.hpp>
#include <memory>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "gst_internal.hpp"

namespace memhal {
namespace {

template <class... Args>
Unexpected fail(ErrorCode code, Args&&... args) {
  std::ostringstream out;
  (out << ... << args);
  return unexpected(Error(code, out.str()));
}

struct FormatPair {
  GstVideoFormat gst;
  PixelFormat memhal;
};
constexpr std::array kFormats{
    FormatPair{GST_VIDEO_FORMAT_RGB, PixelFormat::Rgb},    FormatPair{GST_VIDEO_FORMAT_BGR, PixelFormat::Bgr},
    FormatPair{GST_VIDEO_FORMAT_RGBA, PixelFormat::Rgba},  FormatPair{GST_VIDEO_FORMAT_BGRA, PixelFormat::Bgra},
    FormatPair{GST_VIDEO_FORMAT_GRAY8, PixelFormat::Grey}, FormatPair{GST_VIDEO_FORMAT_YUY2, PixelFormat::Yuyv},
    FormatPair{GST_VIDEO_FORMAT_UYVY, PixelFormat::Uyvy},  FormatPair{GST_VIDEO_FORMAT_VYUY, PixelFormat::Vyuy},
    FormatPair{GST_VIDEO_FORMAT_NV12, PixelFormat::Nv12},  FormatPair{GST_VIDEO_FORMAT_NV21, PixelFormat::Nv21},
    FormatPair{GST_VIDEO_FORMAT_NV16, PixelFormat::Nv16},  FormatPair{GST_VIDEO_FORMAT_NV24, PixelFormat::Nv24},
    FormatPair{GST_VIDEO_FORMAT_I420, PixelFormat::I420},  FormatPair{GST_VIDEO_FORMAT_RGBP, PixelFormat::PlanarRgb},
};

GQuark tensor_quark() {
  return g_quark_from_static_string("memhal-tensor");
}

void delete_tensor(gpointer tensor) {
  delete static_cast<Tensor*>(tensor);
}

// Where each plane of `buffer` starts (bytes into the whole buffer) and its pitch.
struct GstPlanes {
  GstVideoFormat format = GST_VIDEO_FORMAT_UNKNOWN;
  int64_t width = 0;
  int64_t height = 0;
  uint32_t count = 0;
  std::array<gsize, GST_VIDEO_MAX_PLANES> offset{};
  std::array<gint, GST_VIDEO_MAX_PLANES> stride{};
};

GstPlanes gst_planes(GstBuffer* buffer, const GstVideoInfo& info) {
  GstPlanes planes;
  if (const GstVideoMeta* meta = gst_buffer_get_video_meta(buffer)) {
    planes.format = meta->format;
    planes.width = meta->width;
    planes.height = meta->height;
    planes.count = meta->n_planes;
    for (uint32_t i = 0; i < planes.count; ++i) {
      planes.offset[i] = meta->offset[i];
      planes.stride[i] = meta->stride[i];
    }
  } else {
    planes.format = GST_VIDEO_INFO_FORMAT(&info);
    planes.width = GST_VIDEO_INFO_WIDTH(&info);
    planes.height = GST_VIDEO_INFO_HEIGHT(&info);
    planes.count = GST_VIDEO_INFO_N_PLANES(&info);
    for (uint32_t i = 0; i < planes.count; ++i) {
      planes.offset[i] = GST_VIDEO_INFO_PLANE_OFFSET(&info, i);
      planes.stride[i] = GST_VIDEO_INFO_PLANE_STRIDE(&info, i);
    }
  }
  return planes;
}

// A held mapping of a buffer (the keep-alive of a wrapped system-memory tensor).
struct MappedBuffer {
  GstBuffer* buffer = nullptr;
  GstMapInfo map{};
  MappedBuffer() = default;
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;
  ~MappedBuffer() {
    if (buffer != nullptr) {
      gst_buffer_unmap(buffer, &map);
      gst_buffer_unref(buffer);
    }
  }
};

struct BufferRef {
  GstBuffer* buffer;
  explicit BufferRef(GstBuffer* b) : buffer(gst_buffer_ref(b)) {}
  BufferRef(const BufferRef&) = delete;
  BufferRef& operator=(const BufferRef&) = delete;
  ~BufferRef() { gst_buffer_unref(buffer); }
};

// A tensor a buffer or its first memory carries (our pool's lease, gst_buffer_from_tensor).
const Tensor* carried_tensor(GstBuffer* buffer) {
  if (auto* tensor = static_cast<const Tensor*>(gst_mini_object_get_qdata(GST_MINI_OBJECT(buffer), tensor_quark()))) {
    return tensor;
  }
  if (gst_buffer_n_memory(buffer) == 0) return nullptr;
  return static_cast<const Tensor*>(
      gst_mini_object_get_qdata(GST_MINI_OBJECT(gst_buffer_peek_memory(buffer, 0)), tensor_quark()));
}

}  // namespace

namespace gst_detail {

GQuark tensor_quark() {
  return memhal::tensor_quark();
}

const Tensor* carried_tensor(GstBuffer* buffer) {
  return memhal::carried_tensor(buffer);
}

void attach_tensor(GstMiniObject* object, const Tensor& tensor) {
  gst_mini_object_set_qdata(object, tensor_quark(), new Tensor(tensor), delete_tensor);
}

std::vector<PlaneLayout> planes_of(const Layout& layout) {
  std::vector<PlaneLayout> planes(layout.planes().begin(), layout.planes().end());
  if (!planes.empty() || !layout.pixel_format()) return planes;
  const auto shape = layout.shape();
  const auto strides = layout.strides();
  if (*layout.pixel_format() == PixelFormat::PlanarRgb || *layout.pixel_format() == PixelFormat::PlanarRgba) {
    for (int64_t c = 0; c < shape[0]; ++c) {
      planes.push_back(PlaneLayout{0, layout.offset() + c * strides[0], strides[1], shape[2], shape[1], shape[2]});
    }
  } else {
    const int64_t channels = shape.size() > 2 ? shape[2] : 1;
    const auto row_bytes = shape[1] * channels * static_cast<int64_t>(layout.element_size());
    planes.push_back(PlaneLayout{0, layout.offset(), strides[0], shape[1], shape[0], row_bytes});
  }
  return planes;
}

}  // namespace gst_detail

Result<PixelFormat> pixel_format_from_gst(GstVideoFormat format) {
  for (const auto& pair : kFormats) {
    if (pair.gst == format) return pair.memhal;
  }
  return fail(ErrorCode::NotImplemented, "GStreamer video format ", gst_video_format_to_string(format),
              " has no memhal pixel format (memhal takes ", kGstVideoFormats, ")");
}

Result<GstVideoFormat> gst_video_format_from(PixelFormat format) {
  for (const auto& pair : kFormats) {
    if (pair.memhal == format) return pair.gst;
  }
  return fail(ErrorCode::NotImplemented, "memhal pixel format ", to_string(format),
              " has no GStreamer video format here (GStreamer takes ", kGstVideoFormats, ")");
}

Result<Layout> layout_from_gst_buffer(GstBuffer* buffer, const GstVideoInfo& info) {
  const GstPlanes gp = gst_planes(buffer, info);
  MEMHAL_ASSIGN_OR_RETURN(const PixelFormat format, pixel_format_from_gst(gp.format));
  std::array<PlaneLayout, kMaxPlanes> planes{};
  if (gp.count == 0 || gp.count > kMaxPlanes) {
    return fail(ErrorCode::InvalidArgument, "GstBuffer with ", gp.count, " planes");
  }
  for (uint32_t i = 0; i < gp.count; ++i) {
    guint index = 0;
    guint length = 0;
    gsize skip = 0;
    if (!gst_buffer_find_memory(buffer, gp.offset[i], 1, &index, &length, &skip)) {
      return fail(ErrorCode::InvalidArgument, "plane ", i, " of a GstBuffer of ", gst_buffer_get_size(buffer),
                  " bytes starts at ", gp.offset[i], ", outside the buffer");
    }
    planes[i] = PlaneLayout{index, static_cast<int64_t>(skip), gp.stride[i]};
  }
  MEMHAL_ASSIGN_OR_RETURN(Layout layout,
                          Layout::image_planes(gp.width, gp.height, format, std::span(planes.data(), gp.count)));
  for (uint32_t b = 0; b < layout.buffer_count(); ++b) {
    const GstMemory* memory = gst_buffer_peek_memory(buffer, b);
    if (memory != nullptr && layout.byte_extent(b).end > static_cast<int64_t>(memory->size)) {
      return fail(ErrorCode::InvalidArgument, "GstBuffer memory ", b, " holds ", memory->size, " bytes; its planes of ",
                  gp.width, "x", gp.height, " ", gst_video_format_to_string(gp.format), " reach byte ",
                  layout.byte_extent(b).end);
    }
  }
  return layout;
}

namespace {

// An fd-backed buffer's memories imported once: the tensor over duplicates of their fds rides
// on memory 0 as qdata (it holds only its fds, never the buffer) with what it was made for, so a
// buffer that comes back (v4l2src's DMA-BUFs, recycled by its pool) is the same memhal buffer —
// one registration on a Channel, one mapping — and each hand-out holds its GstBuffer.
struct Import {
  std::vector<int64_t> key;  // memories, planes and image it was made for
  Tensor tensor;
};

GQuark import_quark() {
  return g_quark_from_static_string("memhal-import");
}

Result<Tensor> fd_tensor(GstBuffer* buffer, const Layout& layout, const std::vector<PlaneLayout>& planes) {
  std::vector<int64_t> key{planes[0].width, planes[0].height, static_cast<int64_t>(*layout.pixel_format())};
  for (uint32_t b = 0; b < layout.buffer_count(); ++b) {
    const GstMemory* memory = gst_buffer_peek_memory(buffer, b);
    key.insert(key.end(), {reinterpret_cast<intptr_t>(memory), static_cast<int64_t>(memory->offset)});
  }
  for (const auto& plane : planes) key.insert(key.end(), {plane.buffer, plane.offset, plane.pitch});
  auto* first = GST_MINI_OBJECT(gst_buffer_peek_memory(buffer, 0));
  const KeepAlive hold = KeepAlive::of(std::make_shared<BufferRef>(buffer));
  static std::mutex mutex;  // qdata replaced while another thread reads it would be freed under it
  {
    const std::lock_guard lock(mutex);
    if (const auto* import = static_cast<const Import*>(gst_mini_object_get_qdata(first, import_quark()));
        import != nullptr && import->key == key) {
      return import->tensor.held_by(hold);
    }
  }
  // Over the memories' fds (offsets from the fd's first byte).
  OwnedDmaBuf dmabuf;
  std::array<SharedFd, kMaxPlanes> fds{};
  for (uint32_t b = 0; b < layout.buffer_count(); ++b) {
    MEMHAL_ASSIGN_OR_RETURN(fds[b], SharedFd::duplicate(gst_fd_memory_get_fd(gst_buffer_peek_memory(buffer, b))));
  }
  dmabuf.plane_count = static_cast<uint32_t>(planes.size());
  for (std::size_t i = 0; i < planes.size(); ++i) {
    const GstMemory* memory = gst_buffer_peek_memory(buffer, planes[i].buffer);
    dmabuf.planes[i] =
        DmaBufPlane{fds[planes[i].buffer], planes[i].offset + static_cast<int64_t>(memory->offset), planes[i].pitch};
  }
  dmabuf.width = planes[0].width;
  dmabuf.height = planes[0].height;
  dmabuf.format = *layout.pixel_format();
  MEMHAL_ASSIGN_OR_RETURN(Tensor tensor, MemoryDomain(std::move(dmabuf)).to_tensor());
  {
    const std::lock_guard lock(mutex);
    gst_mini_object_set_qdata(first, import_quark(), new Import{std::move(key), tensor},
                              [](gpointer p) { delete static_cast<Import*>(p); });
  }
  return tensor.held_by(hold);
}

}  // namespace

Result<Tensor> tensor_from_gst_buffer(GstBuffer* buffer, const GstVideoInfo& info) {
  if (buffer == nullptr) return fail(ErrorCode::InvalidArgument, "tensor_from_gst_buffer: null GstBuffer");
  MEMHAL_ASSIGN_OR_RETURN(const Layout layout, layout_from_gst_buffer(buffer, info));
  const auto planes = gst_detail::planes_of(layout);
  if (const Tensor* carried = carried_tensor(buffer)) {
    const auto theirs = gst_detail::planes_of(carried->layout());
    const bool same = theirs.size() == planes.size() && carried->pixel_format() == layout.pixel_format() &&
                      std::equal(planes.begin(), planes.end(), theirs.begin(), [](const auto& a, const auto& b) {
                        return a.buffer == b.buffer && a.offset == b.offset && a.pitch == b.pitch &&
                               a.width == b.width && a.height == b.height;
                      });
    if (same) return *carried;
  }
  bool all_fd = true;
  for (uint32_t b = 0; b < layout.buffer_count(); ++b) {
    all_fd = all_fd && gst_is_fd_memory(gst_buffer_peek_memory(buffer, b));
  }
  if (all_fd) return fd_tensor(buffer, layout, planes);
  // System memory: one read mapping of the whole buffer, planes at their buffer offsets.
  const GstPlanes gp = gst_planes(buffer, info);
  std::array<PlaneLayout, kMaxPlanes> flat{};
  for (uint32_t i = 0; i < gp.count; ++i) flat[i] = PlaneLayout{0, static_cast<int64_t>(gp.offset[i]), gp.stride[i]};
  MEMHAL_ASSIGN_OR_RETURN(const Layout wrapped, Layout::image_planes(gp.width, gp.height, *layout.pixel_format(),
                                                                     std::span(flat.data(), gp.count)));
  auto mapped = std::make_shared<MappedBuffer>();
  if (!gst_buffer_map(buffer, &mapped->map, GST_MAP_READ)) {
    return fail(ErrorCode::Io, "tensor_from_gst_buffer: cannot map a GstBuffer of ", gst_buffer_get_size(buffer),
                " bytes for reading");
  }
  mapped->buffer = gst_buffer_ref(buffer);
  const void* data = mapped->map.data;
  return Tensor::wrap(data, wrapped, KeepAlive::of(std::move(mapped)));
}

namespace gst_detail {

// One GstMemory over buffer `b` of `tensor`: fd memory over a duplicate of its fd, or a
// wrapped read mapping. `keep` carries the tensor in the memory's qdata.
Result<GstMemory*> memory_for(const Tensor& tensor, uint32_t b, bool keep, bool writable) {
  static GstAllocator* const fd_allocator = gst_fd_allocator_new();
  static GstAllocator* const dmabuf_allocator = gst_dmabuf_allocator_new();
  const auto size = static_cast<gsize>(tensor.layout().byte_extent(b).end);
  GstMemory* memory = nullptr;
  if (tensor.fd(b) >= 0) {
    MEMHAL_ASSIGN_OR_RETURN(UniqueFd fd, tensor.clone_fd(b));
    GstAllocator* allocator = tensor.memory() == MemoryKind::DmaBuf ? dmabuf_allocator : fd_allocator;
    memory = gst_fd_allocator_alloc(allocator, fd.release(), size, GST_FD_MEMORY_FLAG_KEEP_MAPPED);
    if (memory == nullptr) return fail(ErrorCode::Io, "gst_fd_allocator_alloc refused an fd of ", size, " bytes");
    if (writable) {
      // The mapping that KEEP_MAPPED keeps is the first one: make it read-write.
      GstMapInfo map;
      if (gst_memory_map(memory, &map, GST_MAP_READWRITE)) gst_memory_unmap(memory, &map);
    }
  } else {
    if (tensor.layout().buffer_count() != 1) {
      return fail(ErrorCode::InvalidArgument, "gst_buffer_from_tensor: a memory tensor over ",
                  tensor.layout().buffer_count(), " buffers");
    }
    MEMHAL_ASSIGN_OR_RETURN(TensorMap map, tensor.map(CpuAccess::Read));
    auto* held = new TensorMap(std::move(map));
    memory =
        gst_memory_new_wrapped(GST_MEMORY_FLAG_READONLY, const_cast<std::byte*>(buffer_base(*held, tensor.layout())),
                               size, 0, size, held, [](gpointer p) { delete static_cast<TensorMap*>(p); });
    keep = false;  // the map holds the tensor
  }
  if (!writable) GST_MINI_OBJECT_FLAG_SET(memory, GST_MEMORY_FLAG_READONLY);
  if (keep) attach_tensor(GST_MINI_OBJECT(memory), tensor);
  return memory;
}

Result<GstBuffer*> buffer_over(const Tensor& tensor, const std::array<GstMemory*, kMaxPlanes>& memories,
                               bool video_meta = true) {
  MEMHAL_ASSIGN_OR_RETURN(const GstVideoFormat format, gst_video_format_from(*tensor.pixel_format()));
  const auto planes = planes_of(tensor.layout());
  std::array<gsize, GST_VIDEO_MAX_PLANES> offsets{};
  std::array<gint, GST_VIDEO_MAX_PLANES> strides{};
  std::array<gsize, kMaxPlanes> start{};  // where each memory begins in the GstBuffer
  GstBuffer* buffer = gst_buffer_new();
  gsize total = 0;
  for (uint32_t b = 0; b < tensor.layout().buffer_count(); ++b) {
    start[b] = total;
    total += memories[b]->size;
    gst_buffer_append_memory(buffer, memories[b]);
  }
  if (!video_meta) return buffer;
  for (std::size_t i = 0; i < planes.size(); ++i) {
    offsets[i] = start[planes[i].buffer] + static_cast<gsize>(planes[i].offset);
    strides[i] = static_cast<gint>(planes[i].pitch);
  }
  gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, format, static_cast<guint>(planes[0].width),
                                 static_cast<guint>(planes[0].height), static_cast<guint>(planes.size()),
                                 offsets.data(), strides.data());
  return buffer;
}

}  // namespace gst_detail

namespace {
Result<void> check_image(const Tensor& tensor) {
  if (!tensor.pixel_format()) {
    return fail(ErrorCode::InvalidArgument, "gst_buffer_from_tensor: tensor '", tensor.name(),
                "' has no pixel format; only images become GstBuffers");
  }
  MEMHAL_TRY(gst_video_format_from(*tensor.pixel_format()));
  return {};
}
}  // namespace

Result<GstBuffer*> gst_buffer_from_tensor(const Tensor& tensor) {
  MEMHAL_TRY(check_image(tensor));
  std::array<GstMemory*, kMaxPlanes> memories{};
  for (uint32_t b = 0; b < tensor.layout().buffer_count(); ++b) {
    auto memory = gst_detail::memory_for(tensor, b, true, false);
    if (!memory) {
      for (uint32_t m = 0; m < b; ++m) gst_memory_unref(memories[m]);
      return unexpected(std::move(memory).error());
    }
    memories[b] = *memory;
  }
  return gst_detail::buffer_over(tensor, memories);
}

Result<GstCaps*> gst_caps_from_tensor(const Tensor& tensor, int64_t frame_duration_ns) {
  MEMHAL_TRY(check_image(tensor));
  const GstVideoFormat format = *gst_video_format_from(*tensor.pixel_format());
  const auto planes = gst_detail::planes_of(tensor.layout());
  GstVideoInfo info;
  gst_video_info_init(&info);
  gst_video_info_set_format(&info, format, static_cast<guint>(planes[0].width), static_cast<guint>(planes[0].height));
  if (frame_duration_ns > 0) {
    gst_util_double_to_fraction(static_cast<double>(GST_SECOND) / static_cast<double>(frame_duration_ns),
                                &GST_VIDEO_INFO_FPS_N(&info), &GST_VIDEO_INFO_FPS_D(&info));
  } else {
    GST_VIDEO_INFO_FPS_N(&info) = 0;
    GST_VIDEO_INFO_FPS_D(&info) = 1;
  }
  return gst_video_info_to_caps(&info);
}

Result<GstBuffer*> GstMemoryCache::buffer_from_tensor(const Tensor& tensor, bool writable, bool video_meta) {
  MEMHAL_TRY(check_image(tensor));
  std::array<GstMemory*, kMaxPlanes> memories{};
  for (uint32_t b = 0; b < tensor.layout().buffer_count(); ++b) {
    const uint64_t id = tensor.buffer_id(b);
    auto it = memories_.find(id);
    if (it == memories_.end() || it->second->size < static_cast<gsize>(tensor.layout().byte_extent(b).end)) {
      auto memory = gst_detail::memory_for(tensor, b, tensor.fd(b) < 0, writable);
      if (!memory) {
        for (uint32_t m = 0; m < b; ++m) gst_memory_unref(memories[m]);
        return unexpected(std::move(memory).error());
      }
      ++made_;
      if (it != memories_.end()) gst_memory_unref(it->second);
      it = memories_.insert_or_assign(id, *memory).first;
      while (memories_.size() > kMaxEntries) {
        gst_memory_unref(memories_.begin()->second);
        memories_.erase(memories_.begin());
      }
    }
    memories[b] = gst_memory_ref(it->second);
  }
  MEMHAL_ASSIGN_OR_RETURN(GstBuffer * buffer, gst_detail::buffer_over(tensor, memories, video_meta));
  gst_detail::attach_tensor(GST_MINI_OBJECT(buffer), tensor);
  return buffer;
}

void GstMemoryCache::clear() noexcept {
  for (auto& [id, memory] : memories_) gst_memory_unref(memory);
  memories_.clear();
}

}  // namespace memhal
