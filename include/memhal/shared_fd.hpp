/// @file
/// `SharedFd`: one file descriptor owned jointly by every copy.
///
/// The fd is closed when the last copy is destroyed. Copies share the same fd number (no
/// `dup`); the reference count is thread-safe, the fd itself is whatever the kernel makes it.
#pragma once

#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/unique_fd.hpp>
#include <memory>

namespace memhal {

class MEMHAL_EXPORT SharedFd {
 public:
  SharedFd() noexcept = default;
  /// Takes ownership of `fd`: the `SharedFd` (its last copy) closes it.
  explicit SharedFd(UniqueFd&& fd);
  /// Shares `fd`, which `owner` (non-null) keeps open, without a `dup`: the fd stays open while
  /// any copy of this `SharedFd` lives, because each copy holds `owner`.
  SharedFd(std::shared_ptr<const void> owner, const UniqueFd& fd) noexcept : fd_(std::move(owner), &fd) {}

  /// Duplicates `fd` (which the caller keeps and closes) with `F_DUPFD_CLOEXEC`.
  /// Fails with `InvalidArgument` for a negative fd and `Io` (with errno) when `dup` fails,
  /// for instance `EBADF` for a closed fd.
  static Result<SharedFd> duplicate(int fd);

  /// The fd, owned by this object and its copies; -1 when empty.
  int get() const noexcept { return fd_ ? fd_->get() : -1; }
  bool valid() const noexcept { return get() >= 0; }
  explicit operator bool() const noexcept { return valid(); }

  /// A new fd (`F_DUPFD_CLOEXEC`) that the caller owns.
  Result<UniqueFd> dup() const;

  /// How many `SharedFd` objects share this fd (0 when empty).
  long use_count() const noexcept { return fd_.use_count(); }

 private:
  std::shared_ptr<const UniqueFd> fd_;
};

}  // namespace memhal
