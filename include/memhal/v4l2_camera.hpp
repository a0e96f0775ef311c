/// @file
/// `V4l2Camera`: a Video4Linux2 capture device whose frames are the driver's capture buffers.
///
/// `next_frame` hands out the buffer the driver just filled as a `Frame` — no byte is copied:
/// the payload is an image tensor over that buffer, with the driver's `bytesperline` and plane
/// offsets, its monotonic timestamp (`timing.pts`, nanoseconds of `CLOCK_MONOTONIC`) and its
/// sequence number. The buffer goes back to the driver (`VIDIOC_QBUF`) only when the last
/// tensor, view, map, frame, `Tee` branch and `Channel` share of it has been dropped; until
/// then the driver cannot write to it. When consumers hold every buffer, `next_frame` answers
/// `Busy` at once instead of waiting or overwriting.
///
/// Buffers come from one of two places (`CameraIo`): `Mmap` — the driver allocates them and
/// memhal imports each as a DMA-BUF (`VIDIOC_EXPBUF`); `DmaBufImport` — memhal allocates
/// DMA-BUFs (the DMA heaps) and queues them with `V4L2_MEMORY_DMABUF`, so the camera writes into
/// memory memhal owns. `Auto` tries `DmaBufImport` and falls back to `Mmap`, keeping the reason
/// in `CameraConfig::io_notes` (a driver that needs physically contiguous memory refuses heap
/// buffers at the first `VIDIOC_QBUF`).
///
/// Thread-safety: one thread at a time calls a camera's methods; the frames it hands out may be
/// used and dropped on any threads at once. A camera destroyed while frames are out stops the
/// stream; those frames stay readable until they are dropped.
#pragma once

#include <chrono>
#include <cstdint>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/frame.hpp>
#include <memhal/vocabulary.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memhal {

namespace detail {
struct CameraState;
}

/// Where capture buffers come from.
enum class CameraIo : uint8_t {
  Auto,          ///< `DmaBufImport` where a DMA heap exists and the driver takes its buffers, else `Mmap`
  Mmap,          ///< driver buffers, exported as DMA-BUFs (`VIDIOC_EXPBUF`)
  DmaBufImport,  ///< memhal's DMA-BUFs queued to the driver (`V4L2_MEMORY_DMABUF`)
};
/// "auto", "mmap", "dmabuf-import".
MEMHAL_EXPORT const char* to_string(CameraIo io) noexcept;
/// The `CameraIo` spelled `text` (as `to_string` writes it), or nothing.
MEMHAL_EXPORT std::optional<CameraIo> camera_io_from_string(std::string_view text) noexcept;

/// The FourCC `code` as its four characters ("NV12", "YUYV"; a big-endian code ends in "-BE").
MEMHAL_EXPORT std::string fourcc_to_string(uint32_t code);

/// One frame size a device offers for a format, with the frame rates it offers there (frames
/// per second; empty when the driver does not enumerate them).
struct CameraFrameSize {
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<double> fps;
};

/// One format a device offers.
struct CameraFormat {
  uint32_t fourcc = 0;                 ///< the V4L2 FourCC (`V4L2_PIX_FMT_*`)
  std::optional<PixelFormat> format;   ///< memhal's name for it, when memhal has one
  bool multi_buffer = false;           ///< its planes lie in separate buffers (NV12M, YUV420M)
  std::string description;             ///< the driver's ("Y/UV 4:2:0")
  std::vector<CameraFrameSize> sizes;  ///< discrete sizes, or the two ends of a stepwise range
  bool stepwise = false;               ///< any size between `sizes` front and back (in steps) works
};

/// A capture device as `V4l2Camera::list` finds it.
struct CameraInfo {
  std::string path;           ///< "/dev/video0"
  std::string driver;         ///< "uvcvideo", "vivid"
  std::string card;           ///< the device's name
  std::string bus;            ///< "usb-0000:00:14.0-1", "platform:vivid-000"
  bool multi_planar = false;  ///< uses the multi-planar API (`V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE`)
  std::vector<CameraFormat> formats;
};

/// What `V4l2Camera::open` asks for. A zero or empty field keeps what the device has now.
struct CameraOptions {
  uint32_t width = 0;
  uint32_t height = 0;
  /// The pixel format; for a format a device offers both contiguously and with planes in
  /// separate buffers (NV12 and NV12M), the one it lists first. Empty: the device's current
  /// format when memhal knows it, else the first it offers that memhal knows.
  std::optional<PixelFormat> format = std::nullopt;
  uint32_t fourcc = 0;   ///< a V4L2 FourCC instead of `format` (e.g. NV12M: 'NM12'); wins when set
  double fps = 0;        ///< frames per second (`VIDIOC_S_PARM`); 0 keeps the device's
  uint32_t buffers = 4;  ///< capture buffers to ask for (the driver may give more)
  CameraIo io = CameraIo::Auto;
};

/// What was negotiated: the driver may adjust what was asked for (frame rate, buffer count).
struct CameraConfig {
  std::string path;
  uint32_t width = 0;
  uint32_t height = 0;
  PixelFormat format = PixelFormat::Nv12;
  uint32_t fourcc = 0;
  double fps = 0;  ///< 0 when the driver does not say
  uint32_t buffers = 0;
  CameraIo io = CameraIo::Mmap;  ///< `Mmap` or `DmaBufImport`, never `Auto`
  std::string io_notes;          ///< why `Auto` did not get `DmaBufImport`; empty otherwise
  bool multi_planar = false;
  std::vector<uint32_t> bytesperline;  ///< per plane, as the driver set it
  std::vector<uint32_t> sizeimage;     ///< per memory plane (buffer), as the driver set it
};

/// Counters since `open`.
struct CameraStats {
  uint64_t frames = 0;   ///< frames handed out by `next_frame`
  uint64_t dropped = 0;  ///< frames the driver skipped: gaps in its sequence numbers
  uint64_t errors = 0;   ///< buffers the driver flagged `V4L2_BUF_FLAG_ERROR` (re-queued, not handed out)
  uint32_t held = 0;     ///< buffers consumers hold now
  uint32_t queued = 0;   ///< buffers with the driver now
};

class MEMHAL_EXPORT V4l2Camera {
 public:
  /// Every video capture device under /dev (`/dev/video*` whose device capabilities include
  /// video capture and streaming), with its formats (`VIDIOC_ENUM_FMT`), frame sizes
  /// (`VIDIOC_ENUM_FRAMESIZES`) and frame rates (`VIDIOC_ENUM_FRAMEINTERVALS`). Devices that
  /// cannot be opened (busy with exclusive access, no permission) are left out.
  static std::vector<CameraInfo> list();
  /// The same description of one device. Errors as `open`.
  static Result<CameraInfo> describe(const std::string& path);

  /// Opens `path`, negotiates the format, frame rate and buffers, queues every buffer and
  /// starts streaming. Errors: `Unavailable` for a path that does not exist or a device gone
  /// (`ENODEV`); `PermissionDenied`; `InvalidArgument` for something that is not a V4L2 video
  /// capture device (the message says what it is), a format or size the device does not offer
  /// (the message lists those it does), a zero buffer count; `Busy` when another handle is
  /// streaming from the device (`EBUSY`); with `io` pinned to `DmaBufImport`, `Unavailable`
  /// when no DMA-BUF can be allocated or the driver refuses it (the message says why);
  /// `Io` for other driver failures, naming the ioctl. Nothing is leaked on failure.
  static Result<V4l2Camera> open(const std::string& path, const CameraOptions& options = {});

  V4l2Camera(V4l2Camera&&) noexcept;
  V4l2Camera& operator=(V4l2Camera&&) noexcept;
  V4l2Camera(const V4l2Camera&) = delete;
  V4l2Camera& operator=(const V4l2Camera&) = delete;
  /// Stops streaming and closes the device; frames still out stay valid until dropped.
  ~V4l2Camera();

  /// The next filled buffer as a frame, waiting up to `timeout` (0: only one already there).
  /// `Busy` at once when consumers hold every buffer (the message says how many), and when no
  /// frame came within `timeout` (a stalled camera); `Unavailable` when the device went away
  /// (`ENODEV`, an unplugged camera); `Io` for other driver failures. `InvalidArgument` on a
  /// moved-from camera.
  Result<Frame> next_frame(std::chrono::milliseconds timeout);

  const CameraConfig& config() const noexcept;
  CameraStats stats() const noexcept;
  /// The device's fd, borrowed (for controls, `VIDIOC_S_CTRL`); -1 on a moved-from camera.
  int fd() const noexcept;

 private:
  explicit V4l2Camera(std::shared_ptr<detail::CameraState> state) noexcept;
  std::shared_ptr<detail::CameraState> state_;
};

}  // namespace memhal
