#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <memhal/foreign_handles.hpp>
#include <memhal/memory_domain.hpp>
#include <memhal/owned_dma_buf.hpp>

#include <atomic>

#include "test_support.hpp"

namespace memhal {
namespace {

// Stands in for a native object (a CUDA allocation, a VkImage): counts its releases.
struct NativeObject {
  explicit NativeObject(std::atomic<int>* counter) : releases(counter) {}
  NativeObject(const NativeObject&) = delete;
  NativeObject& operator=(const NativeObject&) = delete;
  ~NativeObject() { releases->fetch_add(1); }
  std::atomic<int>* releases;
  int id = 42;
};

KeepAlive counting_keep_alive(std::atomic<int>* releases) {
  return KeepAlive::of(std::make_shared<NativeObject>(releases));
}

// Every foreign payload, each with its own counting keep-alive.
std::vector<MemoryDomain> foreign_domains(std::atomic<int>* releases) {
  OwnedCudaBuffer cuda;
  cuda.device_pointers = {0x7f0000000000, 0x7f0000100000};
  cuda.pitches = {2048, 2048};
  cuda.plane_count = 2;
  cuda.width = 1920;
  cuda.height = 1080;
  cuda.format = PixelFormat::Nv12;
  cuda.context = 0xC0FFEE;
  cuda.device_ordinal = 1;
  cuda.keep_alive = counting_keep_alive(releases);
  OwnedD3D11Texture d3d{.texture = 0x1000,
                        .shared_handle = 0x2000,
                        .subresource = 1,
                        .dxgi_format = 28,
                        .width = 640,
                        .height = 480,
                        .keep_alive = counting_keep_alive(releases)};
  OwnedCvPixelBuffer cv{.pixel_buffer = 0x3000,
                        .pixel_format_type = 0x34323076,
                        .width = 1280,
                        .height = 720,
                        .keep_alive = counting_keep_alive(releases)};
  OwnedWgpuTexture wgpu_texture{
      .texture = 7, .format = 18, .width = 64, .height = 64, .keep_alive = counting_keep_alive(releases)};
  OwnedWgpuBuffer wgpu_buffer{.buffer = 8, .offset = 0, .size = 4096, .keep_alive = counting_keep_alive(releases)};
  OwnedWebGPUExternalTexture external{
      .external_texture = 9, .width = 32, .height = 16, .keep_alive = counting_keep_alive(releases)};
  OwnedVulkanTexture vulkan{.image = 10,
                            .memory = 11,
                            .device = 12,
                            .format = 37,
                            .layout = 1,
                            .width = 256,
                            .height = 128,
                            .keep_alive = counting_keep_alive(releases)};
  OwnedWebGPUBuffer webgpu{.buffer = 13, .offset = 256, .size = 1024, .keep_alive = counting_keep_alive(releases)};
  return {cuda, d3d, cv, wgpu_texture, wgpu_buffer, external, vulkan, webgpu};
}

TEST(KeepAlive, GivesTheObjectBackOnlyAsItsOwnType) {
  std::atomic<int> releases{0};
  const KeepAlive keep_alive = counting_keep_alive(&releases);
  ASSERT_NE(keep_alive.get<NativeObject>(), nullptr);
  EXPECT_EQ(keep_alive.get<NativeObject>()->id, 42);
  EXPECT_EQ(keep_alive.get<int>(), nullptr);
  EXPECT_EQ(KeepAlive().get<NativeObject>(), nullptr);
  EXPECT_FALSE(KeepAlive());
}

TEST(ForeignHandles, EveryForeignKindSharesByCountAndReleasesItsObjectOnce) {
  std::atomic<int> releases{0};
  {
    const std::vector<MemoryDomain> domains = foreign_domains(&releases);
    ASSERT_EQ(domains.size(), 8u);
    std::vector<MemoryDomain> shares;
    for (const MemoryDomain& domain : domains) {
      for (int i = 0; i < 3; ++i) {
        ASSERT_OK_AND_ASSIGN(MemoryDomain share, domain.share());
        EXPECT_EQ(share.kind(), domain.kind());
        shares.push_back(std::move(share));
      }
    }
    EXPECT_EQ(releases.load(), 0);
    shares.clear();
    EXPECT_EQ(releases.load(), 0) << "the originals still hold their objects";
  }
  EXPECT_EQ(releases.load(), 8) << "each native object released exactly once";
}

TEST(ForeignHandles, ShareKeepsEveryHandleAndTheSameKeepAliveObject) {
  std::atomic<int> releases{0};
  const std::vector<MemoryDomain> domains = foreign_domains(&releases);
  ASSERT_OK_AND_ASSIGN(const MemoryDomain cuda_share, domains[0].share());
  const auto* cuda = cuda_share.get_if<OwnedCudaBuffer>();
  ASSERT_NE(cuda, nullptr);
  EXPECT_EQ(cuda->device_pointers[1], 0x7f0000100000u);
  EXPECT_EQ(cuda->pitches[0], 2048);
  EXPECT_EQ(cuda->context, 0xC0FFEEu);
  EXPECT_EQ(cuda->device_ordinal, 1);
  EXPECT_EQ(cuda->keep_alive.get<NativeObject>(), domains[0].get_if<OwnedCudaBuffer>()->keep_alive.get<NativeObject>());
  EXPECT_EQ(cuda->keep_alive.use_count(), 2);
  ASSERT_OK_AND_ASSIGN(const MemoryDomain vulkan_share, domains[6].share());
  EXPECT_EQ(vulkan_share.get_if<OwnedVulkanTexture>()->image, 10u);
  EXPECT_EQ(vulkan_share.get_if<OwnedVulkanTexture>()->memory, 11u);
}

UniqueFd memfd(std::size_t size) {
  UniqueFd fd(::memfd_create("frame-test", MFD_CLOEXEC));
  EXPECT_TRUE(fd.valid());
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  return fd;
}

TEST(OwnedDmaBuf, ShareBumpsEveryPlanesFdCountAndClosesNothing) {
  OwnedDmaBuf dmabuf;
  dmabuf.format = PixelFormat::Nv12;
  dmabuf.width = 64;
  dmabuf.height = 32;
  dmabuf.plane_count = 2;
  dmabuf.planes[0] = {SharedFd(memfd(64 * 48)), 0, 64};
  dmabuf.planes[1] = {dmabuf.planes[0].fd, 64 * 32, 64};
  const int fd = dmabuf.planes[0].fd.get();
  {
    const MemoryDomain domain(dmabuf);
    ASSERT_OK_AND_ASSIGN(const MemoryDomain share, domain.share());
    const auto* shared = share.get_if<OwnedDmaBuf>();
    ASSERT_NE(shared, nullptr);
    EXPECT_EQ(shared->planes[0].fd.get(), fd) << "a share is the same fd, not a dup";
    EXPECT_EQ(shared->planes[1].offset, 64 * 32);
    EXPECT_EQ(dmabuf.planes[0].fd.use_count(), 6);
  }
  EXPECT_EQ(dmabuf.planes[0].fd.use_count(), 2);
  EXPECT_NE(::fcntl(fd, F_GETFD), -1) << "still open while the last holder lives";
}

}  // namespace
}  // namespace memhal
