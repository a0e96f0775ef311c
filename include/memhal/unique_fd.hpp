/// @file
/// `UniqueFd`: sole ownership of one file descriptor.
///
/// Every fd memhal opens lives in a `UniqueFd` from the system call that made it onward, so it
/// is closed exactly once whatever path the code takes. Move-only; not thread-safe (like any
/// value type, one owner at a time).
#pragma once

#include <memhal/export.hpp>

namespace memhal {

class MEMHAL_EXPORT UniqueFd {
 public:
  UniqueFd() noexcept = default;
  /// Takes ownership of `fd` (which may be -1 for "none"); the `UniqueFd` closes it.
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  /// The fd, still owned by this object; -1 when empty.
  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }

  /// Gives up ownership: the caller closes the returned fd.
  [[nodiscard]] int release() noexcept {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

  /// Closes the owned fd (if any) and takes ownership of `fd`.
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

}  // namespace memhal
