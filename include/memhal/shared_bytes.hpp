/// @file
/// `SharedBytes`: a reference-counted, read-only window onto one block of CPU bytes.
///
/// The block behind it is owned memory (allocated by memhal or adopted from a vector), bytes
/// lent by the application (released through its callback, exactly once, when the last
/// reference drops), or bytes kept alive by any `std::shared_ptr` (a tensor's storage, for
/// instance). Copying a `SharedBytes` bumps the count; `subrange` narrows the window over the
/// same block. Writing is allowed only through `mutable_data()`, which answers for a sole
/// holder of a block memhal owns: the rule copy-on-write (`SystemSlice`) is built on.
///
/// Thread-safety: a `SharedBytes` object is a value (one thread at a time); copies of it may
/// be made, used and dropped on any threads at once.
#pragma once

#include <cstddef>
#include <functional>
#include <memhal/counted.hpp>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memory>
#include <span>
#include <vector>

namespace memhal {

namespace detail {
class Storage;
struct SharedBytesAccess;

/// One block of bytes and what keeps it alive.
struct ByteBlock {
  std::byte* data = nullptr;
  std::size_t size = 0;
  bool writable = false;              ///< memhal owns the bytes and may let a sole holder write
  std::shared_ptr<const void> owner;  ///< frees or releases the bytes when the block dies
  /// The tensor storage these bytes are the whole of, when a `MemoryDomain` was made from a
  /// tensor: `to_tensor` gives that storage back (its memory kind, its fd) instead of
  /// anonymous bytes. Internal; empty for bytes of any other origin.
  std::shared_ptr<Storage> storage;
};
}  // namespace detail

class MEMHAL_EXPORT SharedBytes {
 public:
  /// Empty: no block, size 0.
  SharedBytes() noexcept = default;

  /// `size` new zeroed bytes, 64-byte aligned, owned by memhal. `OutOfMemory` on failure.
  static Result<SharedBytes> allocate(std::size_t size);
  /// As `allocate`, without zeroing: the contents are unspecified until written, for a
  /// caller about to write every byte (a gather, a decoder's output).
  static Result<SharedBytes> allocate_for_overwrite(std::size_t size);
  /// A new owned copy of `bytes`. `OutOfMemory` on failure.
  static Result<SharedBytes> copy_of(std::span<const std::byte> bytes);
  /// Takes the vector's buffer (no copy); memhal owns it from now on.
  static SharedBytes adopt(std::vector<std::byte> bytes);
  /// Borrows `bytes`, which the application keeps valid until `release` runs; memhal calls
  /// `release` exactly once, when the last reference drops (on whichever thread drops it).
  /// The bytes are never written.
  static SharedBytes lend(std::span<const std::byte> bytes, std::function<void()> release);
  /// Borrows `bytes`, kept valid by `owner` (held until the last reference drops). Never
  /// written.
  static SharedBytes keep_alive(std::span<const std::byte> bytes, std::shared_ptr<const void> owner);

  const std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::span<const std::byte> span() const noexcept { return {data_, size_}; }

  /// `size` bytes from `offset` of this window, sharing the block. `OutOfRange` when they do
  /// not lie inside it.
  Result<SharedBytes> subrange(std::size_t offset, std::size_t size) const;

  /// References to the block (every `SharedBytes` over it, whatever its window).
  long use_count() const noexcept { return block_.use_count(); }
  /// Whether this is the only reference to its block (an acquire: safe to write after).
  bool unique() const noexcept { return block_.unique(); }
  /// Whether memhal owns the block's bytes (allocated or adopted), as opposed to lent or kept
  /// alive by someone else.
  bool owned() const noexcept { return block_ && block_->writable; }
  /// The bytes for writing, when this is the sole reference to an owned block; else null.
  std::byte* mutable_data() const noexcept { return owned() && unique() ? const_cast<std::byte*>(data_) : nullptr; }

  /// Whether `a` and `b` reference one block.
  friend bool same_block(const SharedBytes& a, const SharedBytes& b) noexcept { return a.block_ == b.block_; }

 private:
  friend struct detail::SharedBytesAccess;
  SharedBytes(detail::Counted<detail::ByteBlock> block, const std::byte* data, std::size_t size) noexcept
      : block_(std::move(block)), data_(data), size_(size) {}

  detail::Counted<detail::ByteBlock> block_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace memhal
