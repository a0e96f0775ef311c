// A shared mapping of an fd-backed buffer (shm, dmabuf), unmapped when destroyed.
#pragma once

#include <cstddef>
#include <memhal/error.hpp>
#include <string_view>

namespace memhal::detail {

/// One `mmap(MAP_SHARED)` of `size` bytes of an fd, kept for the life of the object.
/// Move-only. The fd may be closed while the mapping lives.
class Mapping {
 public:
  Mapping() noexcept = default;
  /// Maps `size` bytes of `fd`, read-write when `writable`, else read-only. `populate` asks the
  /// kernel to fault every page in now (MAP_POPULATE). `Io` (with errno) naming `what` on failure.
  static Result<Mapping> create(int fd, std::size_t size, bool writable, std::string_view what, bool populate = false);
  Mapping(Mapping&& other) noexcept : base_(other.base_), size_(other.size_) { other.base_ = nullptr; }
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  std::byte* base() const noexcept { return base_; }
  std::size_t size() const noexcept { return size_; }
  bool valid() const noexcept { return base_ != nullptr; }

 private:
  Mapping(std::byte* base, std::size_t size) noexcept : base_(base), size_(size) {}
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
};

/// `bytes` rounded up to whole pages (at least one page): what fd-backed buffers are sized in.
std::size_t page_round(std::size_t bytes) noexcept;

}  // namespace memhal::detail
