// One camera frame end to end, across two real processes: TensorPool -> MemoryDomain ->
// Tee -> Channel::send(Frame) -> receive_frame -> to_tensor -> ImageProcessor::convert (CPU)
// in the second process, which must see the image (format, shape, plane offsets and pitches),
// the timing, the sequence and the metadata, and convert exactly what the first process
// converts from its own branch of the tee. Shm here, DmaBuf in the DMA-heap VM (ipc_vm_test).
// Mem cannot cross: it is refused with advice, and the user's explicit copy to Shm crosses.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memhal/channel.hpp>
#include <memhal/image_processor.hpp>
#include <memhal/memory.hpp>
#include <memhal/tee.hpp>
#include <memhal/tensor_pool.hpp>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace memhal::ipc {
namespace {

constexpr int64_t kWidth = 64, kHeight = 32;
constexpr int kFrames = 10;  // more than the pool has buffers: each crosses once, then recycles
constexpr std::size_t kRgbBytes = kWidth * kHeight * 3;

using Param = std::tuple<MemoryKind, PixelFormat>;

// A pattern that differs per frame and per plane.
void draw(const Tensor& image, int n) {
  TensorMap map = image.map(CpuAccess::Write).value();
  const auto planes = image.layout().planes();
  if (planes.empty()) {  // interleaved (YUYV): one strided plane
    const int64_t pitch = image.strides()[0];
    for (int64_t y = 0; y < kHeight; ++y) {
      for (int64_t x = 0; x < kWidth * 2; ++x) map.data()[y * pitch + x] = std::byte((x * 7 + y * 3 + n * 11) & 0xff);
    }
    return;
  }
  for (std::size_t p = 0; p < planes.size(); ++p) {
    const int64_t row_bytes = planes[p].width * (image.pixel_format() == PixelFormat::Nv12 && p == 1 ? 2 : 1);
    for (int64_t y = 0; y < planes[p].height; ++y) {
      for (int64_t x = 0; x < row_bytes; ++x) {
        map.plane(p)[y * planes[p].pitch + x] = std::byte((x * 5 + y * 9 + n * 13 + p * 50) & 0xff);
      }
    }
  }
}

Result<std::vector<uint8_t>> to_rgb(ImageProcessor& processor, const Tensor& image) {
  MEMHAL_ASSIGN_OR_RETURN(Tensor rgb, Tensor::image(kWidth, kHeight, PixelFormat::Rgb, MemoryKind::Mem));
  MEMHAL_TRY(processor.convert(image, rgb));
  MEMHAL_ASSIGN_OR_RETURN(TensorMap map, rgb.map(CpuAccess::Read));
  const auto* bytes = reinterpret_cast<const uint8_t*>(map.const_data());
  return std::vector<uint8_t>(bytes, bytes + kRgbBytes);
}

// The second process: checks every frame against what was sent, converts it and reports the
// pixels. Exit status: 0, or the step that failed.
[[noreturn]] void receiver(Channel channel, int report, const Layout& expected) {
  auto processor = ImageProcessor::create({.threads = 1, .backend = ImageBackend::Cpu});
  if (!processor) _exit(10);
  for (int n = 0; n < kFrames; ++n) {
    auto frame = channel.receive_frame(std::chrono::milliseconds(10000));
    if (!frame) {
      std::fprintf(stderr, "receiver: %s\n", frame.error().to_string().c_str());
      _exit(11);
    }
    auto tensor = frame->payload.to_tensor();
    if (!tensor) _exit(12);
    if (!(tensor->layout() == expected) || tensor->pixel_format() != expected.pixel_format()) _exit(13);
    const auto* camera = frame->metadata.get<std::string>("camera");
    const auto* index = frame->metadata.get<int64_t>("index");
    if (frame->sequence != uint64_t(n) || frame->timing.pts != n * 1000 || frame->timing.duration != 33 ||
        camera == nullptr || *camera != "walk" || index == nullptr || *index != n) {
      _exit(14);
    }
    auto rgb = to_rgb(*processor, *tensor);  // convert accepts the received image directly
    if (!rgb) {
      std::fprintf(stderr, "receiver: %s\n", rgb.error().to_string().c_str());
      _exit(15);
    }
    if (::write(report, rgb->data(), rgb->size()) != static_cast<ssize_t>(rgb->size())) _exit(16);
  }
  _exit(0);
}

class ChannelWalk : public ::testing::TestWithParam<Param> {};

TEST_P(ChannelWalk, AFrameArrivesInASecondProcessWithItsImageTimingAndMetadataAndConvertsTheSame) {
  const auto [kind, format] = GetParam();
  const MemoryKind pool_kind = kind == MemoryKind::Mem ? MemoryKind::Mem : kind;
  if (!is_available(pool_kind)) {
    if (pool_kind == MemoryKind::DmaBuf && std::getenv("MEMHAL_TEST_REQUIRE_DMABUF")) {
      FAIL() << availability(pool_kind).reason;
    }
    GTEST_SKIP() << to_string(pool_kind) << " is not available here: " << availability(pool_kind).reason;
  }
  ASSERT_OK_AND_ASSIGN(const Layout layout, Layout::image(kWidth, kHeight, format));
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(layout, 4, pool_kind));
  // Mem cannot cross a process without a copy: the channel says so, and the user makes it
  // (one copy into Shm, which keeps the image) — or allocates the pool as Shm to begin with.
  auto crossing = [&](const Frame& frame) -> Result<Frame> {
    if (kind != MemoryKind::Mem) return frame.share();
    MEMHAL_ASSIGN_OR_RETURN(Tensor tensor, frame.payload.to_tensor());
    MEMHAL_ASSIGN_OR_RETURN(Tensor copy, tensor.materialize(MemoryKind::Shm));
    MEMHAL_ASSIGN_OR_RETURN(MemoryDomain payload, MemoryDomain::from_tensor(copy));
    return Frame{std::move(payload), frame.timing, frame.sequence, frame.metadata};
  };
  Layout expected = layout;
  if (kind == MemoryKind::Mem) {
    ASSERT_OK_AND_ASSIGN(Tensor probe, Tensor::image(kWidth, kHeight, format, MemoryKind::Mem));
    ASSERT_OK_AND_ASSIGN(Tensor copy, probe.materialize(MemoryKind::Shm));
    expected = copy.layout();
    EXPECT_EQ(expected.pixel_format(), format);
  }
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(report[0]);
    { auto sender_end = std::move(ends.first); }
    receiver(std::move(ends.second), report[1], expected);
  }
  ::close(report[1]);
  { auto receiver_end = std::move(ends.second); }
  ASSERT_OK_AND_ASSIGN(ImageProcessor processor, ImageProcessor::create({.threads = 1, .backend = ImageBackend::Cpu}));
  ASSERT_OK_AND_ASSIGN(Tee tee, Tee::create(2));
  for (int n = 0; n < kFrames; ++n) {
    SCOPED_TRACE(n);
    ASSERT_OK_AND_ASSIGN(Tensor image, pool.acquire(std::chrono::seconds(10)));
    draw(image, n);
    ASSERT_OK_AND_ASSIGN(MemoryDomain payload, MemoryDomain::from_tensor(image));
    Frame frame{std::move(payload), {n * 1000, std::nullopt, 33}, static_cast<uint64_t>(n), {}};
    frame.metadata.set("camera", std::string("walk"));
    frame.metadata.set("index", int64_t{n});
    ASSERT_OK_AND_ASSIGN(std::vector<Frame> branches, tee.push(std::move(frame)));
    if (kind == MemoryKind::Mem) {
      const auto refused = ends.first.send(branches[1]);
      EXPECT_ERROR(ErrorCode::InvalidArgument, refused);
      EXPECT_NE(refused.error().message().find("shm"), std::string::npos) << refused.error().message();
    }
    ASSERT_OK_AND_ASSIGN(Frame sent, crossing(branches[1]));
    ASSERT_OK(ends.first.send(sent));
    ASSERT_OK_AND_ASSIGN(Tensor local, branches[0].payload.to_tensor());
    EXPECT_EQ(local.pixel_format(), format);
    ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> mine, to_rgb(processor, local));
    std::vector<uint8_t> theirs(kRgbBytes);
    std::size_t got = 0;
    while (got < theirs.size()) {
      const ssize_t n_read = ::read(report[0], theirs.data() + got, theirs.size() - got);
      if (n_read <= 0) break;
      got += static_cast<std::size_t>(n_read);
    }
    ASSERT_EQ(got, kRgbBytes) << "the receiver stopped";
    EXPECT_TRUE(mine == theirs) << "the second process converted other pixels";
  }
  ::close(report[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "receiver exit status " << WEXITSTATUS(status);
}

std::string name(const ::testing::TestParamInfo<Param>& info) {
  std::string kind(to_string(std::get<0>(info.param))), format(to_string(std::get<1>(info.param)));
  kind[0] = static_cast<char>(std::toupper(kind[0]));
  if (kind == "Dmabuf") kind = "DmaBuf";
  return kind + "_" + format;
}

INSTANTIATE_TEST_SUITE_P(Walk, ChannelWalk,
                         ::testing::Combine(::testing::Values(MemoryKind::Mem, MemoryKind::Shm, MemoryKind::DmaBuf),
                                            ::testing::Values(PixelFormat::Nv12, PixelFormat::Yuyv, PixelFormat::I420)),
                         name);

}  // namespace
}  // namespace memhal::ipc
