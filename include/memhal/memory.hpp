/// @file
/// Which memory kinds this process can allocate, and why not.
///
/// `is_available(kind)` answers whether `Tensor::create` pinned to `kind` can allocate here,
/// now. Each kind is probed once, by a real allocation where one is possible (not by looking
/// for a file), and the answer is cached for the life of the process. `availability(kind)`
/// adds the reason: which device served, or the path, errno or missing driver that stopped it.
/// Thread-safe.
#pragma once

#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/vocabulary.hpp>
#include <string>

namespace memhal {

/// The answer of a probe.
struct Availability {
  bool available = false;
  /// What served ("heap memory, 64-byte aligned", "/dev/dma_heap/system") or exactly why none
  /// could ("/dev/dma_heap/system: Permission denied", "IOSurface exists only on Apple platforms").
  std::string reason;
  /// What a pinned request for this kind fails with when it is not available:
  /// `Unavailable` (cannot here, now) or `NotImplemented` (no backend for it in this build).
  ErrorCode refusal = ErrorCode::Unavailable;
};

/// Whether `Tensor::create` pinned to `kind` can allocate in this process. Cached after the
/// first call. False for a value outside the vocabulary.
MEMHAL_EXPORT bool is_available(MemoryKind kind);

/// `is_available` with its reason. Cached after the first call.
MEMHAL_EXPORT Availability availability(MemoryKind kind);

/// Whether `MEMHAL_FORCE_MEM` is set to anything but "", "0" or "false" (read at each call):
/// auto-selection then goes straight to `Mem`.
MEMHAL_EXPORT bool force_mem_requested();

}  // namespace memhal
