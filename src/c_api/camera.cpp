// The C API of V4l2Camera: memhal_camera_*.
#include <algorithm>
#include <cstring>
#include <vector>

#include "c_api/c_api.hpp"

using namespace memhal;
using memhal::c_api::fail;
using memhal::c_api::guarded;

// The C constants are CameraIo's values.
static_assert(MEMHAL_CAMERA_IO_AUTO == static_cast<int>(CameraIo::Auto));
static_assert(MEMHAL_CAMERA_IO_MMAP == static_cast<int>(CameraIo::Mmap));
static_assert(MEMHAL_CAMERA_IO_DMABUF_IMPORT == static_cast<int>(CameraIo::DmaBufImport));

namespace {

template <std::size_t N>
void copy_string(char (&dst)[N], const std::string& src) {
  const std::size_t n = std::min(N - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

}  // namespace

extern "C" {

memhal_camera_options_t memhal_camera_options_default(void) {
  return memhal_camera_options_t{0, 0, -1, 0, 0.0, 4, MEMHAL_CAMERA_IO_AUTO};
}

int memhal_camera_list(memhal_camera_info_t** out, size_t* count) {
  c_api::clear(out);
  if (count != nullptr) *count = 0;
  return guarded([&] {
    MEMHAL_C_REQUIRE(out != nullptr && count != nullptr, "memhal_camera_list: NULL argument");
    const auto cameras = V4l2Camera::list();
    if (cameras.empty()) return MEMHAL_OK;
    auto* list = new memhal_camera_info_t[cameras.size()]();
    for (std::size_t i = 0; i < cameras.size(); ++i) {
      copy_string(list[i].path, cameras[i].path);
      copy_string(list[i].driver, cameras[i].driver);
      copy_string(list[i].card, cameras[i].card);
      copy_string(list[i].bus, cameras[i].bus);
      list[i].multi_planar = cameras[i].multi_planar ? 1 : 0;
      list[i].format_count = cameras[i].formats.size();
    }
    *out = list;
    *count = cameras.size();
    return MEMHAL_OK;
  });
}

void memhal_camera_list_free(memhal_camera_info_t* list) {
  delete[] list;
}

int memhal_camera_formats(const char* path, memhal_camera_format_t** out, size_t* count) {
  c_api::clear(out);
  if (count != nullptr) *count = 0;
  return guarded([&] {
    MEMHAL_C_REQUIRE(path != nullptr && out != nullptr && count != nullptr, "memhal_camera_formats: NULL argument");
    auto info = V4l2Camera::describe(path);
    if (!info) return fail(info.error());
    std::vector<memhal_camera_format_t> entries;
    for (const CameraFormat& format : info->formats) {
      for (const CameraFrameSize& size : format.sizes) {
        memhal_camera_format_t entry{};
        entry.fourcc = format.fourcc;
        entry.format = format.format ? static_cast<int32_t>(code(*format.format)) : -1;
        entry.multi_buffer = format.multi_buffer ? 1 : 0;
        entry.stepwise = format.stepwise ? 1 : 0;
        copy_string(entry.description, format.description);
        entry.width = size.width;
        entry.height = size.height;
        entry.fps_count = std::min(size.fps.size(), std::size(entry.fps));
        std::copy_n(size.fps.begin(), entry.fps_count, entry.fps);
        entries.push_back(entry);
      }
    }
    if (entries.empty()) return MEMHAL_OK;
    *out = new memhal_camera_format_t[entries.size()];
    std::copy(entries.begin(), entries.end(), *out);
    *count = entries.size();
    return MEMHAL_OK;
  });
}

void memhal_camera_formats_free(memhal_camera_format_t* formats) {
  delete[] formats;
}

int memhal_camera_open(const char* path, const memhal_camera_options_t* options, memhal_camera_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(path != nullptr && out != nullptr, "memhal_camera_open: NULL argument");
    const memhal_camera_options_t given = options != nullptr ? *options : memhal_camera_options_default();
    CameraOptions opts;
    opts.width = given.width;
    opts.height = given.height;
    if (given.format != -1) {
      MEMHAL_C_REQUIRE(given.format >= 0,
                       "memhal_camera_open: pixel format code " + std::to_string(given.format) + " is unknown");
      auto format = c_api::checked<PixelFormat>(static_cast<uint32_t>(given.format), "pixel format");
      if (!format) return static_cast<int>(ErrorCode::InvalidArgument);
      opts.format = *format;
    }
    opts.fourcc = given.fourcc;
    opts.fps = given.fps;
    opts.buffers = given.buffers;
    if (given.io < MEMHAL_CAMERA_IO_AUTO || given.io > MEMHAL_CAMERA_IO_DMABUF_IMPORT) {
      return fail(ErrorCode::InvalidArgument, "camera io code " + std::to_string(given.io) + " is unknown");
    }
    opts.io = static_cast<CameraIo>(given.io);
    auto camera = V4l2Camera::open(path, opts);
    if (!camera) return fail(camera.error());
    *out = new memhal_camera{std::move(*camera)};
    return MEMHAL_OK;
  });
}

int memhal_camera_next_frame(memhal_camera_t* camera, int timeout_ms, memhal_frame_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(camera != nullptr && out != nullptr, "memhal_camera_next_frame: NULL argument");
    const auto timeout = timeout_ms < 0 ? std::chrono::milliseconds::max() : std::chrono::milliseconds(timeout_ms);
    auto frame = camera->camera.next_frame(timeout);
    if (!frame) return fail(frame.error());
    *out = new memhal_frame{std::move(*frame)};
    return MEMHAL_OK;
  });
}

int memhal_camera_get_config(const memhal_camera_t* camera, memhal_camera_config_t* out) {
  return c_api::read_field(camera, out, "memhal_camera_get_config", [](const memhal_camera& c) {
    const auto& config = c.camera.config();
    return memhal_camera_config_t{
        config.width, config.height,  static_cast<int32_t>(code(config.format)), config.fourcc,
        config.fps,   config.buffers, static_cast<int32_t>(config.io),           config.multi_planar ? 1 : 0};
  });
}

const char* memhal_camera_io_notes(const memhal_camera_t* camera) {
  return camera != nullptr ? camera->camera.config().io_notes.c_str() : "";
}

int memhal_camera_get_stats(const memhal_camera_t* camera, memhal_camera_stats_t* out) {
  return c_api::read_field(camera, out, "memhal_camera_get_stats", [](const memhal_camera& c) {
    const auto stats = c.camera.stats();
    return memhal_camera_stats_t{stats.frames, stats.dropped, stats.errors, stats.held, stats.queued};
  });
}

void memhal_camera_free(memhal_camera_t* camera) {
  delete camera;
}

}  // extern "C"
