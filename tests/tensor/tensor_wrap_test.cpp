// Tensor::wrap: foreign host memory used in place, held until the last view, map or frame of it.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memhal/memhal.hpp>
#include <numeric>
#include <optional>
#include <thread>
#include <vector>

#include "test_support.hpp"

using namespace memhal;

namespace {

// Counts calls of the release function a wrap was given.
struct ReleaseCounter {
  std::atomic<int> calls{0};
  std::function<void()> function() {
    return [this] { calls.fetch_add(1); };
  }
};

// An NV12 image in a caller's buffer with padded pitches and a gap before the chroma plane.
constexpr int64_t kWidth = 64, kHeight = 32, kPitch = 80, kChromaOffset = kPitch * kHeight + 160;

Layout padded_nv12() {
  const std::array<PlaneLayout, 2> planes{PlaneLayout{0, 0, kPitch}, PlaneLayout{0, kChromaOffset, kPitch}};
  return Layout::image_planes(kWidth, kHeight, PixelFormat::Nv12, planes).value();
}

}  // namespace

TEST(TensorWrap, WritesThroughEitherSideAreSeenOnTheOther) {
  std::vector<float> source(12, 0.0f);
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({3, 4}, DType::F32));
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::wrap(source.data(), layout, KeepAlive()));
  EXPECT_EQ(tensor.memory(), MemoryKind::Mem);
  source[5] = 2.5f;
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::ReadWrite));
    EXPECT_EQ(map.data(), reinterpret_cast<std::byte*>(source.data()));  // the caller's memory, in place
    ASSERT_OK_AND_ASSIGN(std::span<float> values, map.span<float>());
    EXPECT_EQ(values[5], 2.5f);
    values[11] = -1.0f;
  }
  EXPECT_EQ(source[11], -1.0f);
}

TEST(TensorWrap, LayoutOffsetsAndPlanesCountFromTheGivenPointer) {
  std::vector<uint8_t> buffer(static_cast<std::size_t>(kChromaOffset + kPitch * kHeight / 2), 0);
  ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::wrap(buffer.data(), padded_nv12(), KeepAlive()));
  EXPECT_EQ(image.pixel_format(), PixelFormat::Nv12);
  buffer[kChromaOffset + kPitch + 3] = 77;
  ASSERT_OK_AND_ASSIGN(TensorMap map, image.map(CpuAccess::Read));
  EXPECT_EQ(map.plane(0), reinterpret_cast<std::byte*>(buffer.data()));
  EXPECT_EQ(map.plane(1), reinterpret_cast<std::byte*>(buffer.data() + kChromaOffset));
  EXPECT_EQ(static_cast<uint8_t>(map.plane(1)[kPitch + 3]), 77);

  // A strided layout with an offset: element 0 is `offset` bytes past the pointer.
  const std::array<int64_t, 2> shape{2, 3}, strides{10, 2};
  ASSERT_OK_AND_ASSIGN(Layout strided, Layout::strided(shape, strides, 7, DType::U8));
  ASSERT_OK_AND_ASSIGN(Tensor view, Tensor::wrap(buffer.data(), strided, KeepAlive()));
  ASSERT_OK_AND_ASSIGN(TensorMap view_map, view.map(CpuAccess::Read));
  EXPECT_EQ(view_map.data(), reinterpret_cast<std::byte*>(buffer.data() + 7));
}

TEST(TensorWrap, ReleaseRunsOnceAfterTheLastViewMapAndFrameOnAnyThread) {
  std::vector<uint8_t> buffer(static_cast<std::size_t>(kChromaOffset + kPitch * kHeight / 2), 9);
  ReleaseCounter released;
  std::optional<Tensor> tensor;
  {
    ASSERT_OK_AND_ASSIGN(Tensor wrapped, Tensor::wrap(buffer.data(), padded_nv12(), released.function()));
    tensor = std::move(wrapped);
  }
  ASSERT_OK_AND_ASSIGN(Tensor crop, tensor->crop(8, 4, 16, 8));
  ASSERT_OK_AND_ASSIGN(TensorMap map, tensor->map(CpuAccess::Read));
  ASSERT_OK_AND_ASSIGN(MemoryDomain payload, MemoryDomain::from_tensor(*tensor));
  ASSERT_OK_AND_ASSIGN(Tee tee, Tee::create(3));
  ASSERT_OK_AND_ASSIGN(std::vector<Frame> branches, tee.push(Frame{std::move(payload), {}, 0, {}}));
  ASSERT_OK_AND_ASSIGN(Tensor back, branches[1].payload.to_tensor());
  EXPECT_TRUE(same_storage(back, *tensor));

  tensor.reset();
  EXPECT_EQ(released.calls.load(), 0);
  { TensorMap gone = std::move(map); }
  { Tensor gone = std::move(crop); }
  branches.clear();
  EXPECT_EQ(released.calls.load(), 0);  // `back` still holds the frame's bytes
  ASSERT_OK_AND_ASSIGN(TensorMap last_map, back.map(CpuAccess::Read));
  EXPECT_EQ(static_cast<uint8_t>(last_map.plane(0)[0]), 9);
  std::thread([held = std::move(back), m = std::move(last_map)]() mutable {
    { TensorMap gone = std::move(m); }
    EXPECT_EQ(held.memory(), MemoryKind::Mem);
  }).join();
  EXPECT_EQ(released.calls.load(), 1);
}

TEST(TensorWrap, AKeepAliveIsHeldUntilTheLastTensorDrops) {
  auto owner = std::make_shared<std::vector<int32_t>>(16, 4);
  std::weak_ptr<std::vector<int32_t>> watch = owner;
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({16}, DType::I32));
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::wrap(owner->data(), layout, KeepAlive::of(owner)));
  owner.reset();
  ASSERT_OK_AND_ASSIGN(Tensor half, tensor.slice(0, 8, 16));
  tensor = half;
  EXPECT_FALSE(watch.expired());
  { Tensor gone = std::move(tensor); }
  EXPECT_FALSE(watch.expired());
  { Tensor gone = std::move(half); }
  EXPECT_TRUE(watch.expired());
}

TEST(TensorWrap, ConstMemoryGivesATensorThatRefusesWriteMaps) {
  const std::vector<uint8_t> source(32, 5);
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({32}, DType::U8));
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::wrap(source.data(), layout, KeepAlive()));
  EXPECT_ERROR(ErrorCode::PermissionDenied, tensor.map(CpuAccess::Write));
  EXPECT_ERROR(ErrorCode::PermissionDenied, tensor.map(CpuAccess::ReadWrite));
  const auto error = tensor.map(CpuAccess::Write).error();
  EXPECT_NE(error.message().find("read-only wrapped memory"), std::string::npos) << error.message();
  ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Read));
  EXPECT_EQ(static_cast<uint8_t>(map.data()[31]), 5);
  ASSERT_OK_AND_ASSIGN(Tensor copy, tensor.materialize());
  EXPECT_OK(copy.map(CpuAccess::Write));  // a copy has bytes of its own
}

TEST(TensorWrap, ErrorsNameTheCauseAndStillReleaseOnce) {
  ReleaseCounter released;
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({4, 4}, DType::U8));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::wrap(static_cast<void*>(nullptr), layout, released.function()));
  EXPECT_EQ(released.calls.load(), 1);

  // Bytes past the end of the address space.
  void* near_end = reinterpret_cast<void*>(UINTPTR_MAX - 8);
  auto wrapped = Tensor::wrap(near_end, layout, released.function());
  ASSERT_FALSE(wrapped.has_value());
  EXPECT_EQ(wrapped.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(wrapped.error().message().find("address space"), std::string::npos) << wrapped.error().message();
  EXPECT_EQ(released.calls.load(), 2);

  // One pointer backs one buffer.
  const std::array<PlaneLayout, 2> split{PlaneLayout{0, 0, 64}, PlaneLayout{1, 0, 64}};
  ASSERT_OK_AND_ASSIGN(Layout two_buffers, Layout::image_planes(64, 16, PixelFormat::Nv12, split));
  std::vector<uint8_t> buffer(4096);
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::wrap(buffer.data(), two_buffers, released.function()));
  EXPECT_EQ(released.calls.load(), 3);

  // An empty layout needs no memory.
  ASSERT_OK_AND_ASSIGN(Layout empty, Layout::contiguous({0, 4}, DType::U8));
  ASSERT_OK_AND_ASSIGN(Tensor nothing, Tensor::wrap(static_cast<void*>(nullptr), empty, KeepAlive()));
  EXPECT_EQ(nothing.nbytes(), 0);
}

TEST(TensorWrap, ImageLayoutsOverForeignPlanesAreCheckedAgainstTheFormat) {
  const std::array<PlaneLayout, 1> one{PlaneLayout{0, 0, 64}};
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::image_planes(64, 16, PixelFormat::Nv12, one));
  const std::array<PlaneLayout, 2> short_pitch{PlaneLayout{0, 0, 63}, PlaneLayout{0, 4096, 64}};
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::image_planes(64, 16, PixelFormat::Nv12, short_pitch));
  const std::array<PlaneLayout, 1> rgb_short{PlaneLayout{0, 0, 191}};
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::image_planes(64, 16, PixelFormat::Rgb, rgb_short));
  const std::array<PlaneLayout, 3> uneven{PlaneLayout{0, 0, 64}, PlaneLayout{0, 1024, 64}, PlaneLayout{0, 4096, 64}};
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::image_planes(64, 16, PixelFormat::PlanarRgb, uneven));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::image_planes(64, 16, static_cast<PixelFormat>(99), one));
}

TEST(TensorWrap, ConvertReadsAWrappedNv12ImageAsAnAllocatedCopyOfIt) {
  std::vector<uint8_t> buffer(static_cast<std::size_t>(kChromaOffset + kPitch * kHeight / 2));
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<uint8_t>(i * 7 + (i >> 6));
  ASSERT_OK_AND_ASSIGN(Tensor wrapped, Tensor::wrap(buffer.data(), padded_nv12(), KeepAlive()));
  ASSERT_OK_AND_ASSIGN(Tensor allocated, Tensor::image(kWidth, kHeight, PixelFormat::Nv12, MemoryKind::Mem));
  ASSERT_OK(wrapped.copy_to(allocated));
  ASSERT_OK_AND_ASSIGN(ImageProcessor processor, ImageProcessor::create());
  ASSERT_OK_AND_ASSIGN(Tensor from_wrapped, Tensor::image(kWidth, kHeight, PixelFormat::Rgb, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(Tensor from_allocated, Tensor::image(kWidth, kHeight, PixelFormat::Rgb, MemoryKind::Mem));
  ASSERT_OK(processor.convert(wrapped, from_wrapped));
  ASSERT_OK(processor.convert(allocated, from_allocated));
  ASSERT_OK_AND_ASSIGN(TensorMap a, from_wrapped.map(CpuAccess::Read));
  ASSERT_OK_AND_ASSIGN(TensorMap b, from_allocated.map(CpuAccess::Read));
  const int64_t pitch = from_wrapped.strides()[0];
  int64_t differing = 0, nonzero = 0;
  for (int64_t y = 0; y < kHeight; ++y) {
    differing += std::memcmp(a.data() + y * pitch, b.data() + y * pitch, kWidth * 3) != 0;
    for (int64_t x = 0; x < kWidth * 3; ++x) nonzero += a.data()[y * pitch + x] != std::byte{0};
  }
  EXPECT_EQ(differing, 0);
  EXPECT_GT(nonzero, kWidth * kHeight);  // the conversion wrote an image, not zeros
}

TEST(TensorHeldBy, KeepsTheOwnerWhileAnythingMadeFromItLivesAndKeepsTheBuffer) {
  ASSERT_OK_AND_ASSIGN(Tensor import, Tensor::image(kWidth, kHeight, PixelFormat::Nv12, MemoryKind::Shm));
  auto owner = std::make_shared<int>(7);
  std::weak_ptr<int> watch = owner;
  std::optional<MemoryDomain> payload;
  {
    const Tensor held = import.held_by(KeepAlive::of(std::move(owner)));
    EXPECT_EQ(held.buffer_id(), import.buffer_id());
    EXPECT_EQ(held.fd(), import.fd());
    EXPECT_EQ(held.layout(), import.layout());
    ASSERT_OK_AND_ASSIGN(payload, MemoryDomain::from_tensor(held));
  }
  EXPECT_FALSE(watch.expired()) << "a frame made from the held tensor keeps the owner";
  {
    ASSERT_OK_AND_ASSIGN(Tensor back, payload->to_tensor());
    EXPECT_EQ(back.buffer_id(), import.buffer_id());
    payload.reset();
    EXPECT_FALSE(watch.expired()) << "the tensor back from the frame keeps it too";
  }
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(import.held_by(KeepAlive()).buffer_id(), import.buffer_id());
}
