// DMA-BUFs made and consumed by real drivers nobody here wrote: the kernel's virtual camera
// (vivid: V4L2 capture, VIDIOC_EXPBUF, V4L2_MEMORY_DMABUF) and virtual GEM device (vgem: dumb
// buffers exported with PRIME). They exist only in the DMA-heap VM started with
// `--modules vivid,vgem`; elsewhere these tests skip with the reason.
#include <fcntl.h>
#include <libdrm/drm.h>
#include <libdrm/drm_mode.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <memhal/memory.hpp>
#include <memhal/tensor.hpp>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace memhal {
namespace {

constexpr int kWidth = 640, kHeight = 480;

#define SKIP_WITHOUT(found, what)                                                                  \
  do {                                                                                             \
    if (!(found)) {                                                                                \
      if (std::getenv("MEMHAL_TEST_REQUIRE_FOREIGN")) FAIL() << what << " not found";              \
      GTEST_SKIP() << what << " not found (it runs in the DMA-heap VM with --modules vivid,vgem)"; \
    }                                                                                              \
  } while (false)

int xioctl(int fd, unsigned long request, void* arg) {
  int rc;
  do {
    rc = ::ioctl(fd, request, arg);
  } while (rc != 0 && errno == EINTR);
  return rc;
}

// The vivid capture node, opened, with NV12 640x480 set; invalid when there is none.
struct Camera {
  UniqueFd fd;
  v4l2_pix_format format{};

  static Camera open_vivid() {
    Camera camera;
    for (int i = 0; i < 16 && !camera.fd; ++i) {
      UniqueFd fd(::open(("/dev/video" + std::to_string(i)).c_str(), O_RDWR | O_CLOEXEC));
      v4l2_capability caps{};
      if (!fd || xioctl(fd.get(), VIDIOC_QUERYCAP, &caps) != 0) continue;
      if (std::string(reinterpret_cast<const char*>(caps.driver)) != "vivid") continue;
      if (!(caps.device_caps & V4L2_CAP_VIDEO_CAPTURE) || !(caps.device_caps & V4L2_CAP_STREAMING)) continue;
      v4l2_format format{};
      format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
      format.fmt.pix.width = kWidth;
      format.fmt.pix.height = kHeight;
      format.fmt.pix.pixelformat = V4L2_PIX_FMT_NV12;
      format.fmt.pix.field = V4L2_FIELD_NONE;
      if (xioctl(fd.get(), VIDIOC_S_FMT, &format) != 0 || format.fmt.pix.pixelformat != V4L2_PIX_FMT_NV12) continue;
      camera.format = format.fmt.pix;
      camera.fd = std::move(fd);
    }
    return camera;
  }

  // The layout of one captured frame: NV12, chroma right after the luma rows.
  Layout layout() const {
    const int64_t pitch = format.bytesperline;
    PlaneLayout planes[2] = {{0, 0, pitch, 0, 0, 0}, {0, pitch * format.height, pitch, 0, 0, 0}};
    return Layout::image_planes(format.width, format.height, PixelFormat::Nv12, planes).value();
  }

  // Streams until one buffer is filled; returns its index or -1.
  int capture_one(v4l2_memory memory) {
    int type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (xioctl(fd.get(), VIDIOC_STREAMON, &type) != 0) return -1;
    pollfd ready{fd.get(), POLLIN, 0};
    if (::poll(&ready, 1, 20000) != 1) return -1;
    v4l2_buffer buffer{};
    buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    buffer.memory = memory;
    if (xioctl(fd.get(), VIDIOC_DQBUF, &buffer) != 0) return -1;
    (void)xioctl(fd.get(), VIDIOC_STREAMOFF, &type);
    return static_cast<int>(buffer.index);
  }
};

// vivid's default pattern is 75% colour bars: white, yellow, cyan, green, magenta, red, blue,
// black from left to right, so the luma of the bars' centres falls from left to right.
void expect_colour_bars(const Tensor& frame) {
  ASSERT_OK_AND_ASSIGN(TensorMap map, frame.map(CpuAccess::Read));
  const std::byte* row = map.plane(0) + (frame.shape()[0] / 2) * frame.layout().planes()[0].pitch;
  std::vector<int> luma;
  for (int bar = 0; bar < 8; ++bar) luma.push_back(int(row[(2 * bar + 1) * frame.shape()[1] / 16]));
  for (int bar = 1; bar < 8; ++bar) EXPECT_LT(luma[bar], luma[bar - 1]) << "bar " << bar;
  EXPECT_GT(luma.front() - luma.back(), 100);
  const std::byte* chroma = map.plane(1) + (frame.shape()[0] / 4) * frame.layout().planes()[1].pitch;
  // Grey bars (white, black) have neutral chroma, coloured ones do not.
  EXPECT_NEAR(int(chroma[(1 * frame.shape()[1] / 16) & ~1]), 128, 8);
  EXPECT_GT(std::abs(int(chroma[(5 * frame.shape()[1] / 16) & ~1]) - 128), 16);
}

TEST(ForeignExporter, AV4l2CaptureBufferExportedWithExpbufImportsAsDmaBuf) {
  Camera camera = Camera::open_vivid();
  SKIP_WITHOUT(camera.fd, "a vivid capture device");
  v4l2_requestbuffers request{};
  request.count = 2;
  request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  request.memory = V4L2_MEMORY_MMAP;
  ASSERT_EQ(xioctl(camera.fd.get(), VIDIOC_REQBUFS, &request), 0) << std::strerror(errno);
  for (uint32_t i = 0; i < request.count; ++i) {
    v4l2_buffer buffer{};
    buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    buffer.memory = V4L2_MEMORY_MMAP;
    buffer.index = i;
    ASSERT_EQ(xioctl(camera.fd.get(), VIDIOC_QBUF, &buffer), 0) << std::strerror(errno);
  }
  const int index = camera.capture_one(V4L2_MEMORY_MMAP);
  ASSERT_GE(index, 0) << std::strerror(errno);
  v4l2_exportbuffer expbuf{};
  expbuf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  expbuf.index = static_cast<uint32_t>(index);
  expbuf.flags = O_RDWR | O_CLOEXEC;
  ASSERT_EQ(xioctl(camera.fd.get(), VIDIOC_EXPBUF, &expbuf), 0) << std::strerror(errno);
  UniqueFd exported(expbuf.fd);

  ASSERT_OK_AND_ASSIGN(Tensor frame, Tensor::from_fd(exported.get(), camera.layout()));
  EXPECT_EQ(frame.memory(), MemoryKind::DmaBuf);
  expect_colour_bars(frame);

  // The same buffer as planes: from_planes with the one fd given for both planes' buffers.
  PlaneLayout planes[2] = {camera.layout().planes()[0], camera.layout().planes()[1]};
  planes[1].buffer = 1;
  ASSERT_OK_AND_ASSIGN(Layout two, Layout::image_planes(kWidth, kHeight, PixelFormat::Nv12, planes));
  ASSERT_OK_AND_ASSIGN(Tensor by_planes, Tensor::from_planes({exported.get(), exported.get()}, two));
  expect_colour_bars(by_planes);
}

TEST(ForeignExporter, AMemhalDmaBufTensorIsAV4l2CaptureBuffer) {
  Camera camera = Camera::open_vivid();
  SKIP_WITHOUT(camera.fd, "a vivid capture device");
  ASSERT_TRUE(is_available(MemoryKind::DmaBuf)) << availability(MemoryKind::DmaBuf).reason;
  std::vector<Tensor> frames;
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(Tensor frame, Tensor::image(kWidth, kHeight, PixelFormat::Nv12, MemoryKind::DmaBuf));
    // memhal's 64-byte pitch is what vivid asks for at this width, so the planes line up.
    ASSERT_EQ(frame.layout().planes()[0].pitch, camera.format.bytesperline);
    ASSERT_EQ(frame.layout().planes()[1].offset, camera.layout().planes()[1].offset);
    frames.push_back(std::move(frame));
  }
  v4l2_requestbuffers request{};
  request.count = 2;
  request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  request.memory = V4L2_MEMORY_DMABUF;
  ASSERT_EQ(xioctl(camera.fd.get(), VIDIOC_REQBUFS, &request), 0) << std::strerror(errno);
  ASSERT_EQ(request.count, 2u);
  for (uint32_t i = 0; i < 2; ++i) {
    v4l2_buffer buffer{};
    buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    buffer.memory = V4L2_MEMORY_DMABUF;
    buffer.index = i;
    buffer.m.fd = frames[i].fd();
    buffer.length = camera.format.sizeimage;
    ASSERT_EQ(xioctl(camera.fd.get(), VIDIOC_QBUF, &buffer), 0) << std::strerror(errno);
  }
  const int index = camera.capture_one(V4L2_MEMORY_DMABUF);
  ASSERT_GE(index, 0) << std::strerror(errno);
  expect_colour_bars(frames[static_cast<std::size_t>(index)]);
}

TEST(ForeignExporter, AVgemDumbBufferExportedWithPrimeImportsAsDmaBuf) {
  UniqueFd card;
  for (int i = 0; i < 8 && !card; ++i) {
    UniqueFd fd(::open(("/dev/dri/card" + std::to_string(i)).c_str(), O_RDWR | O_CLOEXEC));
    char name[16] = {};
    drm_version version{};
    version.name = name;
    version.name_len = sizeof name - 1;
    if (fd && xioctl(fd.get(), DRM_IOCTL_VERSION, &version) == 0 && std::string(name) == "vgem") card = std::move(fd);
  }
  SKIP_WITHOUT(card, "a vgem device");
  drm_mode_create_dumb dumb{};
  dumb.width = kWidth;
  dumb.height = kHeight;
  dumb.bpp = 32;
  ASSERT_EQ(xioctl(card.get(), DRM_IOCTL_MODE_CREATE_DUMB, &dumb), 0) << std::strerror(errno);
  drm_prime_handle prime{};
  prime.handle = dumb.handle;
  prime.flags = DRM_CLOEXEC | DRM_RDWR;
  ASSERT_EQ(xioctl(card.get(), DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime), 0) << std::strerror(errno);
  UniqueFd exported(prime.fd);

  const int64_t pitch = dumb.pitch;
  const std::array<int64_t, 3> shape{kHeight, kWidth, 4}, strides{pitch, 4, 1};
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::strided(shape, strides, 0, DType::U8));
  ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::from_fd(exported.get(), layout, MemoryKind::DmaBuf));
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, image.map(CpuAccess::Write));
    for (int64_t y = 0; y < kHeight; ++y) std::memset(map.data() + y * pitch, int(y & 0xff), kWidth * 4);
  }
  // vgem's own view of the buffer, through its GEM mapping, sees what memhal wrote.
  drm_mode_map_dumb map_dumb{};
  map_dumb.handle = dumb.handle;
  ASSERT_EQ(xioctl(card.get(), DRM_IOCTL_MODE_MAP_DUMB, &map_dumb), 0) << std::strerror(errno);
  void* gem = ::mmap(nullptr, dumb.size, PROT_READ, MAP_SHARED, card.get(), static_cast<off_t>(map_dumb.offset));
  ASSERT_NE(gem, MAP_FAILED) << std::strerror(errno);
  const auto* bytes = static_cast<const uint8_t*>(gem);
  for (int64_t y : {0, 1, 200, kHeight - 1}) EXPECT_EQ(bytes[y * pitch + 17], y & 0xff) << y;
  ::munmap(gem, dumb.size);

  ASSERT_OK_AND_ASSIGN(Layout too_big, Layout::contiguous({kHeight * 2, pitch}, DType::U8));
  EXPECT_ERROR(ErrorCode::OutOfRange, Tensor::from_fd(exported.get(), too_big));
  drm_mode_destroy_dumb destroy{dumb.handle};
  EXPECT_EQ(xioctl(card.get(), DRM_IOCTL_MODE_DESTROY_DUMB, &destroy), 0);
}

}  // namespace
}  // namespace memhal
