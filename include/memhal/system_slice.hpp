/// @file
/// `SystemSlice`: the `MemoryDomainKind::System` payload — plain CPU bytes of a frame.
///
/// A slice is in one of three states (`Ownership`):
/// * `Owned` — bytes this slice owns alone (allocated, copied or adopted from a vector);
/// * `Lent` — bytes the application lent with a release callback, called exactly once when
///   the last slice over them drops;
/// * `Shared` — reference-counted bytes: owned bytes after `make_shareable()` (which copies
///   nothing: the data pointer stays), or bytes kept alive by another object (a tensor).
///
/// A slice that `MemoryDomain::from_tensor` made from a tensor also remembers that tensor
/// (its storage and whole `Layout`: pixel format, planes, name), so that `to_tensor()` gives
/// the same image back; its shares remember it too, and a copy made by `mutable_bytes()` does
/// not.
///
/// `share()` is a reference-count bump for `Lent` and `Shared` slices and a deep copy for
/// `Owned` ones — the only deep copy any `MemoryDomain::share()` makes; call `make_shareable()`
/// first (as `Tee` does) to avoid it. Writing goes through `mutable_bytes()`, copy-on-write:
/// a sole owner of its bytes writes in place, anyone else gets a private copy first.
///
/// Thread-safety: a slice is a value (one thread at a time); slices sharing bytes may be
/// shared, written (copy-on-write) and dropped on different threads at once.
#pragma once

#include <cstddef>
#include <functional>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/shared_bytes.hpp>
#include <memhal/vocabulary.hpp>
#include <memory>
#include <span>
#include <vector>

namespace memhal {

class MemoryDomain;
class Tensor;

class MEMHAL_EXPORT SystemSlice {
 public:
  static constexpr MemoryDomainKind kKind = MemoryDomainKind::System;

  /// Who the bytes belong to; see the file comment.
  enum class Ownership : uint32_t { Owned = 0, Lent = 1, Shared = 2 };

  /// An empty owned slice.
  SystemSlice() noexcept = default;

  /// `size` new zeroed bytes. `OutOfMemory` on failure.
  static Result<SystemSlice> allocate(std::size_t size);
  /// An owned copy of `bytes`. `OutOfMemory` on failure.
  static Result<SystemSlice> copy_of(std::span<const std::byte> bytes);
  /// Owned bytes taken from `bytes` without copying.
  static SystemSlice adopt(std::vector<std::byte> bytes);
  /// Lent bytes: the application keeps `bytes` valid until memhal calls `release`, exactly
  /// once, when the last slice (or `SharedBytes`) over them drops. Never written by memhal.
  static SystemSlice lend(std::span<const std::byte> bytes, std::function<void()> release);
  /// Shared bytes over `bytes` (no copy).
  static SystemSlice shared(SharedBytes bytes) noexcept { return SystemSlice(std::move(bytes), Ownership::Shared); }

  Ownership ownership() const noexcept { return ownership_; }
  bool is_shareable() const noexcept { return ownership_ != Ownership::Owned; }

  const std::byte* data() const noexcept { return bytes_.data(); }
  std::size_t size() const noexcept { return bytes_.size(); }
  bool empty() const noexcept { return bytes_.empty(); }
  std::span<const std::byte> bytes() const noexcept { return bytes_.span(); }
  /// The reference-counted bytes behind the slice (a copy is a count bump, never a byte copy).
  const SharedBytes& shared_bytes() const noexcept { return bytes_; }

  /// Turns `Owned` bytes into `Shared` ones in place: no copy, `data()` unchanged. No-op for
  /// the other states.
  void make_shareable() noexcept {
    if (ownership_ == Ownership::Owned) ownership_ = Ownership::Shared;
  }

  /// Another slice over the same bytes (a count bump) — or, for `Owned` bytes, an owned deep
  /// copy. `OutOfMemory` when that copy cannot be allocated.
  Result<SystemSlice> share() const;

  /// The bytes for writing, copy-on-write: in place when this slice is the sole holder of
  /// bytes memhal owns; otherwise (shared, lent, or kept alive by a tensor) after copying them
  /// into new `Owned` bytes, which this slice then holds (no longer the tensor it was made
  /// from). `OutOfMemory` when the copy fails.
  Result<std::span<std::byte>> mutable_bytes();

 private:
  SystemSlice(SharedBytes bytes, Ownership ownership) noexcept : bytes_(std::move(bytes)), ownership_(ownership) {}

  friend class MemoryDomain;  // sets and reads source_
  SharedBytes bytes_;
  Ownership ownership_ = Ownership::Owned;
  std::shared_ptr<const Tensor> source_;  ///< the tensor these bytes are, when made from one
};

/// "owned", "lent" or "shared".
MEMHAL_EXPORT std::string_view to_string(SystemSlice::Ownership ownership) noexcept;

}  // namespace memhal
