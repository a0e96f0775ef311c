// The backend interface behind every Tensor: one Storage subclass per memory kind.
#pragma once

#include <cstddef>
#include <memhal/error.hpp>
#include <memhal/vocabulary.hpp>
#include <string>

namespace memhal::detail {

/// One allocation (or import) of bytes. Thread-safe: CPU access is bracketed by
/// begin_access/end_access, which backends that need cache maintenance implement.
class Storage {
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
  /// The fd behind the storage (owned by it), or -1.
  virtual int fd() const noexcept { return -1; }
  /// The allocation this storage is: itself, or for a storage that only forwards to another
  /// one (to refuse writes, or to hold a keep-alive) that one's origin. `same_storage`
  /// compares origins.
  virtual const Storage& origin() const noexcept { return *this; }

  /// Why auto-selection skipped other kinds to land here; empty when nothing was skipped.
  const std::string& notes() const noexcept { return notes_; }
  void set_notes(std::string notes) { notes_ = std::move(notes); }

 protected:
  Storage() = default;

 private:
  std::string notes_;
};

}  // namespace memhal::detail
