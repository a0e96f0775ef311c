/// @file
/// Frame payloads owned by GPU and platform APIs that memhal does not link: CUDA, Direct3D 11,
/// Core Video, wgpu, WebGPU and Vulkan.
///
/// Each holds the native handles as integers (a pointer or a 64-bit handle, as the API gives
/// it) plus a `KeepAlive` that owns the native object: whoever makes the payload wraps the
/// object in a `std::shared_ptr` whose deleter releases it (`cuMemFree`, `CVPixelBufferRelease`,
/// `vkDestroyImage` ...). `share()` copies the handles and bumps the keep-alive's count; the
/// native object is released exactly once, when the last share drops. memhal never
/// dereferences these handles; they exist on every platform so that any build can name,
/// carry and refuse them.
///
/// Thread-safety: values (one thread at a time); shares may be used and dropped on any threads
/// at once.
#pragma once

#include <array>
#include <cstdint>
#include <memhal/keep_alive.hpp>
#include <memhal/layout.hpp>
#include <memhal/vocabulary.hpp>
#include <optional>

namespace memhal {

/// CUDA device memory: one device pointer and pitch per plane (`CUdeviceptr` values).
struct OwnedCudaBuffer {
  static constexpr MemoryDomainKind kKind = MemoryDomainKind::Cuda;
  std::array<uint64_t, kMaxPlanes> device_pointers{};  ///< the first `plane_count` are used
  std::array<int64_t, kMaxPlanes> pitches{};           ///< bytes per row of each plane
  uint32_t plane_count = 0;
  int64_t width = 0;
  int64_t height = 0;
  std::optional<PixelFormat> format{};  ///< empty for a plain tensor buffer
  uint64_t context = 0;                 ///< the `CUcontext` the pointers belong to
  int32_t device_ordinal = 0;           ///< the CUDA device index
  KeepAlive keep_alive{};
  OwnedCudaBuffer share() const { return *this; }
};

/// A Direct3D 11 texture (`ID3D11Texture2D*`).
struct OwnedD3D11Texture {
  static constexpr MemoryDomainKind kKind = MemoryDomainKind::D3D11Texture;
  uint64_t texture = 0;        ///< `ID3D11Texture2D*`
  uint64_t shared_handle = 0;  ///< NT or KMT shared `HANDLE`, 0 when not shared
  uint32_t subresource = 0;    ///< array slice of a texture array
  uint32_t dxgi_format = 0;    ///< `DXGI_FORMAT`
  int64_t width = 0;
  int64_t height = 0;
  KeepAlive keep_alive{};
  OwnedD3D11Texture share() const { return *this; }
};

/// A Core Video pixel buffer (`CVPixelBufferRef`, possibly IOSurface-backed).
struct OwnedCvPixelBuffer {
  static constexpr MemoryDomainKind kKind = MemoryDomainKind::CvPixelBuffer;
  uint64_t pixel_buffer = 0;       ///< `CVPixelBufferRef`
  uint32_t pixel_format_type = 0;  ///< `OSType` FourCC, e.g. '420v'
  int64_t width = 0;
  int64_t height = 0;
  KeepAlive keep_alive{};
  OwnedCvPixelBuffer share() const { return *this; }
};

/// A WebGPU `GPUExternalTexture` (a video frame imported into WebGPU).
struct OwnedWebGPUExternalTexture {
  static constexpr MemoryDomainKind kKind = MemoryDomainKind::WebGPUExternalTexture;
  uint64_t external_texture = 0;  ///< `WGPUExternalTexture`
  int64_t width = 0;
  int64_t height = 0;
  KeepAlive keep_alive{};
  OwnedWebGPUExternalTexture share() const { return *this; }
};

/// A wgpu (Rust) texture, as its raw id.
struct OwnedWgpuTexture {
  static constexpr MemoryDomainKind kKind = MemoryDomainKind::WgpuTexture;
  uint64_t texture = 0;  ///< the texture's raw id or pointer
  uint32_t format = 0;   ///< `wgpu::TextureFormat` as an integer
  int64_t width = 0;
  int64_t height = 0;
  KeepAlive keep_alive{};
  OwnedWgpuTexture share() const { return *this; }
};

/// A wgpu (Rust) buffer, as its raw id.
struct OwnedWgpuBuffer {
  static constexpr MemoryDomainKind kKind = MemoryDomainKind::WgpuBuffer;
  uint64_t buffer = 0;  ///< the buffer's raw id or pointer
  uint64_t offset = 0;  ///< bytes before the payload
  uint64_t size = 0;    ///< payload bytes
  KeepAlive keep_alive{};
  OwnedWgpuBuffer share() const { return *this; }
};

/// A Vulkan image and the memory bound to it.
struct OwnedVulkanTexture {
  static constexpr MemoryDomainKind kKind = MemoryDomainKind::VulkanTexture;
  uint64_t image = 0;   ///< `VkImage`
  uint64_t memory = 0;  ///< `VkDeviceMemory`
  uint64_t device = 0;  ///< `VkDevice`
  uint32_t format = 0;  ///< `VkFormat`
  uint32_t layout = 0;  ///< `VkImageLayout` the image is in
  int64_t width = 0;
  int64_t height = 0;
  KeepAlive keep_alive{};
  OwnedVulkanTexture share() const { return *this; }
};

/// A WebGPU `GPUBuffer` (webgpu.h).
struct OwnedWebGPUBuffer {
  static constexpr MemoryDomainKind kKind = MemoryDomainKind::WebGPUBuffer;
  uint64_t buffer = 0;  ///< `WGPUBuffer`
  uint64_t offset = 0;  ///< bytes before the payload
  uint64_t size = 0;    ///< payload bytes
  KeepAlive keep_alive{};
  OwnedWebGPUBuffer share() const { return *this; }
};

}  // namespace memhal
