// One camera frame end to end in one process: a pooled YUV image → MemoryDomain::from_tensor →
// Tee → Frame::share → to_tensor keeps its image (format, shape, planes) and its buffer (the
// pool slot) whatever the memory kind, and ImageProcessor::convert takes it as it is.
#include <memhal/frame.hpp>
#include <memhal/image_processor.hpp>
#include <memhal/memory.hpp>
#include <memhal/memory_domain.hpp>
#include <memhal/tee.hpp>
#include <memhal/tensor_pool.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "test_support.hpp"

namespace memhal {
namespace {

// Writes a pattern over every row of every plane (an interleaved image is one plane).
void draw(const Tensor& image, int seed) {
  auto map = image.map(CpuAccess::Write);
  ASSERT_TRUE(map.has_value()) << map.error().to_string();
  const Layout& layout = image.layout();
  const std::size_t planes = layout.is_multi_plane() ? layout.planes().size() : 1;
  for (std::size_t p = 0; p < planes; ++p) {
    std::byte* base = layout.is_multi_plane() ? map->plane(p) : map->data();
    const int64_t height = layout.is_multi_plane() ? layout.planes()[p].height : layout.shape()[0];
    const int64_t pitch = layout.is_multi_plane() ? layout.planes()[p].pitch : layout.strides()[0];
    const int64_t row_bytes =
        layout.is_multi_plane() ? layout.planes()[p].row_bytes : layout.shape()[1] * layout.shape()[2];
    for (int64_t y = 0; y < height; ++y) {
      for (int64_t x = 0; x < row_bytes; ++x) base[y * pitch + x] = std::byte(uint8_t(seed + 7 * p + 3 * y + x));
    }
  }
}

Tensor rgb_of(const Tensor& image) {
  auto processor = ImageProcessor::create();
  EXPECT_TRUE(processor.has_value()) << processor.error().to_string();
  auto dst = Tensor::image(image.shape()[1], image.shape()[0], PixelFormat::Rgb, MemoryKind::Mem);
  EXPECT_TRUE(dst.has_value());
  auto converted = processor->convert(image, *dst);
  EXPECT_TRUE(converted.has_value()) << converted.error().to_string();
  return *dst;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  auto x = a.map(CpuAccess::Read);
  auto y = b.map(CpuAccess::Read);
  return x && y && a.nbytes() == b.nbytes() && std::memcmp(x->data(), y->data(), a.nbytes()) == 0;
}

// The walk for one kind and format; `what` names the case in failures.
void walk(MemoryKind kind, PixelFormat format) {
  const std::string what = std::string(to_string(kind)) + " " + std::string(to_string(format));
  ASSERT_OK_AND_ASSIGN(const Layout layout, Layout::image(64, 32, format));
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(layout, 2, kind));
  ASSERT_EQ(pool.memory(), kind);
  std::vector<Tensor> back;
  uint64_t slot = 0;
  std::optional<Tensor> expected;
  {
    ASSERT_OK_AND_ASSIGN(const Tensor image, pool.try_acquire());
    slot = image.buffer_id();
    draw(image, 11);
    expected = rgb_of(image);
    ASSERT_OK_AND_ASSIGN(MemoryDomain payload, MemoryDomain::from_tensor(image));
    if (const auto* dmabuf = payload.get_if<OwnedDmaBuf>()) {
      // A DMA-BUF frame shares the buffer's own fd: no dup per frame (and so none per frame
      // that a Channel receives).
      for (uint32_t p = 0; p < dmabuf->plane_count; ++p) {
        EXPECT_EQ(dmabuf->planes[p].fd.get(), image.fd(0)) << what << ": plane " << p;
      }
    }
    ASSERT_OK_AND_ASSIGN(const Tee tee, Tee::create(3));
    ASSERT_OK_AND_ASSIGN(std::vector<Frame> branches,
                         tee.push(Frame{std::move(payload), {5, std::nullopt, 33}, 9, {}}));
    for (const Frame& branch : branches) {
      ASSERT_OK_AND_ASSIGN(const Frame share, branch.share());
      for (const Frame* frame : {&branch, &share}) {
        ASSERT_OK_AND_ASSIGN(Tensor tensor, frame->payload.to_tensor());
        EXPECT_EQ(tensor.layout(), image.layout()) << what << ": format, shape, planes, offsets and pitches";
        EXPECT_EQ(tensor.pixel_format(), format) << what;
        EXPECT_TRUE(same_storage(tensor, image)) << what;
        EXPECT_EQ(tensor.buffer_id(), slot) << what;
        EXPECT_EQ(tensor.memory(), kind) << what;
        back.push_back(std::move(tensor));
      }
    }
  }
  // Only the tensors back from the frames are left: they still hold the slot.
  EXPECT_EQ(pool.available(), 1u) << what;
  for (const Tensor& tensor : back) {
    EXPECT_TRUE(std::ranges::equal(tensor.shape(), layout.shape())) << what;
    EXPECT_TRUE(std::ranges::equal(tensor.strides(), layout.strides())) << what;
    for (std::size_t p = 0; p < layout.planes().size(); ++p) {
      EXPECT_EQ(tensor.layout().planes()[p].offset, layout.planes()[p].offset) << what;
      EXPECT_EQ(tensor.layout().planes()[p].pitch, layout.planes()[p].pitch) << what;
    }
    EXPECT_TRUE(same_bytes(rgb_of(tensor), *expected)) << what << ": convert takes the frame's tensor as it is";
  }
  back.clear();
  EXPECT_EQ(pool.available(), 2u) << what << ": the last tensor back returned the slot";
  // The slot comes out again as the same buffer.
  std::vector<Tensor> out{pool.try_acquire().value(), pool.try_acquire().value()};
  EXPECT_TRUE(out[0].buffer_id() == slot || out[1].buffer_id() == slot) << what;
}

TEST(PooledFrame, YuvImagesFromMemAndShmPoolsKeepTheirImageAndSlotEndToEnd) {
  for (const MemoryKind kind : {MemoryKind::Mem, MemoryKind::Shm}) {
    if (!is_available(kind)) continue;
    for (const PixelFormat format : {PixelFormat::Nv12, PixelFormat::Yuyv, PixelFormat::I420}) walk(kind, format);
  }
}

TEST(PooledFrame, YuvImagesFromDmaBufPoolsKeepTheirImageAndSlotEndToEnd) {
  // In the DMA-heap VM (frame_vm_test) a missing heap is a failure, not a skip.
  if (!is_available(MemoryKind::DmaBuf)) {
    if (std::getenv("MEMHAL_TEST_REQUIRE_DMABUF")) FAIL() << availability(MemoryKind::DmaBuf).reason;
    GTEST_SKIP() << "dmabuf: " << availability(MemoryKind::DmaBuf).reason;
  }
  for (const PixelFormat format : {PixelFormat::Nv12, PixelFormat::Yuyv, PixelFormat::I420}) {
    walk(MemoryKind::DmaBuf, format);
  }
}

TEST(PooledFrame, ATransformedViewComesBackOverTheSameBuffer) {
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(Layout::image(16, 8, PixelFormat::Rgba).value(), 1));
  ASSERT_OK_AND_ASSIGN(const Tensor image, pool.try_acquire());
  ASSERT_OK_AND_ASSIGN(const Tensor crop, image.crop(2, 1, 8, 4));
  ASSERT_OK_AND_ASSIGN(const MemoryDomain domain, MemoryDomain::from_tensor(crop));
  ASSERT_OK_AND_ASSIGN(const SystemView flipped, domain.get_if<SystemView>()->flip(0));
  ASSERT_OK_AND_ASSIGN(const Tensor back, MemoryDomain(flipped).to_tensor());
  EXPECT_EQ(back.buffer_id(), image.buffer_id()) << "no longer the crop, but still the slot's buffer";
  EXPECT_EQ(back.memory(), image.memory());
  ASSERT_OK_AND_ASSIGN(const TensorMap a, back.map(CpuAccess::Read));
  ASSERT_OK_AND_ASSIGN(const TensorMap b, crop.map(CpuAccess::Read));
  EXPECT_EQ(a.data(), b.data() + 3 * crop.strides()[0]) << "row 0 of the flip is the crop's last row";
}

TEST(PooledFrame, WritingAFramesBytesCopiesAndForgetsTheTensor) {
  ASSERT_OK_AND_ASSIGN(const Tensor image, Tensor::image(16, 8, PixelFormat::Nv12, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(MemoryDomain domain, MemoryDomain::from_tensor(image));
  ASSERT_OK_AND_ASSIGN(SystemSlice * slice, domain.require_system_slice("test"));
  ASSERT_OK(slice->mutable_bytes());
  ASSERT_OK_AND_ASSIGN(const Tensor back, domain.to_tensor());
  EXPECT_FALSE(same_storage(back, image)) << "the copy is bytes of its own";
  EXPECT_EQ(back.rank(), 1u) << "and no longer claims to be the image";
}

UniqueFd memfd_of(std::size_t size) {
  UniqueFd fd(::memfd_create("pooled-frame-test", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_TRUE(fd.valid());
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  return fd;
}

TEST(PooledFrame, ADmaBufPayloadsTensorHoldsItsKeepAliveThroughViewsAndMaps) {
  // An OwnedDmaBuf made elsewhere (a V4L2 buffer, say: its keep-alive requeues it) over a memfd.
  auto owner = std::make_shared<int>(0);
  std::weak_ptr<int> alive = owner;
  OwnedDmaBuf dmabuf;
  dmabuf.format = PixelFormat::Nv12;
  dmabuf.width = 32;
  dmabuf.height = 16;
  dmabuf.plane_count = 2;
  const SharedFd fd(memfd_of(32 * 24));
  dmabuf.planes[0] = {fd, 0, 32};
  dmabuf.planes[1] = {fd, 32 * 16, 32};
  dmabuf.keep_alive = KeepAlive::of(std::move(owner));
  std::optional<Tensor> tensor = MemoryDomain(dmabuf).to_tensor().value();
  dmabuf = OwnedDmaBuf{};
  EXPECT_FALSE(alive.expired()) << "the tensor holds the keep-alive";
  EXPECT_NE(tensor->buffer_id(), 0u);
  ASSERT_OK_AND_ASSIGN(std::optional<Tensor> view, tensor->crop(0, 0, 16, 8));
  EXPECT_EQ(view->buffer_id(), tensor->buffer_id()) << "the buffer is its own identity, not a wrapper's";
  std::optional<TensorMap> map = view->map(CpuAccess::Read).value();
  tensor.reset();
  view.reset();
  EXPECT_FALSE(alive.expired()) << "a map holds it too";
  map.reset();
  EXPECT_TRUE(alive.expired()) << "released with the last map";
}

TEST(PooledFrame, AFrameOfAPooledDmaBufDescriptionHoldsTheSlot) {
  // What dmabuf_domain makes of a pooled DmaBuf tensor, over a Shm pool so that it runs without
  // DMA heaps: the tensor back holds the slot until it is dropped.
  if (!is_available(MemoryKind::Shm)) GTEST_SKIP() << "shm: " << availability(MemoryKind::Shm).reason;
  ASSERT_OK_AND_ASSIGN(TensorPool pool,
                       TensorPool::create(Layout::image(16, 8, PixelFormat::Rgba).value(), 1, MemoryKind::Shm));
  std::optional<Tensor> back;
  {
    ASSERT_OK_AND_ASSIGN(const Tensor image, pool.try_acquire());
    OwnedDmaBuf dmabuf{.plane_count = 1, .width = 16, .height = 8, .format = PixelFormat::Rgba};
    ASSERT_OK_AND_ASSIGN(SharedFd fd, SharedFd::duplicate(image.fd()));
    dmabuf.planes[0] = {fd, 0, image.strides()[0]};
    dmabuf.keep_alive = KeepAlive::of(std::make_shared<const Tensor>(image));
    back = MemoryDomain(dmabuf).to_tensor().value();
    EXPECT_EQ(back->layout(), image.layout());
    EXPECT_EQ(back->buffer_id(), image.buffer_id());
  }
  EXPECT_EQ(pool.available(), 0u) << "the tensor back from the frame holds the slot";
  back.reset();
  EXPECT_EQ(pool.available(), 1u);
}

}  // namespace
}  // namespace memhal
