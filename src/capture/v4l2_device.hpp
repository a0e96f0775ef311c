// Opening V4L2 capture nodes and describing them (QUERYCAP, ENUM_FMT, ENUM_FRAMESIZES,
// ENUM_FRAMEINTERVALS), and the FourCCs memhal reads: what V4l2Camera::list and open share.
#pragma once

#include <linux/videodev2.h>

#include <memhal/error.hpp>
#include <memhal/unique_fd.hpp>
#include <memhal/v4l2_camera.hpp>
#include <optional>
#include <string>
#include <vector>

namespace memhal::detail {

/// The V4L2 FourCCs memhal reads, and whether their planes lie in one buffer or one each.
struct V4l2Format {
  uint32_t fourcc;
  PixelFormat format;
  bool multi_buffer;
};

/// The memhal name of V4L2 FourCC `fourcc`, or nothing when memhal has none.
std::optional<V4l2Format> known_format(uint32_t fourcc);

/// ioctl, retried on EINTR.
int xioctl(int fd, unsigned long request, void* arg);

/// The device opened and known to be a V4L2 streaming video capture node.
struct Device {
  UniqueFd fd;
  v4l2_capability caps{};
  uint32_t type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  bool mplane() const { return type == V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE; }
};

/// Opens `path` (non-blocking, close-on-exec) and checks it is a V4L2 streaming video capture
/// node. Errors as V4l2Camera::open describes them.
Result<Device> open_device(const std::string& path);

/// Frames per second of a frame interval (0 for a zero numerator).
double fps_of(const v4l2_fract& interval);
/// Adds the sizes of `format` (and, with `rates`, the frame rates at each).
void add_sizes(int fd, CameraFormat& format, bool rates);
/// The formats the device offers; with `sizes`, each with its sizes and frame rates.
std::vector<CameraFormat> formats_of(const Device& device, bool sizes);
/// "NV12 (nv12), NM12 (nv12, planes apart), ..." for error messages.
std::string format_list(const std::vector<CameraFormat>& formats);
/// "640x480, 1280x720" or "16x16 to 16384x8640" for error messages.
std::string size_list(const CameraFormat& format);

}  // namespace memhal::detail
