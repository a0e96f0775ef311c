// V4l2Camera against a real V4L2 driver: vivid, the kernel's virtual camera, in the DMA-heap VM
// (tests/capture/CMakeLists.txt boots it with three vivid instances: 0 single-planar with a
// video output node beside it, 1 multi-planar, 2 single-planar with dma-contig buffers, which
// refuse DMA-heap imports). Elsewhere the tests that need a camera skip with the reason, unless
// MEMHAL_TEST_REQUIRE_CAMERA is set: then a missing camera fails.
#include <dirent.h>
#include <fcntl.h>
#include <linux/videodev2.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memhal/channel.hpp>
#include <memhal/image_processor.hpp>
#include <memhal/pixel_format.hpp>
#include <memhal/tee.hpp>
#include <memhal/tensor.hpp>
#include <memhal/v4l2_camera.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace memhal {
namespace {

using std::chrono::milliseconds;

constexpr uint32_t kWidth = 320, kHeight = 180;
constexpr double kFps = 30;
constexpr int kStreamFrames = 300;
constexpr milliseconds kWait{2000};

#define REQUIRE_CAMERA(path, what)                                                               \
  do {                                                                                           \
    if ((path).empty()) {                                                                        \
      if (std::getenv("MEMHAL_TEST_REQUIRE_CAMERA")) FAIL() << what << " not found";             \
      GTEST_SKIP() << what << " not found (the camera tests run in the DMA-heap VM with vivid)"; \
    }                                                                                            \
  } while (false)

int count_fds() {
  int count = 0;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (::readdir(dir) != nullptr) ++count;
    ::closedir(dir);
  }
  return count;
}

// The capture node of vivid instance `instance` ("platform:vivid-00N"), or "".
std::string vivid(int instance) {
  const std::string bus = "platform:vivid-00" + std::to_string(instance);
  for (const auto& camera : V4l2Camera::list()) {
    if (camera.driver == "vivid" && camera.bus == bus) return camera.path;
  }
  return {};
}

// The video node of vivid instance 0 that is not a capture node (its video output), or "".
std::string vivid_output_node() {
  for (int i = 0; i < 16; ++i) {
    const std::string path = "/dev/video" + std::to_string(i);
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    v4l2_capability caps{};
    if (!fd || ::ioctl(fd.get(), VIDIOC_QUERYCAP, &caps) != 0) continue;
    if (std::string(reinterpret_cast<const char*>(caps.driver)) == "vivid" &&
        (caps.device_caps & V4L2_CAP_VIDEO_OUTPUT)) {
      return path;
    }
  }
  return {};
}

// Sets vivid's control `name` (its IDs are private; look them up by name) through `fd`.
bool set_control(int fd, const std::string& name, int32_t value) {
  v4l2_queryctrl query{};
  query.id = V4L2_CTRL_FLAG_NEXT_CTRL;
  while (::ioctl(fd, VIDIOC_QUERYCTRL, &query) == 0) {
    if (name == reinterpret_cast<const char*>(query.name)) {
      v4l2_control control{query.id, value};
      return ::ioctl(fd, VIDIOC_S_CTRL, &control) == 0;
    }
    query.id |= V4L2_CTRL_FLAG_NEXT_CTRL;
  }
  return false;
}

bool set_control(const std::string& path, const std::string& name, int32_t value) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  return fd && set_control(fd.get(), name, value);
}

// The bytes of every plane of an image tensor, row by row (padding left out).
std::vector<uint8_t> image_bytes(const Tensor& image) {
  auto map = image.map(CpuAccess::Read);
  EXPECT_TRUE(map.has_value());
  if (!map) return {};
  std::vector<uint8_t> bytes;
  const auto& layout = image.layout();
  if (layout.is_multi_plane()) {
    for (std::size_t p = 0; p < layout.planes().size(); ++p) {
      const auto& plane = layout.planes()[p];
      const auto* base = reinterpret_cast<const uint8_t*>(map->const_plane(p));
      for (int64_t row = 0; row < plane.height; ++row) {
        bytes.insert(bytes.end(), base + row * plane.pitch, base + row * plane.pitch + plane.row_bytes);
      }
    }
  } else {
    const auto* base = reinterpret_cast<const uint8_t*>(map->const_data());
    const int64_t row_bytes = layout.shape()[1] * layout.shape()[2];
    for (int64_t row = 0; row < layout.shape()[0]; ++row) {
      bytes.insert(bytes.end(), base + row * layout.strides()[0], base + row * layout.strides()[0] + row_bytes);
    }
  }
  return bytes;
}

struct StreamCase {
  int instance;
  uint32_t fourcc;
  CameraIo io;
};

void PrintTo(const StreamCase& c, std::ostream* out) {
  *out << "vivid-00" << c.instance << " " << fourcc_to_string(c.fourcc) << " " << to_string(c.io);
}

std::string case_name(const ::testing::TestParamInfo<StreamCase>& info) {
  std::string name = fourcc_to_string(info.param.fourcc) + (info.param.instance == 1 ? "_mplane_" : "_");
  name += info.param.io == CameraIo::Mmap ? "mmap" : "import";
  return name;
}

// How late a thread of this process wakes from a 5 ms sleep, at most, while it runs. vivid's
// thread counts frames by the clock, rounded: one that wakes more than half a frame period
// late skips a sequence number though buffers are queued. Under QEMU's emulation (TCG) that
// happens every few hundred frames even on a quiet host; this tells such a machine apart.
class WakeupLateness {
 public:
  WakeupLateness()
      : thread_([this] {
          while (!stop_) {
            const auto begin = std::chrono::steady_clock::now();
            std::this_thread::sleep_for(milliseconds(5));
            const auto late = std::chrono::steady_clock::now() - begin - milliseconds(5);
            worst_ = std::max<int64_t>(worst_, std::chrono::duration_cast<milliseconds>(late).count());
          }
        }) {}
  ~WakeupLateness() {
    stop_ = true;
    thread_.join();
  }
  int64_t worst_ms() const { return worst_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> worst_{0};
  std::thread thread_;
};

// Streams kStreamFrames frames of `param` and checks every one.
void stream(const StreamCase& param) {
  SCOPED_TRACE(::testing::PrintToString(param));
  const std::string path = vivid(param.instance);
  ASSERT_FALSE(path.empty());
  CameraOptions options;
  options.width = kWidth;
  options.height = kHeight;
  options.fourcc = param.fourcc;
  options.fps = kFps;
  options.io = param.io;
  ASSERT_OK_AND_ASSIGN(auto camera, V4l2Camera::open(path, options));
  const auto& config = camera.config();
  EXPECT_EQ(config.io, param.io);
  EXPECT_EQ(config.io_notes, "");
  EXPECT_EQ(config.fourcc, param.fourcc);
  EXPECT_EQ(config.width, kWidth);
  EXPECT_EQ(config.height, kHeight);
  EXPECT_EQ(config.multi_planar, param.instance == 1);
  EXPECT_DOUBLE_EQ(config.fps, kFps);
  ASSERT_GE(config.buffers, 2u);
  const bool multi_buffer = param.fourcc == V4L2_PIX_FMT_NV12M;
  ASSERT_EQ(config.sizeimage.size(), multi_buffer ? 2u : 1u);

  WakeupLateness lateness;
  std::set<uint64_t> buffer_ids;
  uint64_t gaps = 0;
  std::optional<uint64_t> last_sequence;
  std::optional<int64_t> last_pts;
  for (int i = 0; i < kStreamFrames; ++i) {
    ASSERT_OK_AND_ASSIGN(auto frame, camera.next_frame(kWait));
    if (last_sequence) {
      ASSERT_GT(frame.sequence, *last_sequence) << "frame " << i;
      gaps += frame.sequence - *last_sequence - 1;
    }
    last_sequence = frame.sequence;
    // Every other buffer is with the driver: a frame it skipped was not for want of a buffer.
    EXPECT_EQ(camera.stats().queued, config.buffers - 1);
    ASSERT_TRUE(frame.timing.pts.has_value());
    if (last_pts) {
      EXPECT_GT(*frame.timing.pts, *last_pts);
    }
    last_pts = frame.timing.pts;
    EXPECT_EQ(frame.timing.duration, std::optional<int64_t>(std::llround(1e9 / kFps)));
    ASSERT_EQ(frame.payload.kind(), MemoryDomainKind::DmaBuf);
    ASSERT_OK_AND_ASSIGN(auto tensor, frame.payload.to_tensor());
    EXPECT_EQ(tensor.memory(), MemoryKind::DmaBuf);
    EXPECT_EQ(tensor.layout().buffer_count(), multi_buffer ? 2u : 1u);
    if (i == 0) {  // the driver's pitch, not one memhal chose
      const auto& layout = tensor.layout();
      const int64_t pitch = layout.is_multi_plane() ? layout.planes()[0].pitch : layout.strides()[0];
      EXPECT_EQ(pitch, config.bytesperline[0]);
      EXPECT_EQ(tensor.pixel_format(), from_drm_fourcc(multi_buffer ? V4L2_PIX_FMT_NV12 : param.fourcc));
    }
    buffer_ids.insert(tensor.buffer_id());
  }
  // Each capture buffer is one identity for its whole life, whatever hands it out.
  EXPECT_EQ(buffer_ids.size(), config.buffers);
  const auto stats = camera.stats();
  EXPECT_EQ(stats.frames, static_cast<uint64_t>(kStreamFrames));
  EXPECT_EQ(stats.dropped, gaps) << "dropped frames are the gaps in the driver's sequence";
  // No frame may be lost, unless threads here woke a quarter period late or more (then vivid's
  // thread, which skips at half a period, may have too): then the drops are reported. That the
  // driver always had the other buffers queued is checked above either way.
  const int64_t period_ms = std::llround(1000 / kFps);
  if (lateness.worst_ms() < period_ms / 4) {
    EXPECT_EQ(stats.dropped, 0u) << "frames lost at " << kFps << " fps though threads woke at most "
                                 << lateness.worst_ms() << " ms late";
  } else if (stats.dropped != 0) {
    std::cout << "NOTE " << ::testing::PrintToString(param) << ": the driver skipped " << stats.dropped << " of "
              << *last_sequence + 1 << " frames while threads here woke up to " << lateness.worst_ms()
              << " ms late (a frame period is " << period_ms << " ms): the machine ran late, not the queue\n";
  }
  EXPECT_EQ(stats.errors, 0u);
  EXPECT_EQ(stats.held, 0u);
  EXPECT_EQ(stats.queued, config.buffers);
}

class CameraStream : public ::testing::TestWithParam<std::pair<uint32_t, CameraIo>> {};

// The single-planar node and the multi-planar one stream side by side (each vivid instance has
// its own thread), which halves the time this takes in the emulated VM.
TEST_P(CameraStream, DeliversEveryFrameInTheDriversBuffers) {
  const auto [fourcc, io] = GetParam();
  REQUIRE_CAMERA(vivid(0), "vivid instance 0");
  REQUIRE_CAMERA(vivid(1), "vivid instance 1 (multi-planar)");
  // NV12 on the multi-planar node is NV12M: luma and chroma in separate buffers.
  std::thread multi_planar(stream, StreamCase{1, fourcc == V4L2_PIX_FMT_NV12 ? V4L2_PIX_FMT_NV12M : fourcc, io});
  stream({0, fourcc, io});
  multi_planar.join();
}

INSTANTIATE_TEST_SUITE_P(Vivid, CameraStream,
                         ::testing::Values(std::pair{V4L2_PIX_FMT_NV12, CameraIo::Mmap},
                                           std::pair{V4L2_PIX_FMT_NV12, CameraIo::DmaBufImport},
                                           std::pair{V4L2_PIX_FMT_YUYV, CameraIo::Mmap},
                                           std::pair{V4L2_PIX_FMT_YUYV, CameraIo::DmaBufImport}),
                         [](const auto& param) {
                           return fourcc_to_string(param.param.first) +
                                  (param.param.second == CameraIo::Mmap ? "_mmap" : "_import");
                         });

// vivid's default pattern: 75% colour bars, eight of equal width. As RGB (BT.601 limited range,
// the driver's default colorimetry): white, yellow, cyan, green, magenta, red, blue, black.
constexpr uint8_t kBars[8][3] = {{191, 191, 191}, {191, 191, 0}, {0, 191, 191}, {0, 191, 0},
                                 {191, 0, 191},   {191, 0, 0},   {0, 0, 191},   {0, 0, 0}};

class CameraBars : public ::testing::TestWithParam<StreamCase> {};

TEST_P(CameraBars, ConvertToTheTestPatternsColours) {
  const auto param = GetParam();
  const std::string path = vivid(param.instance);
  REQUIRE_CAMERA(path, "vivid instance " << param.instance);
  ASSERT_TRUE(set_control(path, "OSD Text Mode", 2)) << "no text over the bars";
  CameraOptions options;
  options.width = 640;
  options.height = 480;
  options.fourcc = param.fourcc;
  options.io = param.io;
  ASSERT_OK_AND_ASSIGN(auto camera, V4l2Camera::open(path, options));
  ASSERT_OK_AND_ASSIGN(auto frame, camera.next_frame(kWait));
  ASSERT_OK_AND_ASSIGN(auto source, frame.payload.to_tensor());
  ASSERT_OK_AND_ASSIGN(auto processor, ImageProcessor::create({.threads = 1, .backend = ImageBackend::Cpu}));
  ASSERT_OK_AND_ASSIGN(auto rgb, Tensor::image(640, 480, PixelFormat::Rgb, MemoryKind::Mem));
  ConvertOptions convert;
  convert.matrix = ColorMatrix::Bt601;
  convert.range = ColorRange::Limited;
  ASSERT_OK(processor.convert(source, rgb, convert));
  ASSERT_OK_AND_ASSIGN(auto map, rgb.map(CpuAccess::Read));
  const auto* pixels = reinterpret_cast<const uint8_t*>(map.const_data());
  for (int row : {8, 240, 470}) {
    for (int bar = 0; bar < 8; ++bar) {
      const int x = (2 * bar + 1) * 640 / 16;
      const uint8_t* pixel = pixels + row * rgb.strides()[0] + x * 3;
      for (int c = 0; c < 3; ++c) {
        EXPECT_NEAR(pixel[c], kBars[bar][c], 4) << "bar " << bar << " channel " << c << " row " << row;
      }
    }
  }
  EXPECT_TRUE(set_control(path, "OSD Text Mode", 0));
}

INSTANTIATE_TEST_SUITE_P(Vivid, CameraBars,
                         ::testing::Values(StreamCase{0, V4L2_PIX_FMT_NV12, CameraIo::Mmap},
                                           StreamCase{0, V4L2_PIX_FMT_YUYV, CameraIo::DmaBufImport},
                                           StreamCase{1, V4L2_PIX_FMT_NV12M, CameraIo::DmaBufImport},
                                           StreamCase{1, V4L2_PIX_FMT_YUYV, CameraIo::Mmap},
                                           // RGB FourCCs name memory byte orders: AR24 is B, G, R, A.
                                           StreamCase{0, V4L2_PIX_FMT_ABGR32, CameraIo::Mmap},
                                           StreamCase{0, V4L2_PIX_FMT_RGB24, CameraIo::DmaBufImport}),
                         case_name);

class CameraHold : public ::testing::TestWithParam<CameraIo> {};

// The driver writes frame counters over the bars (OSD), so every frame differs: a held buffer
// that kept its bytes while 40 later frames changed was not written to.
TEST_P(CameraHold, TheDriverNeverWritesAHeldBuffer) {
  const std::string path = vivid(0);
  REQUIRE_CAMERA(path, "vivid instance 0");
  ASSERT_TRUE(set_control(path, "OSD Text Mode", 0));
  CameraOptions options{.width = 640, .height = 480, .format = PixelFormat::Nv12, .fps = 30, .buffers = 4};
  options.io = GetParam();
  ASSERT_OK_AND_ASSIGN(auto camera, V4l2Camera::open(path, options));
  ASSERT_OK_AND_ASSIGN(auto held, camera.next_frame(kWait));
  ASSERT_OK_AND_ASSIGN(auto held_tensor, held.payload.to_tensor());
  const auto snapshot = image_bytes(held_tensor);
  int differing = 0;
  for (int i = 0; i < 40; ++i) {
    ASSERT_OK_AND_ASSIGN(auto frame, camera.next_frame(kWait));
    ASSERT_OK_AND_ASSIGN(auto tensor, frame.payload.to_tensor());
    EXPECT_FALSE(same_storage(tensor, held_tensor)) << "a held buffer came back from the driver";
    differing += image_bytes(tensor) != snapshot ? 1 : 0;
    EXPECT_EQ(camera.stats().held, 2u);
  }
  EXPECT_GE(differing, 39) << "the frames did not change, so this test could not see a rewrite";
  EXPECT_EQ(image_bytes(held_tensor), snapshot) << "the driver wrote into a buffer a consumer held";
}

INSTANTIATE_TEST_SUITE_P(Vivid, CameraHold, ::testing::Values(CameraIo::Mmap, CameraIo::DmaBufImport),
                         [](const auto& param) {
                           return std::string(param.param == CameraIo::Mmap ? "mmap" : "import");
                         });

// Every kind of holder keeps the buffer from the driver: the frame, a share, a tee branch, the
// tensor, a view of it and a map; the buffer goes back when the last of them drops.
TEST(Camera, BuffersGoBackOnlyAfterTheLastHolderDrops) {
  const std::string path = vivid(0);
  REQUIRE_CAMERA(path, "vivid instance 0");
  CameraOptions options{.width = 320, .height = 180, .format = PixelFormat::Nv12, .fps = 60, .buffers = 4};
  options.io = CameraIo::Mmap;
  ASSERT_OK_AND_ASSIGN(auto camera, V4l2Camera::open(path, options));
  ASSERT_EQ(camera.config().buffers, 4u);
  {
    ASSERT_OK_AND_ASSIGN(auto frame, camera.next_frame(kWait));
    ASSERT_OK_AND_ASSIGN(auto share, frame.share());
    ASSERT_OK_AND_ASSIGN(auto tee, Tee::create(2));
    ASSERT_OK_AND_ASSIGN(auto branches, tee.push(std::move(frame)));
    frame = Frame{};
    EXPECT_EQ(camera.stats().held, 1u);
    branches.clear();
    EXPECT_EQ(camera.stats().held, 1u) << "the share still holds it";
    ASSERT_OK_AND_ASSIGN(auto tensor, share.payload.to_tensor());
    share = Frame{};
    EXPECT_EQ(camera.stats().held, 1u) << "the tensor still holds it";
    ASSERT_OK_AND_ASSIGN(auto view, tensor.crop(0, 0, 64, 64));
    tensor = Tensor{view};
    ASSERT_OK_AND_ASSIGN(auto map, view.map(CpuAccess::Read));
    tensor = *Tensor::create({1}, DType::U8, MemoryKind::Mem);
    view = tensor;
    EXPECT_EQ(camera.stats().held, 1u) << "the map still holds it";
  }
  EXPECT_EQ(camera.stats().held, 0u);
  EXPECT_EQ(camera.stats().queued, 4u);

  // Consumers holding every buffer: Busy at once, naming how many, and no frame overwritten.
  std::vector<Frame> frames;
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK_AND_ASSIGN(auto frame, camera.next_frame(kWait));
    frames.push_back(std::move(frame));
  }
  const auto begin = std::chrono::steady_clock::now();
  auto busy = camera.next_frame(kWait);
  ASSERT_FALSE(busy.has_value());
  EXPECT_EQ(busy.error().code(), ErrorCode::Busy);
  EXPECT_NE(busy.error().message().find("4 held"), std::string::npos) << busy.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, milliseconds(500)) << "Busy must not wait";
  frames.erase(frames.begin());
  ASSERT_OK_AND_ASSIGN(auto next, camera.next_frame(kWait));
  EXPECT_GT(next.sequence, frames.back().sequence);
  EXPECT_EQ(camera.stats().held, 4u);
}

// A frame sent over a Channel is held by the channel until the receiving side drops it: only
// then does the buffer go back to the driver.
TEST(Camera, AChannelShareHoldsTheBufferUntilTheReceiverReleasesIt) {
  const std::string path = vivid(0);
  REQUIRE_CAMERA(path, "vivid instance 0");
  CameraOptions options{.width = 320, .height = 180, .format = PixelFormat::Nv12, .fps = 30, .buffers = 4};
  options.io = CameraIo::Mmap;
  ASSERT_OK_AND_ASSIGN(auto camera, V4l2Camera::open(path, options));
  ASSERT_OK_AND_ASSIGN(auto ends, ipc::Channel::pair());
  auto& [sender, receiver] = ends;
  {
    ASSERT_OK_AND_ASSIGN(auto frame, camera.next_frame(kWait));
    ASSERT_OK(sender.send(frame));
    ASSERT_OK_AND_ASSIGN(auto sent, frame.payload.to_tensor());
    const auto bytes = image_bytes(sent);
    frame = Frame{};
    sent = *Tensor::create({1}, DType::U8, MemoryKind::Mem);
    EXPECT_EQ(camera.stats().held, 1u) << "the channel holds what it sent";
    ASSERT_OK_AND_ASSIGN(auto received, receiver.receive_frame(kWait));
    ASSERT_OK_AND_ASSIGN(auto image, received.payload.to_tensor());
    EXPECT_EQ(image.pixel_format(), PixelFormat::Nv12);
    EXPECT_EQ(image_bytes(image), bytes) << "the receiver reads the capture buffer";
    EXPECT_EQ(camera.stats().held, 1u);
  }
  // The release crosses back to the sender's channel, which lets go of the buffer.
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (camera.stats().held != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(camera.stats().held, 0u);
  EXPECT_EQ(camera.stats().queued, 4u);
}

TEST(Camera, HeldFramesOutliveTheCameraAndTheDeviceOpensAgain) {
  const std::string path = vivid(0);
  REQUIRE_CAMERA(path, "vivid instance 0");
  ASSERT_OK(Tensor::create({1}, DType::U8, MemoryKind::DmaBuf));  // the DMA heap stays open from now on
  const int fds = count_fds();
  for (auto io : {CameraIo::Mmap, CameraIo::DmaBufImport}) {
    std::optional<Tensor> held;
    {
      ASSERT_OK_AND_ASSIGN(auto camera, V4l2Camera::open(path, {.format = PixelFormat::Yuyv, .io = io}));
      ASSERT_OK_AND_ASSIGN(auto frame, camera.next_frame(kWait));
      ASSERT_OK_AND_ASSIGN(held, frame.payload.to_tensor());
    }
    const auto bytes = image_bytes(*held);
    EXPECT_FALSE(bytes.empty());
    ASSERT_OK_AND_ASSIGN(auto again, V4l2Camera::open(path, {.format = PixelFormat::Yuyv, .io = io}));
    ASSERT_OK(again.next_frame(kWait));
  }
  EXPECT_EQ(count_fds(), fds);
}

TEST(Camera, ListsCaptureDevicesWithFormatsSizesAndRates) {
  const std::string path = vivid(0);
  REQUIRE_CAMERA(path, "vivid instance 0");
  const auto cameras = V4l2Camera::list();
  std::set<std::string> paths;
  for (const auto& camera : cameras) paths.insert(camera.path);
  EXPECT_EQ(paths.count(vivid_output_node()), 0u) << "an output node is no camera";
  ASSERT_OK_AND_ASSIGN(auto info, V4l2Camera::describe(path));
  EXPECT_EQ(info.driver, "vivid");
  EXPECT_EQ(info.card.empty(), false);
  EXPECT_FALSE(info.multi_planar);
  const auto nv12 = std::find_if(info.formats.begin(), info.formats.end(),
                                 [](const auto& f) { return f.fourcc == V4L2_PIX_FMT_NV12; });
  ASSERT_NE(nv12, info.formats.end());
  EXPECT_EQ(nv12->format, PixelFormat::Nv12);
  EXPECT_FALSE(nv12->multi_buffer);
  EXPECT_EQ(nv12->description, "Y/UV 4:2:0");
  const auto vga = std::find_if(nv12->sizes.begin(), nv12->sizes.end(),
                                [](const auto& s) { return s.width == 640 && s.height == 480; });
  ASSERT_NE(vga, nv12->sizes.end());
  EXPECT_NE(std::find(vga->fps.begin(), vga->fps.end(), 30.0), vga->fps.end());
  const auto unknown = std::find_if(info.formats.begin(), info.formats.end(), [](const auto& f) { return !f.format; });
  EXPECT_NE(unknown, info.formats.end()) << "formats memhal has no name for are listed by FourCC";

  const std::string mplane = vivid(1);
  ASSERT_FALSE(mplane.empty());
  ASSERT_OK_AND_ASSIGN(auto mp, V4l2Camera::describe(mplane));
  EXPECT_TRUE(mp.multi_planar);
  const auto nm12 =
      std::find_if(mp.formats.begin(), mp.formats.end(), [](const auto& f) { return f.fourcc == V4L2_PIX_FMT_NV12M; });
  ASSERT_NE(nm12, mp.formats.end());
  EXPECT_TRUE(nm12->multi_buffer);
  EXPECT_EQ(nm12->format, PixelFormat::Nv12);
}

TEST(Camera, NegotiatedValuesAreReadable) {
  const std::string path = vivid(1);
  REQUIRE_CAMERA(path, "vivid instance 1");
  ASSERT_OK_AND_ASSIGN(
      auto camera,
      V4l2Camera::open(
          path,
          {.width = 640, .height = 480, .format = PixelFormat::Nv12, .fps = 30, .buffers = 3, .io = CameraIo::Auto}));
  const auto& config = camera.config();
  EXPECT_EQ(config.path, path);
  EXPECT_EQ(config.fourcc, V4L2_PIX_FMT_NV12) << "NV12 is listed before NV12M";
  EXPECT_EQ(config.format, PixelFormat::Nv12);
  EXPECT_EQ(config.fps, 30.0);
  EXPECT_GE(config.buffers, 3u);
  EXPECT_EQ(config.io, CameraIo::DmaBufImport) << config.io_notes;
  EXPECT_EQ(config.bytesperline, std::vector<uint32_t>{640});
  EXPECT_EQ(config.sizeimage, std::vector<uint32_t>{640 * 480 * 3 / 2});
}

// A driver that needs physically contiguous memory (vivid with dma-contig buffers) refuses
// DMA-heap buffers: Auto falls back to its own buffers and says why; pinned import fails.
TEST(Camera, ContiguousOnlyDriverFallsBackToMmapWithTheReason) {
  const std::string path = vivid(2);
  REQUIRE_CAMERA(path, "vivid instance 2 (dma-contig)");
  const int fds = count_fds();
  {
    ASSERT_OK_AND_ASSIGN(auto camera, V4l2Camera::open(path, {.format = PixelFormat::Nv12}));
    EXPECT_EQ(camera.config().io, CameraIo::Mmap);
    EXPECT_NE(camera.config().io_notes.find("contiguous"), std::string::npos) << camera.config().io_notes;
    ASSERT_OK_AND_ASSIGN(auto frame, camera.next_frame(kWait));
    EXPECT_EQ(frame.payload.kind(), MemoryDomainKind::DmaBuf);
  }
  auto pinned = V4l2Camera::open(path, {.format = PixelFormat::Nv12, .io = CameraIo::DmaBufImport});
  ASSERT_FALSE(pinned.has_value());
  EXPECT_EQ(pinned.error().code(), ErrorCode::Unavailable);
  EXPECT_NE(pinned.error().message().find("VIDIOC_QBUF"), std::string::npos) << pinned.error().message();
  EXPECT_EQ(count_fds(), fds);
  ASSERT_OK(V4l2Camera::open(path, {.io = CameraIo::Mmap}));
}

TEST(CameraSpellings, IoAndFourccReadBackAsWritten) {
  for (auto io : {CameraIo::Auto, CameraIo::Mmap, CameraIo::DmaBufImport}) {
    EXPECT_EQ(camera_io_from_string(to_string(io)), io);
  }
  EXPECT_EQ(std::string(to_string(CameraIo::DmaBufImport)), "dmabuf-import");
  EXPECT_EQ(camera_io_from_string("dmabuf"), std::nullopt);
  EXPECT_EQ(fourcc_to_string(V4L2_PIX_FMT_NV12M), "NM12");
  EXPECT_EQ(fourcc_to_string(V4L2_PIX_FMT_Y16_BE), "Y16 -BE");
}

// Errors any machine can produce: no camera needed.
TEST(CameraErrors, NoSuchPathAndNotAV4l2Device) {
  const int fds = count_fds();
  auto missing = V4l2Camera::open("/dev/video-memhal-none");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), ErrorCode::Unavailable);
  EXPECT_NE(missing.error().message().find("/dev/video-memhal-none"), std::string::npos);
  auto null = V4l2Camera::open("/dev/null");
  ASSERT_FALSE(null.has_value());
  EXPECT_EQ(null.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(null.error().message().find("not a V4L2 device"), std::string::npos) << null.error().message();
  EXPECT_ERROR(ErrorCode::InvalidArgument, V4l2Camera::open("/dev/null", {.buffers = 0}));
  EXPECT_ERROR(ErrorCode::InvalidArgument, V4l2Camera::describe("/dev/null"));
  EXPECT_EQ(count_fds(), fds);
}

TEST(CameraErrors, NotACaptureDevice) {
  const std::string output = vivid_output_node();
  REQUIRE_CAMERA(output, "vivid's video output node");
  const int fds = count_fds();
  auto opened = V4l2Camera::open(output);
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(opened.error().message().find("not a video capture device"), std::string::npos) << opened.error().message();
  if (::access("/dev/dri/card0", F_OK) == 0) {  // vgem: a DRM device
    auto drm = V4l2Camera::open("/dev/dri/card0");
    ASSERT_FALSE(drm.has_value());
    EXPECT_EQ(drm.error().code(), ErrorCode::InvalidArgument) << drm.error().message();
  } else if (std::getenv("MEMHAL_TEST_REQUIRE_CAMERA")) {
    ADD_FAILURE() << "vgem's /dev/dri/card0 not found";
  }
  EXPECT_EQ(count_fds(), fds);
}

TEST(CameraErrors, UnsupportedFormatOrSizeListsWhatTheDeviceOffers) {
  const std::string path = vivid(0);
  REQUIRE_CAMERA(path, "vivid instance 0");
  const int fds = count_fds();
  auto planar = V4l2Camera::open(path, {.format = PixelFormat::PlanarRgb});
  ASSERT_FALSE(planar.has_value());
  EXPECT_EQ(planar.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(planar.error().message().find("NV12 (nv12)"), std::string::npos) << planar.error().message();
  auto h264 = V4l2Camera::open(path, {.fourcc = V4L2_PIX_FMT_H264});
  ASSERT_FALSE(h264.has_value());
  EXPECT_NE(h264.error().message().find("does not offer format H264"), std::string::npos) << h264.error().message();
  EXPECT_NE(h264.error().message().find("YUYV"), std::string::npos);
  auto size = V4l2Camera::open(path, {.width = 1000, .height = 700, .format = PixelFormat::Nv12});
  ASSERT_FALSE(size.has_value());
  EXPECT_EQ(size.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(size.error().message().find("640x480"), std::string::npos) << size.error().message();
  EXPECT_EQ(count_fds(), fds);
}

TEST(CameraErrors, ADeviceAlreadyStreamingIsBusy) {
  const std::string path = vivid(0);
  REQUIRE_CAMERA(path, "vivid instance 0");
  ASSERT_OK_AND_ASSIGN(auto first, V4l2Camera::open(path, {.format = PixelFormat::Nv12}));
  const int fds = count_fds();
  auto second = V4l2Camera::open(path, {.format = PixelFormat::Nv12});
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code(), ErrorCode::Busy);
  EXPECT_NE(second.error().message().find("another handle is streaming"), std::string::npos)
      << second.error().message();
  EXPECT_EQ(count_fds(), fds);
  ASSERT_OK(first.next_frame(kWait));
}

TEST(CameraErrors, AStalledCameraTimesOut) {
  const std::string path = vivid(0);
  REQUIRE_CAMERA(path, "vivid instance 0");
  ASSERT_OK_AND_ASSIGN(auto camera, V4l2Camera::open(path, {.width = 640, .height = 480, .fps = 1}));
  ASSERT_OK(camera.next_frame(kWait));  // the first frame comes at once
  const auto begin = std::chrono::steady_clock::now();
  auto stalled = camera.next_frame(milliseconds(100));
  const auto waited = std::chrono::steady_clock::now() - begin;
  ASSERT_FALSE(stalled.has_value());
  EXPECT_EQ(stalled.error().code(), ErrorCode::Busy);
  EXPECT_NE(stalled.error().message().find("no frame within 100 ms"), std::string::npos) << stalled.error().message();
  EXPECT_GE(waited, milliseconds(90));
  EXPECT_LT(waited, milliseconds(900));
}

// vivid's Disconnect control emulates an unplugged camera. Last: the instance comes back only
// after every fd and buffer of it is closed.
TEST(CameraErrors, ADeviceThatGoesAwayIsUnavailable) {
  const std::string path = vivid(2);
  REQUIRE_CAMERA(path, "vivid instance 2");
  const int fds = count_fds();
  {
    ASSERT_OK_AND_ASSIGN(auto camera, V4l2Camera::open(path, {.format = PixelFormat::Nv12, .io = CameraIo::Mmap}));
    ASSERT_OK_AND_ASSIGN(auto held, camera.next_frame(kWait));
    ASSERT_TRUE(set_control(camera.fd(), "Disconnect", 0));
    auto gone = camera.next_frame(kWait);
    ASSERT_FALSE(gone.has_value());
    EXPECT_EQ(gone.error().code(), ErrorCode::Unavailable);
    EXPECT_NE(gone.error().message().find("went away"), std::string::npos) << gone.error().message();
    {
      ASSERT_OK_AND_ASSIGN(auto tensor, held.payload.to_tensor());
      EXPECT_FALSE(image_bytes(tensor).empty()) << "a held frame stays readable";
    }
    held = Frame{};
    auto after = camera.next_frame(milliseconds(100));
    ASSERT_FALSE(after.has_value());
    EXPECT_EQ(after.error().code(), ErrorCode::Unavailable) << after.error().message();
    auto reopen = V4l2Camera::open(path);
    ASSERT_FALSE(reopen.has_value());
    EXPECT_EQ(reopen.error().code(), ErrorCode::Unavailable) << reopen.error().message();
  }
  EXPECT_EQ(count_fds(), fds);
}

}  // namespace
}  // namespace memhal
