/// @file
/// `Frame`: one unit of a pipeline — a payload in some `MemoryDomain`, its timing, a sequence
/// number and typed `Metadata`.
///
/// A value type. `share()` gives another consumer the same frame without copying bytes
/// (the payload's `share()`; metadata shared copy-on-write); `make_shareable()` first, as `Tee`
/// does, makes that true for owned system bytes too. A frame made from a tensor
/// (`MemoryDomain::from_tensor`), every share of it, and every tensor back from one
/// (`payload.to_tensor()`) keep that tensor's image and its buffer — a `TensorPool` slot
/// included — alive.
///
/// Thread-safety: a value (one thread at a time); shares may be used, written (copy-on-write)
/// and dropped on any threads at once.
#pragma once

#include <cstdint>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/memory_domain.hpp>
#include <memhal/metadata.hpp>
#include <optional>

namespace memhal {

/// When a frame is presented, decoded and for how long, in nanoseconds; empty when unknown.
struct FrameTiming {
  std::optional<int64_t> pts;
  std::optional<int64_t> dts;
  std::optional<int64_t> duration;
  friend bool operator==(const FrameTiming&, const FrameTiming&) = default;
};

struct MEMHAL_EXPORT Frame {
  MemoryDomain payload;
  FrameTiming timing;
  uint64_t sequence = 0;  ///< position in its stream, assigned by the producer
  Metadata metadata;

  /// Another frame with the same payload (see `MemoryDomain::share`: a deep copy only for
  /// owned system bytes not made shareable), timing, sequence and metadata (shared).
  /// `OutOfMemory` if the payload copy fails.
  Result<Frame> share() const;
  /// `payload.make_shareable()`: no copy, ever.
  void make_shareable() noexcept { payload.make_shareable(); }
};

}  // namespace memhal
