/// @file
/// `OwnedDmaBuf`: the `MemoryDomainKind::DmaBuf` payload — a frame in up to four DMA-BUF
/// planes (fd, offset, pitch), with its pixel format and DRM format modifier.
///
/// Every plane's fd is a `SharedFd`: a share of the frame is a count bump, and each fd is
/// closed once, when the last share holding it drops. `keep_alive` may hold whatever else the
/// buffer's producer needs alive while a consumer reads it (a tensor's storage, a V4L2 buffer
/// that must not be requeued, a GPU allocation).
///
/// Thread-safety: a value (one thread at a time); shares may be used and dropped on any
/// threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <memhal/export.hpp>
#include <memhal/keep_alive.hpp>
#include <memhal/layout.hpp>
#include <memhal/shared_fd.hpp>
#include <memhal/vocabulary.hpp>

namespace memhal {

/// `DRM_FORMAT_MOD_LINEAR`: plain rows, no tiling or compression.
inline constexpr uint64_t kDrmModifierLinear = 0;
/// `DRM_FORMAT_MOD_INVALID`: the modifier is not known.
inline constexpr uint64_t kDrmModifierInvalid = 0x00ffffffffffffffULL;

/// One plane of a DMA-BUF frame.
struct DmaBufPlane {
  SharedFd fd;         ///< the buffer holding the plane (planes may share one fd)
  int64_t offset = 0;  ///< byte offset of the plane's first row in the buffer
  int64_t pitch = 0;   ///< bytes from one row to the next
};

struct OwnedDmaBuf {
  static constexpr MemoryDomainKind kKind = MemoryDomainKind::DmaBuf;

  std::array<DmaBufPlane, kMaxPlanes> planes{};  ///< the first `plane_count` are used
  uint32_t plane_count = 0;
  int64_t width = 0;   ///< pixels
  int64_t height = 0;  ///< rows
  PixelFormat format = PixelFormat::Rgba;
  uint64_t modifier = kDrmModifierLinear;  ///< DRM format modifier
  KeepAlive keep_alive{};                  ///< optional: what else must live while it is read

  /// Another handle to the same buffers (count bumps; never a copy).
  OwnedDmaBuf share() const { return *this; }
};

}  // namespace memhal
