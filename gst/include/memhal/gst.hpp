/// @file
/// `memhal/gst.hpp`: GstBuffer ⇄ `Tensor` without copying, for GStreamer programs and the
/// `memhal` plugin (`libgstmemhal.so`). Part of the plugin's own library (`memhal::gst`),
/// never of the core: only this layer includes GStreamer.
///
/// Formats that cross (GStreamer name → `PixelFormat`): RGB → Rgb, BGR → Bgr, RGBA → Rgba,
/// BGRA → Bgra, GRAY8 → Grey, YUY2 → Yuyv, UYVY → Uyvy, VYUY → Vyuy, NV12 → Nv12, NV21 → Nv21,
/// NV16 → Nv16, NV24 → Nv24, I420 → I420, RGBP → PlanarRgb (`kGstVideoFormats` spells them for
/// caps). A layout comes from the buffer's GstVideoMeta when it has one, else from the caps'
/// `GstVideoInfo`, so padded pitches and plane offsets are kept.
///
/// Thread-safety: the functions may run on any threads at once; a `GstMemoryCache` is used by
/// one thread at a time (the buffers it makes may be dropped on any thread).
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <cstdint>
#include <map>
#include <memhal/error.hpp>
#include <memhal/tensor.hpp>

namespace memhal {

/// The formats of the table above, as a caps list (a literal, for static pad templates).
#define MEMHAL_GST_VIDEO_FORMATS "{ RGB, BGR, RGBA, BGRA, GRAY8, YUY2, UYVY, VYUY, NV12, NV21, NV16, NV24, I420, RGBP }"
inline constexpr const char* kGstVideoFormats = MEMHAL_GST_VIDEO_FORMATS;

/// The memhal format of a GStreamer one; `NotImplemented` naming it when there is none.
Result<PixelFormat> pixel_format_from_gst(GstVideoFormat format);
/// The GStreamer format of a memhal one; `NotImplemented` naming it when there is none.
Result<GstVideoFormat> gst_video_format_from(PixelFormat format);

/// The image layout of `buffer` (its GstVideoMeta, else `info`), with each plane in the
/// buffer's memory that holds it (plane offsets then count from that memory's first byte).
/// `NotImplemented` for a format of no memhal equivalent, `InvalidArgument` for planes that
/// lie outside the buffer or across two memories.
Result<Layout> layout_from_gst_buffer(GstBuffer* buffer, const GstVideoInfo& info);

/// The frame in `buffer` as an image tensor, without copying. Memory of `gst_buffer_from_tensor`
/// (or of memhalsink's pool) comes back as the tensor it was made from (same `buffer_id`); fd
/// memory (memfd, DMA-BUF: `gst_is_fd_memory`) becomes a tensor over the fds
/// (`Tensor::from_planes`: Shm or DmaBuf); any other memory is mapped for reading and wrapped
/// (a Mem tensor). The tensor holds a reference to `buffer` (and, for wrapped memory, its
/// mapping) until the tensor and everything made from it are gone. Errors as
/// `layout_from_gst_buffer`, `Tensor::from_planes` and `Tensor::wrap`; `Io` when the buffer
/// cannot be mapped.
Result<Tensor> tensor_from_gst_buffer(GstBuffer* buffer, const GstVideoInfo& info);

/// A new GstBuffer (the caller owns its reference) over `tensor`'s memory, without copying:
/// one GstMemory per buffer of the tensor — a GstFdMemory (Shm) or GstDmaBufMemory (DmaBuf)
/// over a duplicate of its fd, a wrapped mapping for Mem — each keeping the tensor alive, and a
/// GstVideoMeta with the planes' offsets and pitches. The memory is flagged read-only:
/// GStreamer elements that write copy first. `InvalidArgument` for a tensor without a pixel
/// format of the table above; `NotHostAddressable` for device memory; `Io` when `dup` fails.
Result<GstBuffer*> gst_buffer_from_tensor(const Tensor& tensor);

/// The caps of an image tensor: `video/x-raw` with its format, width and height, and
/// `framerate` from `frame_duration_ns` (0/1 when unknown). The caller owns the caps.
Result<GstCaps*> gst_caps_from_tensor(const Tensor& tensor, int64_t frame_duration_ns = 0);

/// `gst_buffer_from_tensor` for a stream of tensors over a few recurring buffers (a pool, a
/// Channel's registered buffers): each memhal buffer's GstMemory is made once, mapped once, and
/// reused; each GstBuffer holds its tensor (and so a received frame's share) until it is freed.
/// Cached memory holds only its own fd, never a tensor.
class GstMemoryCache {
 public:
  GstMemoryCache() = default;
  GstMemoryCache(const GstMemoryCache&) = delete;
  GstMemoryCache& operator=(const GstMemoryCache&) = delete;
  ~GstMemoryCache() { clear(); }

  /// As `gst_buffer_from_tensor`, over cached memory. Keeps at most `kMaxEntries` buffers,
  /// dropping the oldest first. `writable`: the memory is not flagged read-only (a pool whose
  /// buffers an upstream element fills). `video_meta` false: no GstVideoMeta (a model-input
  /// tensor in `other/tensors` caps, whose bytes are dense).
  Result<GstBuffer*> buffer_from_tensor(const Tensor& tensor, bool writable = false, bool video_meta = true);
  /// How many GstMemory objects were made (not reused) so far.
  uint64_t memories_made() const noexcept { return made_; }
  void clear() noexcept;

  static constexpr std::size_t kMaxEntries = 64;

 private:
  std::map<uint64_t, GstMemory*> memories_;  // by buffer_id; ids only grow, so oldest = begin
  uint64_t made_ = 0;
};

}  // namespace memhal
