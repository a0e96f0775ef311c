// V4l2Camera: Video4Linux2 capture whose frames are the driver's buffers, re-queued only when
// the last reference to a buffer is dropped (the lease scheme TensorPool uses).
#include <fcntl.h>
#include <linux/videodev2.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memhal/pixel_format.hpp>
#include <memhal/v4l2_camera.hpp>
#include <mutex>

#include "capture/v4l2_device.hpp"
#include "core/deadline.hpp"
#include "core/strings.hpp"
#include "storage/allocator.hpp"
#include "storage/import.hpp"
#include "tensor/tensor_access.hpp"

namespace memhal {
namespace detail {
namespace {

// The image layout of one buffer as the driver set it: bytesperline per plane; planes of a
// one-buffer format follow one another, a multi-buffer format has plane i at `offsets[i]` of
// buffer i.
Result<Layout> layout_of(const CameraConfig& config, bool multi_buffer, std::span<const uint32_t> offsets) {
  const auto info = *pixel_format_info(config.format);
  std::array<PlaneLayout, kMaxPlanes> planes{};
  int64_t offset = 0;
  for (uint32_t i = 0; i < info.planes; ++i) {
    const int64_t rows =
        i == 0 ? config.height : (config.height + (1 << info.chroma_shift_y) - 1) >> info.chroma_shift_y;
    if (multi_buffer) {
      planes[i] = {i, offsets[i], config.bytesperline[i], 0, 0, 0};
    } else {
      // One bytesperline for plane 0; the others follow from the format's sample sizes.
      const int64_t pitch = i == 0 ? config.bytesperline[0]
                                   : config.bytesperline[0] * info.plane_bytes_per_pixel[i] /
                                         (info.plane_bytes_per_pixel[0] << info.chroma_shift_x);
      planes[i] = {0, offset + offsets[0], pitch, 0, 0, 0};
      offset += pitch * rows;
    }
  }
  return Layout::image_planes(config.width, config.height, config.format,
                              std::span<const PlaneLayout>(planes.data(), info.planes));
}

}  // namespace

struct CameraSlot {
  TensorAccess::Buffers storages{};  // one per memory plane
  bool queued = false;
};

struct CameraState {
  UniqueFd fd;
  uint32_t type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  uint32_t memory = V4L2_MEMORY_MMAP;
  CameraConfig config;
  bool multi_buffer = false;
  std::optional<Layout> layout;  // of one buffer, as set at open
  std::optional<int64_t> interval_ns;

  mutable std::mutex mutex;  // guards what follows, and every VIDIOC_QBUF
  std::vector<CameraSlot> slots;
  bool streaming = false;
  std::optional<Error> requeue_error;
  CameraStats stats;
  std::optional<uint32_t> last_sequence;

  bool mplane() const { return type == V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE; }
  uint32_t memory_planes() const { return static_cast<uint32_t>(config.sizeimage.size()); }

  // VIDIOC_QBUF of slot `index`; the mutex is held.
  int queue(uint32_t index) {
    v4l2_buffer buffer{};
    std::array<v4l2_plane, VIDEO_MAX_PLANES> planes{};
    buffer.type = type;
    buffer.memory = memory;
    buffer.index = index;
    const auto& storages = slots[index].storages;
    if (mplane()) {
      buffer.m.planes = planes.data();
      buffer.length = memory_planes();
      for (uint32_t p = 0; p < memory_planes() && memory == V4L2_MEMORY_DMABUF; ++p) {
        planes[p].m.fd = storages[p]->fd();
        planes[p].length = static_cast<uint32_t>(storages[p]->size());
      }
    } else if (memory == V4L2_MEMORY_DMABUF) {
      buffer.m.fd = storages[0]->fd();
      buffer.length = static_cast<uint32_t>(storages[0]->size());
    }
    if (xioctl(fd.get(), VIDIOC_QBUF, &buffer) != 0) return errno;
    slots[index].queued = true;
    return 0;
  }

  // Gives a buffer back to the driver once its last holder let go (a lease ends).
  void requeue(uint32_t index) noexcept {
    std::lock_guard lock(mutex);
    if (!streaming || index >= slots.size() || slots[index].queued) return;
    if (const int err = queue(index); err != 0 && !requeue_error) {
      requeue_error = Error(err == ENODEV ? ErrorCode::Unavailable : ErrorCode::Io,
                            cat("VIDIOC_QBUF of buffer ", index, " to camera ", config.path, " failed",
                                err == ENODEV ? " (the device went away)" : "", ": ", std::strerror(err)),
                            err);
    }
  }

  // Books a dequeued buffer: consumers hold it now. False for one the driver flagged as
  // corrupt, which goes straight back; otherwise counts the frame and the sequence gap before it.
  bool account(const v4l2_buffer& buffer) {
    std::unique_lock lock(mutex);
    slots[buffer.index].queued = false;
    if (buffer.flags & V4L2_BUF_FLAG_ERROR) {
      ++stats.errors;
      lock.unlock();
      requeue(buffer.index);
      return false;
    }
    if (last_sequence && buffer.sequence > *last_sequence + 1) stats.dropped += buffer.sequence - *last_sequence - 1;
    last_sequence = buffer.sequence;
    ++stats.frames;
    return true;
  }

  // Frees the driver's buffers: held frames keep their memory (DMA-BUF references) until dropped.
  void release_buffers() noexcept {
    if (!fd) return;
    int buffer_type = static_cast<int>(type);
    if (streaming) (void)xioctl(fd.get(), VIDIOC_STREAMOFF, &buffer_type);  // a gone device: nothing to stop
    streaming = false;
    v4l2_requestbuffers request{};
    request.type = type;
    request.memory = memory;
    // Best effort: a driver without orphaned-buffer support answers EBUSY while frames are
    // out, and closing the fd releases the queue anyway.
    (void)xioctl(fd.get(), VIDIOC_REQBUFS, &request);
    slots.clear();
  }

  ~CameraState() { release_buffers(); }
};

namespace {

// One hand-out of a capture buffer: the frame's tensor holds every plane's storage through
// aliasing pointers owned by the lease, so the buffer is re-queued when the last tensor, view,
// map, frame or share of it is dropped, and never before.
struct CaptureLease {
  std::weak_ptr<CameraState> camera;
  TensorAccess::Buffers storages;  // keeps the memory when the camera is gone first
  uint32_t index = 0;
  ~CaptureLease() {
    if (auto state = camera.lock()) state->requeue(index);
  }
};

Result<uint32_t> request_buffers(CameraState& state, uint32_t memory, uint32_t count) {
  v4l2_requestbuffers request{};
  request.count = count;
  request.type = state.type;
  request.memory = memory;
  if (xioctl(state.fd.get(), VIDIOC_REQBUFS, &request) != 0) {
    const int err = errno;
    return fail_errno(err == EBUSY ? ErrorCode::Busy : code_for_errno(err), err, "VIDIOC_REQBUFS of ", count,
                      memory == V4L2_MEMORY_DMABUF ? " DMABUF" : " MMAP", " buffers on camera ", state.config.path,
                      " failed", err == EBUSY ? " (another handle is streaming from it)" : "");
  }
  if (request.count == 0) {
    return fail(ErrorCode::Io, "VIDIOC_REQBUFS on camera ", state.config.path, " gave no buffers");
  }
  if (memory == V4L2_MEMORY_DMABUF && !(request.capabilities & V4L2_BUF_CAP_SUPPORTS_DMABUF) &&
      request.capabilities != 0) {
    return fail(ErrorCode::Unavailable, "camera ", state.config.path, " does not take DMA-BUF buffers");
  }
  state.memory = memory;
  return request.count;
}

void drop_buffers(CameraState& state) {
  v4l2_requestbuffers request{};
  request.type = state.type;
  request.memory = state.memory;
  (void)xioctl(state.fd.get(), VIDIOC_REQBUFS, &request);  // undoing a failed setup: best effort
  state.slots.clear();
}

// memhal's DMA-BUFs, one per memory plane of each buffer, queued with V4L2_MEMORY_DMABUF.
Result<void> setup_import(CameraState& state, uint32_t count) {
  MEMHAL_ASSIGN_OR_RETURN(count, request_buffers(state, V4L2_MEMORY_DMABUF, count));
  state.slots.resize(count);
  for (auto& slot : state.slots) {
    for (uint32_t p = 0; p < state.memory_planes(); ++p) {
      auto storage = allocate(state.config.sizeimage[p], MemoryKind::DmaBuf, AllocationPurpose::Image);
      if (!storage) {
        return fail(ErrorCode::Unavailable, "no DMA-BUF of ", state.config.sizeimage[p], " bytes for camera ",
                    state.config.path, ": ", storage.error().message());
      }
      slot.storages[p] = std::move(*storage);
    }
  }
  std::lock_guard lock(state.mutex);
  for (uint32_t i = 0; i < count; ++i) {
    if (const int err = state.queue(i); err != 0) {
      return fail_errno(ErrorCode::Unavailable, err, "camera ", state.config.path,
                        " refused a DMA-BUF from the DMA heap at VIDIOC_QBUF",
                        err == EFAULT ? " (it needs physically contiguous memory, which the heap does not give)" : "");
    }
  }
  return {};
}

// The driver's buffers, each plane exported (VIDIOC_EXPBUF) and imported as a DmaBuf storage.
Result<void> setup_mmap(CameraState& state, uint32_t count) {
  MEMHAL_ASSIGN_OR_RETURN(count, request_buffers(state, V4L2_MEMORY_MMAP, count));
  state.slots.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    for (uint32_t p = 0; p < state.memory_planes(); ++p) {
      v4l2_exportbuffer expbuf{};
      expbuf.type = state.type;
      expbuf.index = i;
      expbuf.plane = p;
      expbuf.flags = O_RDWR | O_CLOEXEC;
      if (xioctl(state.fd.get(), VIDIOC_EXPBUF, &expbuf) != 0) {
        return fail_errno(code_for_errno(errno), errno, "VIDIOC_EXPBUF of buffer ", i, " plane ", p, " of camera ",
                          state.config.path, " failed");
      }
      UniqueFd exported(expbuf.fd);
      MEMHAL_ASSIGN_OR_RETURN(state.slots[i].storages[p],
                              import_fd(exported.get(), MemoryKind::DmaBuf, state.config.sizeimage[p],
                                        cat("import of capture buffer ", i, " plane ", p, " of ", state.config.path)));
    }
  }
  std::lock_guard lock(state.mutex);
  for (uint32_t i = 0; i < count; ++i) {
    if (const int err = state.queue(i); err != 0) {
      return fail_errno(code_for_errno(err), err, "VIDIOC_QBUF of buffer ", i, " to camera ", state.config.path,
                        " failed");
    }
  }
  return {};
}

// Picks the FourCC to ask for, or says what the device offers instead.
Result<uint32_t> choose_fourcc(const std::string& path, const Device& device, const std::vector<CameraFormat>& formats,
                               const CameraOptions& options) {
  const auto offered = [&](uint32_t fourcc) {
    return std::any_of(formats.begin(), formats.end(), [&](const auto& f) { return f.fourcc == fourcc; });
  };
  if (options.fourcc != 0) {
    if (!offered(options.fourcc)) {
      return fail(ErrorCode::InvalidArgument, "camera ", path, " does not offer format ",
                  fourcc_to_string(options.fourcc), "; it offers ", format_list(formats));
    }
    if (!known_format(options.fourcc)) {
      return fail(ErrorCode::NotImplemented, "camera ", path, " format ", fourcc_to_string(options.fourcc),
                  " has no memhal pixel format; formats memhal reads: ", format_list(formats));
    }
    return options.fourcc;
  }
  if (options.format) {
    for (const auto& format : formats) {
      if (format.format == options.format) return format.fourcc;
    }
    return fail(ErrorCode::InvalidArgument, "camera ", path, " does not offer format ", to_string(*options.format),
                "; it offers ", format_list(formats));
  }
  v4l2_format current{};
  current.type = device.type;
  if (xioctl(device.fd.get(), VIDIOC_G_FMT, &current) == 0) {
    const uint32_t fourcc = device.mplane() ? current.fmt.pix_mp.pixelformat : current.fmt.pix.pixelformat;
    if (known_format(fourcc)) return fourcc;
  }
  for (const auto& format : formats) {
    if (format.format) return format.fourcc;
  }
  return fail(ErrorCode::NotImplemented, "camera ", path, " offers no format memhal reads: ", format_list(formats));
}

Result<void> check_size(const std::string& path, const CameraFormat& format, uint32_t width, uint32_t height) {
  if (format.sizes.empty()) return {};
  bool ok = false;
  if (format.stepwise) {
    const auto &lo = format.sizes.front(), &hi = format.sizes.back();
    ok = width >= lo.width && width <= hi.width && height >= lo.height && height <= hi.height;
  } else {
    ok = std::any_of(format.sizes.begin(), format.sizes.end(),
                     [&](const auto& s) { return s.width == width && s.height == height; });
  }
  if (ok) return {};
  return fail(ErrorCode::InvalidArgument, "camera ", path, " does not offer ", width, "x", height, " in ",
              fourcc_to_string(format.fourcc), "; it offers ", size_list(format));
}

// VIDIOC_S_FMT with the chosen format and size; fills the negotiated part of the config.
Result<void> set_format(CameraState& state, uint32_t fourcc, const CameraOptions& options) {
  const std::string& path = state.config.path;
  v4l2_format format{};
  format.type = state.type;
  if (xioctl(state.fd.get(), VIDIOC_G_FMT, &format) != 0) {
    return fail_errno(code_for_errno(errno), errno, "VIDIOC_G_FMT on camera ", path, " failed");
  }
  auto& pix = format.fmt.pix;
  auto& mp = format.fmt.pix_mp;
  // The driver derives pitches and sizes afresh from zero; a previous format's would stick.
  if (state.mplane()) {
    for (auto& plane : mp.plane_fmt) plane = {};
    mp.pixelformat = fourcc;
    if (options.width) mp.width = options.width;
    if (options.height) mp.height = options.height;
    mp.field = V4L2_FIELD_NONE;
  } else {
    pix.bytesperline = 0;
    pix.sizeimage = 0;
    pix.pixelformat = fourcc;
    if (options.width) pix.width = options.width;
    if (options.height) pix.height = options.height;
    pix.field = V4L2_FIELD_NONE;
  }
  if (xioctl(state.fd.get(), VIDIOC_S_FMT, &format) != 0) {
    const int err = errno;
    return fail_errno(err == EBUSY ? ErrorCode::Busy : code_for_errno(err), err, "VIDIOC_S_FMT ",
                      fourcc_to_string(fourcc), " on camera ", path, " failed",
                      err == EBUSY ? " (another handle is streaming from it)" : "");
  }
  const uint32_t got = state.mplane() ? mp.pixelformat : pix.pixelformat;
  auto& config = state.config;
  config.width = state.mplane() ? mp.width : pix.width;
  config.height = state.mplane() ? mp.height : pix.height;
  if (got != fourcc || (options.width && config.width != options.width) ||
      (options.height && config.height != options.height)) {
    return fail(ErrorCode::InvalidArgument, "camera ", path, " set ", fourcc_to_string(got), " ", config.width, "x",
                config.height, " when asked for ", fourcc_to_string(fourcc), " ", options.width, "x", options.height);
  }
  const auto known = known_format(got);
  config.fourcc = got;
  config.format = known->format;
  state.multi_buffer = known->multi_buffer;
  const auto info = *pixel_format_info(config.format);
  if (state.mplane()) {
    if (mp.num_planes == 0 || mp.num_planes > kMaxPlanes || (known->multi_buffer && mp.num_planes != info.planes)) {
      return fail(ErrorCode::Io, "camera ", path, " gave ", int{mp.num_planes}, " planes for ", fourcc_to_string(got));
    }
    for (uint32_t p = 0; p < mp.num_planes; ++p) {
      config.bytesperline.push_back(mp.plane_fmt[p].bytesperline);
      config.sizeimage.push_back(mp.plane_fmt[p].sizeimage);
    }
  } else {
    config.bytesperline.push_back(pix.bytesperline);
    config.sizeimage.push_back(pix.sizeimage);
  }
  const std::array<uint32_t, kMaxPlanes> no_offsets{};
  MEMHAL_ASSIGN_OR_RETURN(state.layout, layout_of(config, state.multi_buffer, no_offsets));
  for (uint32_t p = 0; p < state.layout->buffer_count(); ++p) {
    if (state.layout->byte_extent(p).end > config.sizeimage[p]) {
      return fail(ErrorCode::Io, "camera ", path, " sizeimage ", config.sizeimage[p], " of plane ", p,
                  " is smaller than its ", fourcc_to_string(got), " image needs (", state.layout->byte_extent(p).end,
                  " bytes)");
    }
  }
  return {};
}

void set_frame_rate(CameraState& state, double fps) {
  v4l2_streamparm parm{};
  parm.type = state.type;
  if (fps > 0) {
    parm.parm.capture.timeperframe = {1000, static_cast<uint32_t>(std::lround(fps * 1000))};
    // A driver without frame-rate control keeps its own: what it reports below is the truth.
    (void)xioctl(state.fd.get(), VIDIOC_S_PARM, &parm);
  }
  parm = {};
  parm.type = state.type;
  if (xioctl(state.fd.get(), VIDIOC_G_PARM, &parm) == 0 && (parm.parm.capture.capability & V4L2_CAP_TIMEPERFRAME)) {
    state.config.fps = fps_of(parm.parm.capture.timeperframe);
  }
  if (state.config.fps > 0) state.interval_ns = std::llround(1e9 / state.config.fps);
}

// A buffer the driver filled, dequeued: the caller owns it until it is re-queued.
struct Dequeued {
  v4l2_buffer buffer{};
  std::array<v4l2_plane, VIDEO_MAX_PLANES> planes{};  // buffer.m.planes points here
};

// Waits until `deadline` for a filled buffer and dequeues it. `Busy` at once when consumers hold
// every buffer, and when none came in time.
Result<Dequeued> dequeue(CameraState& state, Clock::time_point deadline, std::chrono::milliseconds timeout) {
  const std::string& path = state.config.path;
  const auto total = static_cast<uint32_t>(state.slots.size());
  for (;;) {
    uint32_t queued = 0;
    {
      std::lock_guard lock(state.mutex);
      if (state.requeue_error) return unexpected(*state.requeue_error);
      for (const auto& slot : state.slots) queued += slot.queued ? 1 : 0;
    }
    if (queued == 0) {
      return fail(ErrorCode::Busy, "camera ", path, ": consumers hold all ", total, " capture buffers (", total,
                  " held); drop frames to let capture go on");
    }
    pollfd pfd{state.fd.get(), POLLIN, 0};
    const int ready = ::poll(&pfd, 1, poll_timeout_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return fail_errno(ErrorCode::Io, errno, "poll of camera ", path, " failed");
    if (ready == 0) {
      return fail(ErrorCode::Busy, "camera ", path, " gave no frame within ", timeout.count(), " ms (", queued, " of ",
                  total, " buffers queued, ", total - queued, " held)");
    }
    Dequeued dequeued;
    dequeued.buffer.type = state.type;
    dequeued.buffer.memory = state.memory;
    if (state.mplane()) {
      dequeued.buffer.m.planes = dequeued.planes.data();
      dequeued.buffer.length = state.memory_planes();
    }
    if (xioctl(state.fd.get(), VIDIOC_DQBUF, &dequeued.buffer) != 0) {
      const int err = errno;
      if (err == EAGAIN && !(pfd.revents & (POLLERR | POLLHUP))) continue;
      if (err == ENODEV) return fail_errno(ErrorCode::Unavailable, err, "camera ", path, " went away while streaming");
      return fail_errno(ErrorCode::Io, err, "VIDIOC_DQBUF from camera ", path, " failed");
    }
    if (dequeued.buffer.index >= total) {
      return fail(ErrorCode::Io, "camera ", path, " dequeued buffer ", dequeued.buffer.index, " of ", total);
    }
    return dequeued;
  }
}

// The frame over a dequeued buffer: its tensor holds every plane's storage through a lease, so
// the buffer goes back to the driver when the last holder of the frame's memory drops it.
Result<Frame> frame_of(const std::shared_ptr<CameraState>& camera, const Dequeued& dequeued) {
  const CameraState& state = *camera;
  auto lease = std::make_shared<CaptureLease>();
  lease->camera = camera;
  lease->storages = state.slots[dequeued.buffer.index].storages;
  lease->index = dequeued.buffer.index;
  TensorAccess::Buffers buffers{};
  for (std::size_t p = 0; p < buffers.size(); ++p) {
    if (lease->storages[p]) buffers[p] = std::shared_ptr<Storage>(lease, lease->storages[p].get());
  }
  lease.reset();  // the buffers hold it now
  Layout layout = *state.layout;
  const auto& planes = dequeued.planes;
  if (state.mplane() && state.multi_buffer &&
      std::any_of(planes.begin(), planes.end(), [](const v4l2_plane& p) { return p.data_offset != 0; })) {
    std::array<uint32_t, kMaxPlanes> offsets{};
    for (uint32_t p = 0; p < state.memory_planes(); ++p) offsets[p] = planes[p].data_offset;
    MEMHAL_ASSIGN_OR_RETURN(layout, layout_of(state.config, true, offsets));
    MEMHAL_TRY(check_layout_fits(layout, buffers));
  }
  auto tensor = TensorAccess::make(std::move(layout), std::move(buffers));
  MEMHAL_ASSIGN_OR_RETURN(auto payload, MemoryDomain::from_tensor(tensor));
  const auto& stamp = dequeued.buffer.timestamp;
  FrameTiming timing{static_cast<int64_t>(stamp.tv_sec) * 1'000'000'000 + static_cast<int64_t>(stamp.tv_usec) * 1000,
                     std::nullopt, state.interval_ns};
  return Frame{std::move(payload), timing, dequeued.buffer.sequence, {}};
}

}  // namespace
}  // namespace detail

Result<V4l2Camera> V4l2Camera::open(const std::string& path, const CameraOptions& options) {
  if (options.buffers == 0) {
    return detail::fail(ErrorCode::InvalidArgument, "camera ", path, ": a capture needs at least one buffer");
  }
  if (options.buffers > VIDEO_MAX_FRAME) {
    return detail::fail(ErrorCode::InvalidArgument, "camera ", path, ": ", options.buffers,
                        " buffers asked for, V4L2 allows at most ", VIDEO_MAX_FRAME);
  }
  if (!(options.fps >= 0 && options.fps < 1e6)) {
    return detail::fail(ErrorCode::InvalidArgument, "camera ", path, ": frame rate ", options.fps, " is out of range");
  }
  MEMHAL_ASSIGN_OR_RETURN(auto device, detail::open_device(path));
  const auto formats = detail::formats_of(device, false);  // sizes only for the chosen one
  MEMHAL_ASSIGN_OR_RETURN(const uint32_t fourcc, detail::choose_fourcc(path, device, formats, options));
  if (options.width || options.height) {
    if (!options.width || !options.height) {
      return detail::fail(ErrorCode::InvalidArgument, "camera ", path, ": give both width and height (got ",
                          options.width, "x", options.height, ")");
    }
    auto format = *std::find_if(formats.begin(), formats.end(), [&](const auto& f) { return f.fourcc == fourcc; });
    detail::add_sizes(device.fd.get(), format, false);
    MEMHAL_TRY(detail::check_size(path, format, options.width, options.height));
  }
  auto state = std::make_shared<detail::CameraState>();
  state->fd = std::move(device.fd);
  state->type = device.type;
  state->config.path = path;
  state->config.multi_planar = device.mplane();
  MEMHAL_TRY(detail::set_format(*state, fourcc, options));
  detail::set_frame_rate(*state, options.fps);

  if (options.io == CameraIo::Auto || options.io == CameraIo::DmaBufImport) {
    auto imported = detail::setup_import(*state, options.buffers);
    if (imported) {
      state->config.io = CameraIo::DmaBufImport;
    } else if (options.io == CameraIo::DmaBufImport || imported.error().code() == ErrorCode::Busy) {
      return unexpected(std::move(imported).error());
    } else {
      state->config.io_notes = "dmabuf-import: " + imported.error().message();
      detail::drop_buffers(*state);
    }
  }
  if (state->slots.empty()) {
    MEMHAL_TRY(detail::setup_mmap(*state, options.buffers));
    state->config.io = CameraIo::Mmap;
  }
  state->config.buffers = static_cast<uint32_t>(state->slots.size());
  int type = static_cast<int>(state->type);
  if (detail::xioctl(state->fd.get(), VIDIOC_STREAMON, &type) != 0) {
    const int err = errno;
    return detail::fail_errno(err == EBUSY ? ErrorCode::Busy : detail::code_for_errno(err), err,
                              "VIDIOC_STREAMON on camera ", path, " failed");
  }
  state->streaming = true;
  return V4l2Camera(std::move(state));
}

V4l2Camera::V4l2Camera(std::shared_ptr<detail::CameraState> state) noexcept : state_(std::move(state)) {}
V4l2Camera::V4l2Camera(V4l2Camera&&) noexcept = default;
V4l2Camera& V4l2Camera::operator=(V4l2Camera&&) noexcept = default;
V4l2Camera::~V4l2Camera() = default;

Result<Frame> V4l2Camera::next_frame(std::chrono::milliseconds timeout) {
  if (!state_) return detail::fail(ErrorCode::InvalidArgument, "next_frame on a moved-from camera");
  const auto deadline = detail::deadline_after(timeout);
  for (;;) {
    MEMHAL_ASSIGN_OR_RETURN(auto dequeued, detail::dequeue(*state_, deadline, timeout));
    if (state_->account(dequeued.buffer)) return detail::frame_of(state_, dequeued);
  }
}

const CameraConfig& V4l2Camera::config() const noexcept {
  static const CameraConfig empty;
  return state_ ? state_->config : empty;
}

CameraStats V4l2Camera::stats() const noexcept {
  if (!state_) return {};
  std::lock_guard lock(state_->mutex);
  CameraStats stats = state_->stats;
  for (const auto& slot : state_->slots) (slot.queued ? stats.queued : stats.held) += 1;
  return stats;
}

int V4l2Camera::fd() const noexcept {
  return state_ ? state_->fd.get() : -1;
}

}  // namespace memhal
