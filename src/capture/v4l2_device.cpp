// V4L2 capture nodes: opening, describing, listing.
#include "capture/v4l2_device.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/strings.hpp"

namespace memhal {

const char* to_string(CameraIo io) noexcept {
  switch (io) {
    case CameraIo::Auto: return "auto";
    case CameraIo::Mmap: return "mmap";
    case CameraIo::DmaBufImport: return "dmabuf-import";
  }
  return "?";
}

std::optional<CameraIo> camera_io_from_string(std::string_view text) noexcept {
  for (auto io : {CameraIo::Auto, CameraIo::Mmap, CameraIo::DmaBufImport}) {
    if (text == to_string(io)) return io;
  }
  return std::nullopt;
}

std::string fourcc_to_string(uint32_t code) {
  std::string text;
  for (int i = 0; i < 4; ++i) {
    const auto c = static_cast<char>((code >> (8 * i)) & 0x7f);
    text += c >= ' ' && c < 0x7f ? c : '?';
  }
  if (code & (1u << 31)) text += "-BE";
  return text;
}

namespace detail {
namespace {

constexpr std::array<V4l2Format, 17> kV4l2Formats{{
    {V4L2_PIX_FMT_NV12, PixelFormat::Nv12, false},
    {V4L2_PIX_FMT_NV12M, PixelFormat::Nv12, true},
    {V4L2_PIX_FMT_NV21, PixelFormat::Nv21, false},
    {V4L2_PIX_FMT_NV21M, PixelFormat::Nv21, true},
    {V4L2_PIX_FMT_NV16, PixelFormat::Nv16, false},
    {V4L2_PIX_FMT_NV16M, PixelFormat::Nv16, true},
    {V4L2_PIX_FMT_NV24, PixelFormat::Nv24, false},
    {V4L2_PIX_FMT_YUV420, PixelFormat::I420, false},
    {V4L2_PIX_FMT_YUV420M, PixelFormat::I420, true},
    {V4L2_PIX_FMT_YUYV, PixelFormat::Yuyv, false},
    {V4L2_PIX_FMT_UYVY, PixelFormat::Uyvy, false},
    {V4L2_PIX_FMT_VYUY, PixelFormat::Vyuy, false},
    {V4L2_PIX_FMT_GREY, PixelFormat::Grey, false},
    {V4L2_PIX_FMT_RGB24, PixelFormat::Rgb, false},
    {V4L2_PIX_FMT_BGR24, PixelFormat::Bgr, false},
    {V4L2_PIX_FMT_RGBA32, PixelFormat::Rgba, false},
    {V4L2_PIX_FMT_ABGR32, PixelFormat::Bgra, false},  // bytes B, G, R, A (RGBA32: R, G, B, A)
}};

std::string cstr(const uint8_t* text, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(text), strnlen(reinterpret_cast<const char*>(text), size));
}

std::vector<double> frame_rates(int fd, uint32_t fourcc, uint32_t width, uint32_t height) {
  std::vector<double> rates;
  for (uint32_t i = 0; i < 256; ++i) {
    v4l2_frmivalenum interval{};
    interval.index = i;
    interval.pixel_format = fourcc;
    interval.width = width;
    interval.height = height;
    if (xioctl(fd, VIDIOC_ENUM_FRAMEINTERVALS, &interval) != 0) break;
    if (interval.type == V4L2_FRMIVAL_TYPE_DISCRETE) {
      rates.push_back(fps_of(interval.discrete));
    } else {  // a range: its two ends
      rates.push_back(fps_of(interval.stepwise.max));
      rates.push_back(fps_of(interval.stepwise.min));
      break;
    }
  }
  return rates;
}

CameraInfo info_of(const std::string& path, const Device& device) {
  CameraInfo info;
  info.path = path;
  info.driver = cstr(device.caps.driver, sizeof(device.caps.driver));
  info.card = cstr(device.caps.card, sizeof(device.caps.card));
  info.bus = cstr(device.caps.bus_info, sizeof(device.caps.bus_info));
  info.multi_planar = device.mplane();
  info.formats = formats_of(device, true);
  return info;
}

}  // namespace

std::optional<V4l2Format> known_format(uint32_t fourcc) {
  for (const auto& entry : kV4l2Formats) {
    if (entry.fourcc == fourcc) return entry;
  }
  return std::nullopt;
}

int xioctl(int fd, unsigned long request, void* arg) {
  int rc;
  do {
    rc = ::ioctl(fd, request, arg);
  } while (rc != 0 && errno == EINTR);
  return rc;
}

Result<Device> open_device(const std::string& path) {
  Device device;
  device.fd = UniqueFd(::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (!device.fd) {
    const int err = errno;
    const ErrorCode code = err == EBUSY ? ErrorCode::Busy : code_for_errno(err);
    return fail_errno(code, err, "open of camera ", path, " failed");
  }
  if (xioctl(device.fd.get(), VIDIOC_QUERYCAP, &device.caps) != 0) {
    const int err = errno;
    if (err == ENODEV) return fail_errno(ErrorCode::Unavailable, err, "camera ", path, " went away");
    return fail_errno(ErrorCode::InvalidArgument, err, path, " is not a V4L2 device (VIDIOC_QUERYCAP failed)");
  }
  const uint32_t caps =
      (device.caps.capabilities & V4L2_CAP_DEVICE_CAPS) ? device.caps.device_caps : device.caps.capabilities;
  if (!(caps & (V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_VIDEO_CAPTURE_MPLANE))) {
    return fail(ErrorCode::InvalidArgument, path, " is a V4L2 device (driver ", cstr(device.caps.driver, 16),
                ", card '", cstr(device.caps.card, 32), "') but not a video capture device (device caps 0x", std::hex,
                caps, ")");
  }
  if (!(caps & V4L2_CAP_STREAMING)) {
    return fail(ErrorCode::NotImplemented, "camera ", path, " (driver ", cstr(device.caps.driver, 16),
                ") cannot stream (no V4L2_CAP_STREAMING); read() capture is not supported");
  }
  device.type = (caps & V4L2_CAP_VIDEO_CAPTURE) ? V4L2_BUF_TYPE_VIDEO_CAPTURE : V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE;
  return device;
}

double fps_of(const v4l2_fract& interval) {
  return interval.numerator == 0 ? 0.0 : static_cast<double>(interval.denominator) / interval.numerator;
}

void add_sizes(int fd, CameraFormat& format, bool rates) {
  const auto at = [&](uint32_t width, uint32_t height) {
    return CameraFrameSize{width, height,
                           rates ? frame_rates(fd, format.fourcc, width, height) : std::vector<double>{}};
  };
  for (uint32_t s = 0; s < 1024; ++s) {
    v4l2_frmsizeenum size{};
    size.index = s;
    size.pixel_format = format.fourcc;
    if (xioctl(fd, VIDIOC_ENUM_FRAMESIZES, &size) != 0) break;
    if (size.type == V4L2_FRMSIZE_TYPE_DISCRETE) {
      format.sizes.push_back(at(size.discrete.width, size.discrete.height));
    } else {  // a range: its two ends
      format.stepwise = true;
      format.sizes.push_back(at(size.stepwise.min_width, size.stepwise.min_height));
      format.sizes.push_back(at(size.stepwise.max_width, size.stepwise.max_height));
      break;
    }
  }
}

std::vector<CameraFormat> formats_of(const Device& device, bool sizes) {
  const int fd = device.fd.get();
  std::vector<CameraFormat> formats;
  for (uint32_t i = 0; i < 1024; ++i) {
    v4l2_fmtdesc desc{};
    desc.index = i;
    desc.type = device.type;
    if (xioctl(fd, VIDIOC_ENUM_FMT, &desc) != 0) break;
    CameraFormat format;
    format.fourcc = desc.pixelformat;
    if (auto known = known_format(desc.pixelformat)) {
      format.format = known->format;
      format.multi_buffer = known->multi_buffer;
    }
    format.description = cstr(desc.description, sizeof(desc.description));
    if (sizes) add_sizes(fd, format, true);
    formats.push_back(std::move(format));
  }
  return formats;
}

std::string format_list(const std::vector<CameraFormat>& formats) {
  std::string text;
  for (const auto& format : formats) {
    if (!text.empty()) text += ", ";
    text += fourcc_to_string(format.fourcc);
    if (format.format) text += cat(" (", to_string(*format.format), format.multi_buffer ? ", planes apart)" : ")");
  }
  return text.empty() ? "none" : text;
}

std::string size_list(const CameraFormat& format) {
  std::string text;
  for (const auto& size : format.sizes) {
    if (!text.empty()) text += format.stepwise ? " to " : ", ";
    text += cat(size.width, "x", size.height);
  }
  return text.empty() ? "no sizes listed" : text;
}

}  // namespace detail

std::vector<CameraInfo> V4l2Camera::list() {
  std::vector<std::pair<int, std::string>> paths;
  if (DIR* dir = ::opendir("/dev")) {
    while (const dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (name.rfind("video", 0) != 0 || name.size() == 5) continue;
      if (!std::all_of(name.begin() + 5, name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
      paths.emplace_back(std::atoi(name.c_str() + 5), "/dev/" + name);
    }
    ::closedir(dir);
  }
  std::sort(paths.begin(), paths.end());
  std::vector<CameraInfo> cameras;
  for (const auto& [number, path] : paths) {
    if (auto info = describe(path)) cameras.push_back(std::move(*info));
  }
  return cameras;
}

Result<CameraInfo> V4l2Camera::describe(const std::string& path) {
  MEMHAL_ASSIGN_OR_RETURN(auto device, detail::open_device(path));
  return detail::info_of(path, device);
}

}  // namespace memhal
