#include <fcntl.h>
#include <unistd.h>

#include <memhal/shared_fd.hpp>
#include <memhal/unique_fd.hpp>

#include "core/strings.hpp"

namespace memhal {

void UniqueFd::reset(int fd) noexcept {
  if (fd_ >= 0 && fd_ != fd) {
    // close() may fail with EINTR, but the fd is released either way on Linux: never retry.
    ::close(fd_);
  }
  fd_ = fd;
}

SharedFd::SharedFd(UniqueFd&& fd) {
  if (fd.valid()) fd_ = std::make_shared<const UniqueFd>(std::move(fd));
}

Result<SharedFd> SharedFd::duplicate(int fd) {
  if (fd < 0) return detail::fail(ErrorCode::InvalidArgument, "cannot duplicate fd ", fd, ": not an fd");
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return detail::fail_errno(ErrorCode::Io, errno, "dup of fd ", fd, " failed");
  return SharedFd(UniqueFd(copy));
}

Result<UniqueFd> SharedFd::dup() const {
  if (!valid()) return detail::fail(ErrorCode::InvalidArgument, "dup of an empty SharedFd");
  int copy = ::fcntl(get(), F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return detail::fail_errno(ErrorCode::Io, errno, "dup of fd ", get(), " failed");
  return UniqueFd(copy);
}

}  // namespace memhal
