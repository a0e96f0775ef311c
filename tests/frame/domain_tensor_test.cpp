#include <sys/mman.h>
#include <unistd.h>
#include <memhal/memory.hpp>
#include <memhal/memory_domain.hpp>
#include <memhal/tee.hpp>
#include <memhal/tensor.hpp>

#include <cstdlib>
#include <cstring>
#include <optional>

#include "test_support.hpp"

namespace memhal {
namespace {

// Fills a tensor's elements with their linear index (mod 251), whatever its strides.
Tensor counting_tensor(std::initializer_list<int64_t> shape, MemoryKind kind = MemoryKind::Mem) {
  auto tensor = Tensor::create(shape, DType::U8, kind);
  EXPECT_TRUE(tensor.has_value()) << tensor.error().to_string();
  auto map = tensor->map(CpuAccess::Write);
  auto bytes = map->span<uint8_t>();
  for (std::size_t i = 0; i < bytes->size(); ++i) (*bytes)[i] = static_cast<uint8_t>(i % 251);
  return *tensor;
}

const std::byte* element0(const Tensor& tensor) {
  return tensor.map(CpuAccess::Read)->data();
}

TEST(DomainTensor, AContiguousMemTensorBecomesSharedSystemBytesWithoutCopying) {
  std::optional<Tensor> tensor = counting_tensor({4, 6, 3});
  const std::byte* data = element0(*tensor);
  ASSERT_OK_AND_ASSIGN(MemoryDomain domain, MemoryDomain::from_tensor(*tensor));
  ASSERT_EQ(domain.kind(), MemoryDomainKind::System);
  EXPECT_EQ(domain.as_system_slice()->data(), data);
  EXPECT_EQ(domain.as_system_slice()->size(), 72u);
  EXPECT_EQ(domain.get_if<SystemSlice>()->ownership(), SystemSlice::Ownership::Shared);
  tensor.reset();  // the domain keeps the storage alive
  EXPECT_EQ(domain.as_system_slice()->data()[71], std::byte{71});
}

TEST(DomainTensor, WritingSystemBytesFromATensorCopiesSoTheTensorIsUntouched) {
  const Tensor tensor = counting_tensor({16});
  ASSERT_OK_AND_ASSIGN(MemoryDomain domain, MemoryDomain::from_tensor(tensor));
  ASSERT_OK_AND_ASSIGN(SystemSlice * slice, domain.require_system_slice("test"));
  ASSERT_OK_AND_ASSIGN(const std::span<std::byte> bytes, slice->mutable_bytes());
  EXPECT_NE(bytes.data(), element0(tensor));
  bytes[1] = std::byte{200};
  EXPECT_EQ(element0(tensor)[1], std::byte{1});
}

TEST(DomainTensor, AStridedMemTensorBecomesASystemViewOfTheSameBytes) {
  const Tensor tensor = counting_tensor({4, 6, 3});
  ASSERT_OK_AND_ASSIGN(const Tensor flipped, tensor.flip(1));
  ASSERT_OK_AND_ASSIGN(const Tensor view, flipped.transpose(0, 1));
  ASSERT_OK_AND_ASSIGN(const MemoryDomain domain, MemoryDomain::from_tensor(view));
  ASSERT_EQ(domain.kind(), MemoryDomainKind::SystemView);
  const SystemView& system_view = *domain.get_if<SystemView>();
  EXPECT_EQ(system_view.element0(), element0(view));
  EXPECT_TRUE(std::ranges::equal(system_view.view().strides(), view.strides()));
  EXPECT_TRUE(std::ranges::equal(system_view.view().shape(), view.shape()));
  ASSERT_OK_AND_ASSIGN(const Tensor dense, view.materialize());
  ASSERT_OK_AND_ASSIGN(const SharedBytes packed, domain.require_system_bytes("test"));
  ASSERT_EQ(packed.size(), 72u);
  EXPECT_EQ(std::memcmp(packed.data(), element0(dense), 72), 0);
}

TEST(DomainTensor, AMultiPlaneMemImageBecomesSystemBytesCoveringEveryPlane) {
  ASSERT_OK_AND_ASSIGN(const Tensor nv12, Tensor::image(64, 32, PixelFormat::Nv12, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(const MemoryDomain domain, MemoryDomain::from_tensor(nv12));
  ASSERT_EQ(domain.kind(), MemoryDomainKind::System);
  const ByteExtent extent = nv12.layout().byte_extent(0);
  EXPECT_EQ(domain.as_system_slice()->size(), static_cast<std::size_t>(extent.end - extent.begin));
  EXPECT_EQ(domain.as_system_slice()->data(), element0(nv12));
}

TEST(DomainTensor, AShmTensorBecomesSystemBytesToo) {
  if (!is_available(MemoryKind::Shm)) GTEST_SKIP() << "shm: " << availability(MemoryKind::Shm).reason;
  const Tensor tensor = counting_tensor({8, 8}, MemoryKind::Shm);
  ASSERT_OK_AND_ASSIGN(const MemoryDomain domain, MemoryDomain::from_tensor(tensor));
  ASSERT_EQ(domain.kind(), MemoryDomainKind::System);
  EXPECT_EQ(domain.as_system_slice()->data(), element0(tensor));
}

TEST(DomainTensor, SystemBytesBecomeATensorOverTheSameMemory) {
  SystemSlice slice = SystemSlice::adopt(std::vector<std::byte>(32, std::byte{3}));
  slice.make_shareable();
  const std::byte* data = slice.data();
  MemoryDomain domain(std::move(slice));
  ASSERT_OK_AND_ASSIGN(Tensor tensor, domain.to_tensor());
  EXPECT_EQ(tensor.memory(), MemoryKind::Mem);
  EXPECT_EQ(tensor.shape()[0], 32);
  EXPECT_EQ(element0(tensor), data);
  EXPECT_ERROR(ErrorCode::PermissionDenied, tensor.map(CpuAccess::Write));
  domain = MemoryDomain();
  ASSERT_OK_AND_ASSIGN(const TensorMap map, tensor.map(CpuAccess::ReadWrite));
  EXPECT_EQ(map.data(), data) << "the sole holder of memhal's bytes writes them in place";
}

TEST(DomainTensor, ATensorFromADomainGoesBackToTheSameBytes) {
  const Tensor tensor = counting_tensor({5, 7});
  ASSERT_OK_AND_ASSIGN(const Tensor flipped, tensor.flip(0));
  ASSERT_OK_AND_ASSIGN(const MemoryDomain domain, MemoryDomain::from_tensor(flipped));
  ASSERT_OK_AND_ASSIGN(const Tensor back, domain.to_tensor());
  EXPECT_EQ(element0(back), element0(flipped));
  EXPECT_TRUE(std::ranges::equal(back.strides(), flipped.strides()));
  EXPECT_EQ(back.layout(), flipped.layout());
  EXPECT_EQ(back.buffer_id(), tensor.buffer_id()) << "the same storage, not a wrapper around it";
  ASSERT_OK_AND_ASSIGN(const MemoryDomain again, MemoryDomain::from_tensor(back));
  EXPECT_EQ(again.get_if<SystemView>()->element0(), domain.get_if<SystemView>()->element0());
  ASSERT_OK_AND_ASSIGN(const Tensor twice, again.to_tensor());
  EXPECT_EQ(twice.buffer_id(), tensor.buffer_id());
}

TEST(DomainTensor, ForeignPayloadsHaveNoTensorForm) {
  const MemoryDomain d3d11(OwnedD3D11Texture{.texture = 0x1000, .width = 4, .height = 4});
  EXPECT_ERROR(ErrorCode::UnsupportedDomain, d3d11.to_tensor());
  const MemoryDomain plain_cuda(
      OwnedCudaBuffer{.device_pointers = {0x1000}, .plane_count = 1, .width = 4, .height = 4});
  EXPECT_ERROR(ErrorCode::NotImplemented, plain_cuda.to_tensor());  // a CUDA buffer needs a pixel format
}

// A CUDA NV12 image at a made-up device address: memhal never dereferences it.
OwnedCudaBuffer cuda_nv12(KeepAlive keep_alive) {
  OwnedCudaBuffer cuda;
  cuda.format = PixelFormat::Nv12;
  cuda.width = 64;
  cuda.height = 32;
  cuda.plane_count = 2;
  cuda.device_pointers = {0x7f0000000000, 0x7f0000000000 + 128 * 32};
  cuda.pitches = {128, 128};
  cuda.device_ordinal = 1;
  cuda.keep_alive = std::move(keep_alive);
  return cuda;
}

TEST(DomainTensor, ACudaImageBecomesATensorTheCpuCannotMap) {
  auto owner = std::make_shared<int>(0);
  ASSERT_OK_AND_ASSIGN(const Tensor tensor, MemoryDomain(cuda_nv12(KeepAlive::of(owner))).to_tensor());
  EXPECT_EQ(tensor.memory(), MemoryKind::Cuda);
  EXPECT_EQ(tensor.pixel_format(), PixelFormat::Nv12);
  ASSERT_EQ(tensor.layout().planes().size(), 2u);
  EXPECT_EQ(tensor.layout().planes()[1].offset, 128 * 32);
  EXPECT_EQ(tensor.layout().planes()[1].pitch, 128);
  EXPECT_EQ(owner.use_count(), 2) << "the tensor holds the buffer's keep-alive";
  for (CpuAccess access : {CpuAccess::Read, CpuAccess::Write, CpuAccess::ReadWrite}) {
    EXPECT_ERROR(ErrorCode::NotHostAddressable, tensor.map(access));
  }
  EXPECT_ERROR(ErrorCode::NotHostAddressable, tensor.materialize(MemoryKind::Mem));
  EXPECT_EQ(tensor.fd(), -1);
}

TEST(DomainTensor, ACudaTensorRoundTripsThroughItsDomainOverTheSameStorage) {
  auto owner = std::make_shared<int>(0);
  ASSERT_OK_AND_ASSIGN(const Tensor tensor, MemoryDomain(cuda_nv12(KeepAlive::of(owner))).to_tensor());
  ASSERT_OK_AND_ASSIGN(const Tensor crop, tensor.crop(16, 8, 32, 16));
  ASSERT_OK_AND_ASSIGN(const MemoryDomain domain, MemoryDomain::from_tensor(crop));
  ASSERT_EQ(domain.kind(), MemoryDomainKind::Cuda);
  const OwnedCudaBuffer& cuda = *domain.get_if<OwnedCudaBuffer>();
  EXPECT_EQ(cuda.width, 32);
  EXPECT_EQ(cuda.height, 16);
  EXPECT_EQ(cuda.device_ordinal, 1);
  EXPECT_EQ(cuda.device_pointers[0], 0x7f0000000000u + 8 * 128 + 16);
  EXPECT_EQ(cuda.device_pointers[1], 0x7f0000000000u + 128 * 32 + 4 * 128 + 16);
  ASSERT_OK_AND_ASSIGN(const Tensor back, domain.to_tensor());
  EXPECT_TRUE(same_storage(back, tensor));
  EXPECT_EQ(back.layout().planes()[1].offset, crop.layout().planes()[1].offset);
}

TEST(DomainTensor, SameStorageHoldsAcrossADomainRoundTripForMemAndShm) {
  for (const MemoryKind kind : {MemoryKind::Mem, MemoryKind::Shm}) {
    ASSERT_OK_AND_ASSIGN(const Tensor image, Tensor::image(16, 8, PixelFormat::Rgba, kind));
    ASSERT_OK_AND_ASSIGN(const Tensor other, Tensor::image(16, 8, PixelFormat::Rgba, kind));
    ASSERT_OK_AND_ASSIGN(const Tensor view, image.crop(2, 1, 8, 4));
    for (const Tensor* t : {&image, &view}) {
      ASSERT_OK_AND_ASSIGN(const MemoryDomain domain, MemoryDomain::from_tensor(*t));
      ASSERT_OK_AND_ASSIGN(const Tensor back, domain.to_tensor());
      EXPECT_TRUE(same_storage(*t, back)) << to_string(kind);
      EXPECT_TRUE(same_storage(back, image)) << to_string(kind);
      EXPECT_FALSE(same_storage(back, other)) << to_string(kind);
      ASSERT_OK_AND_ASSIGN(const MemoryDomain again, MemoryDomain::from_tensor(back));
      ASSERT_OK_AND_ASSIGN(const Tensor twice, again.to_tensor());
      EXPECT_TRUE(same_storage(twice, image)) << to_string(kind);
    }
  }
}

TEST(DomainTensor, AnOwnedDmaBufHandedATensorAsKeepAliveComesBackOverItsStorage) {
  // What dmabuf_domain makes for a DmaBuf tensor (its fds duplicated, the tensor as keep-alive),
  // here over a Shm tensor so that it runs without DMA heaps.
  ASSERT_OK_AND_ASSIGN(const Tensor image, Tensor::image(16, 8, PixelFormat::Rgba, MemoryKind::Shm));
  OwnedDmaBuf dmabuf;
  dmabuf.format = PixelFormat::Rgba;
  dmabuf.width = 16;
  dmabuf.height = 8;
  dmabuf.plane_count = 1;
  ASSERT_OK_AND_ASSIGN(SharedFd fd, SharedFd::duplicate(image.fd()));
  dmabuf.planes[0] = {fd, 0, image.strides()[0]};
  dmabuf.keep_alive = KeepAlive::of(std::make_shared<const Tensor>(image));
  ASSERT_OK_AND_ASSIGN(const Tensor back, MemoryDomain(dmabuf).to_tensor());
  EXPECT_TRUE(same_storage(back, image));
  // An fd of another buffer is imported on its own, whatever the keep-alive says.
  ASSERT_OK_AND_ASSIGN(const Tensor other, Tensor::image(16, 8, PixelFormat::Rgba, MemoryKind::Shm));
  ASSERT_OK_AND_ASSIGN(dmabuf.planes[0].fd, SharedFd::duplicate(other.fd()));
  ASSERT_OK_AND_ASSIGN(const Tensor imported, MemoryDomain(dmabuf).to_tensor());
  EXPECT_FALSE(same_storage(imported, image));
  EXPECT_FALSE(same_storage(imported, other)) << "a fresh import of other's fd";
}

UniqueFd memfd_with(std::size_t size, std::byte fill) {
  UniqueFd fd(::memfd_create("domain-tensor-test", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_TRUE(fd.valid());
  std::vector<std::byte> bytes(size, fill);
  EXPECT_EQ(::write(fd.get(), bytes.data(), size), static_cast<ssize_t>(size));
  return fd;
}

TEST(DomainTensor, AnImportedOwnedDmaBufKeepsItsKeepAliveWithTheTensor) {
  auto owner = std::make_shared<int>(0);
  OwnedDmaBuf dmabuf;
  dmabuf.format = PixelFormat::Rgba;
  dmabuf.width = 10;
  dmabuf.height = 4;
  dmabuf.plane_count = 1;
  dmabuf.planes[0] = {SharedFd(memfd_with(64 * 4, std::byte{7})), 0, 64};
  dmabuf.keep_alive = KeepAlive::of(owner);
  std::optional<Tensor> tensor = MemoryDomain(dmabuf).to_tensor().value();
  dmabuf = OwnedDmaBuf{};
  EXPECT_EQ(owner.use_count(), 2) << "the tensor keeps what the frame's producer needs alive";
  ASSERT_OK_AND_ASSIGN(const Tensor view, tensor->crop(0, 1, 4, 2));
  tensor.reset();
  EXPECT_EQ(owner.use_count(), 2) << "views keep it too";
}

TEST(DomainTensor, AnOwnedDmaBufBecomesAnImageTensorOverItsPlanes) {
  // Two planes in two buffers, as V4L2 multi-planar capture gives them. memfds stand in for
  // DMA-BUFs here (they import as Shm); the VM test run covers real DMA heaps.
  OwnedDmaBuf dmabuf;
  dmabuf.format = PixelFormat::Nv12;
  dmabuf.width = 64;
  dmabuf.height = 32;
  dmabuf.plane_count = 2;
  dmabuf.planes[0] = {SharedFd(memfd_with(128 * 32, std::byte{16})), 0, 128};
  dmabuf.planes[1] = {SharedFd(memfd_with(128 * 16, std::byte{128})), 0, 128};
  ASSERT_OK_AND_ASSIGN(const Tensor tensor, MemoryDomain(dmabuf).to_tensor());
  EXPECT_EQ(tensor.pixel_format(), PixelFormat::Nv12);
  ASSERT_EQ(tensor.layout().planes().size(), 2u);
  EXPECT_EQ(tensor.layout().planes()[1].buffer, 1u);
  ASSERT_OK_AND_ASSIGN(const TensorMap map, tensor.map(CpuAccess::Read));
  EXPECT_EQ(map.plane(0)[127], std::byte{16});
  EXPECT_EQ(map.plane(1)[0], std::byte{128});
}

TEST(DomainTensor, AnInterleavedDmaBufKeepsItsPitchAndFormat) {
  OwnedDmaBuf dmabuf;
  dmabuf.format = PixelFormat::Rgba;
  dmabuf.width = 10;
  dmabuf.height = 4;
  dmabuf.plane_count = 1;
  dmabuf.planes[0] = {SharedFd(memfd_with(64 * 4 + 16, std::byte{7})), 16, 64};
  ASSERT_OK_AND_ASSIGN(const Tensor tensor, MemoryDomain(dmabuf).to_tensor());
  EXPECT_EQ(tensor.pixel_format(), PixelFormat::Rgba);
  EXPECT_TRUE(std::ranges::equal(tensor.shape(), std::array<int64_t, 3>{4, 10, 4}));
  EXPECT_TRUE(std::ranges::equal(tensor.strides(), std::array<int64_t, 3>{64, 4, 1}));
  EXPECT_EQ(tensor.layout().offset(), 16);
}

TEST(DomainTensor, TiledDmaBufsAndWrongPlaneCountsAreRefused) {
  OwnedDmaBuf dmabuf;
  dmabuf.format = PixelFormat::Nv12;
  dmabuf.width = 64;
  dmabuf.height = 32;
  dmabuf.plane_count = 1;
  dmabuf.planes[0] = {SharedFd(memfd_with(128 * 48, std::byte{0})), 0, 128};
  EXPECT_ERROR(ErrorCode::InvalidArgument, MemoryDomain(dmabuf).to_tensor());
  dmabuf.modifier = 0x0100000000000001ULL;  // I915_FORMAT_MOD_X_TILED
  EXPECT_ERROR(ErrorCode::NotImplemented, MemoryDomain(dmabuf).to_tensor());
}

TEST(DomainTensor, ADmaBufImageBecomesAnOwnedDmaBufOverItsFd) {
  // In the DMA-heap VM (frame_vm_test) a missing heap is a failure, not a skip.
  if (!is_available(MemoryKind::DmaBuf)) {
    if (std::getenv("MEMHAL_TEST_REQUIRE_DMABUF")) FAIL() << availability(MemoryKind::DmaBuf).reason;
    GTEST_SKIP() << "dmabuf: " << availability(MemoryKind::DmaBuf).reason;
  }
  ASSERT_OK_AND_ASSIGN(const Tensor image, Tensor::image(64, 32, PixelFormat::Nv12, MemoryKind::DmaBuf));
  ASSERT_OK_AND_ASSIGN(const MemoryDomain domain, MemoryDomain::from_tensor(image));
  ASSERT_EQ(domain.kind(), MemoryDomainKind::DmaBuf);
  const OwnedDmaBuf& dmabuf = *domain.get_if<OwnedDmaBuf>();
  EXPECT_EQ(dmabuf.plane_count, 2u);
  EXPECT_EQ(dmabuf.format, PixelFormat::Nv12);
  EXPECT_EQ(dmabuf.width, 64);
  EXPECT_EQ(dmabuf.planes[1].offset, image.layout().planes()[1].offset);
  EXPECT_EQ(dmabuf.planes[0].pitch, image.layout().planes()[0].pitch);
  ASSERT_OK_AND_ASSIGN(const Tensor back, domain.to_tensor());
  EXPECT_EQ(back.memory(), MemoryKind::DmaBuf);
  EXPECT_TRUE(same_storage(back, image)) << "the round trip comes back over the tensor's own storage";
  {
    // One storage: a write map is exclusive, as for any DmaBuf tensor.
    ASSERT_OK_AND_ASSIGN(const TensorMap a, image.map(CpuAccess::Write));
    a.plane(1)[5] = std::byte{77};
    EXPECT_ERROR(ErrorCode::Busy, back.map(CpuAccess::Read));
  }
  ASSERT_OK_AND_ASSIGN(const TensorMap b, back.map(CpuAccess::Read));
  EXPECT_EQ(b.plane(1)[5], std::byte{77}) << "the round trip shares the buffer";
  ASSERT_OK_AND_ASSIGN(const Tee tee, Tee::create(4));
  ASSERT_OK_AND_ASSIGN(MemoryDomain copy, domain.share());
  ASSERT_OK_AND_ASSIGN(const std::vector<Frame> branches, tee.push(Frame{std::move(copy), {}, 0, {}}));
  for (const Frame& branch : branches) {
    EXPECT_EQ(branch.payload.get_if<OwnedDmaBuf>()->planes[0].fd.get(), dmabuf.planes[0].fd.get());
  }
  EXPECT_EQ(dmabuf.planes[0].fd.get(), image.fd(0)) << "the frame shares the buffer's own fd: no dup per frame";
  EXPECT_EQ(dmabuf.planes[1].fd.get(), image.fd(0)) << "both planes lie in the one buffer";
  EXPECT_ERROR(ErrorCode::UnsupportedDomain, branches[0].payload.require_system_bytes("jpeg-encoder"));
}

}  // namespace
}  // namespace memhal

namespace memhal {
namespace {

TEST(DomainTensor, AShmTensorComesBackAsShmWithItsFd) {
  if (!is_available(MemoryKind::Shm)) GTEST_SKIP() << "shm: " << availability(MemoryKind::Shm).reason;
  ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::image(16, 8, PixelFormat::Rgba, MemoryKind::Shm));
  ASSERT_OK_AND_ASSIGN(const Tensor view, image.crop(4, 2, 8, 4));
  ASSERT_OK_AND_ASSIGN(const MemoryDomain domain, MemoryDomain::from_tensor(view));
  ASSERT_OK_AND_ASSIGN(const Tensor back, domain.to_tensor());
  EXPECT_EQ(back.memory(), MemoryKind::Shm) << "the backing survives the round trip, so the frame can cross processes";
  EXPECT_GE(back.fd(), 0);
  EXPECT_EQ(back.fd(), image.fd());
  ASSERT_OK_AND_ASSIGN(const TensorMap a, back.map(CpuAccess::Read));
  ASSERT_OK_AND_ASSIGN(const TensorMap b, view.map(CpuAccess::Read));
  EXPECT_EQ(a.data(), b.data());
  EXPECT_EQ(back.layout(), view.layout()) << "the same image: format, shape, strides, offset";
  EXPECT_EQ(back.pixel_format(), PixelFormat::Rgba);
}

}  // namespace
}  // namespace memhal
