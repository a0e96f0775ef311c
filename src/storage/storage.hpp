// The backend interface behind every Tensor: one Storage subclass per memory kind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memhal/error.hpp>
#include <memhal/unique_fd.hpp>
#include <memhal/vocabulary.hpp>
#include <memory>
#include <string>

namespace memhal::detail {

/// The next buffer identity: process-unique, from 1, never reused.
uint64_t next_storage_id() noexcept;

/// One allocation (or import) of bytes. Thread-safe: CPU access is bracketed by
/// begin_access/end_access, which backends that need cache maintenance implement.
///
/// Every storage is owned by `std::shared_ptr`, so `weak_from_this()` tells whether the
/// allocation still exists. A tensor may hold a storage through an aliasing pointer (a pool
/// slot's lease, a frame's keep-alive): never turn a storage back into an owning pointer
/// with `shared_from_this()` to keep it in use, as that would not hold what the alias holds.
class Storage : public std::enable_shared_from_this<Storage> {
 public:
  virtual ~Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  virtual MemoryKind kind() const noexcept = 0;
  /// Bytes addressable from the base pointer.
  virtual std::size_t size() const noexcept = 0;
  /// Starts CPU access and returns the base address; each success is paired with exactly one
  /// end_access(access). `NotHostAddressable` for device memory.
  virtual Result<std::byte*> begin_access(CpuAccess access) = 0;
  virtual void end_access(CpuAccess access) noexcept = 0;
  /// The fd behind the storage (owned by it), or null. `fd()` is its number (or -1); a
  /// `SharedFd(storage, *owned_fd())` shares it with the storage's lifetime, without a `dup`.
  virtual const UniqueFd* owned_fd() const noexcept { return nullptr; }
  int fd() const noexcept {
    const UniqueFd* owned = owned_fd();
    return owned != nullptr ? owned->get() : -1;
  }
  /// The buffer identity: process-unique and never reused, so a cache keyed by it cannot
  /// mistake a new buffer for a freed one. `same_storage` compares ids.
  uint64_t id() const noexcept { return id_; }

  /// Why auto-selection skipped other kinds to land here; empty when nothing was skipped.
  const std::string& notes() const noexcept { return notes_; }
  void set_notes(std::string notes) { notes_ = std::move(notes); }

 protected:
  Storage() noexcept : id_(next_storage_id()) {}

 private:
  const uint64_t id_;
  std::string notes_;
};

}  // namespace memhal::detail
