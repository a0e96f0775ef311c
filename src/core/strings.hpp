// Private helpers for building error messages.
#pragma once

#include <cerrno>
#include <cstring>
#include <memhal/error.hpp>
#include <sstream>
#include <string>
#include <utility>

namespace memhal::detail {

/// Concatenates anything `operator<<` can print.
template <class... Parts>
std::string cat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}

/// The error side of a Result, with a message built from `parts`.
template <class... Parts>
Unexpected fail(ErrorCode code, Parts&&... parts) {
  return unexpected(Error(code, cat(std::forward<Parts>(parts)...)));
}

/// As `fail`, for a system call that set `err`; the message ends with ": <strerror>".
template <class... Parts>
Unexpected fail_errno(ErrorCode code, int err, Parts&&... parts) {
  return unexpected(Error(code, cat(std::forward<Parts>(parts)..., ": ", std::strerror(err)), err));
}

/// The `ErrorCode` a failed system call's errno most naturally maps to.
inline ErrorCode code_for_errno(int err) {
  switch (err) {
    case ENOMEM: return ErrorCode::OutOfMemory;
    case EACCES:
    case EPERM: return ErrorCode::PermissionDenied;
    case EINVAL: return ErrorCode::InvalidArgument;
    case ENOENT:
    case ENODEV:
    case ENXIO: return ErrorCode::Unavailable;
    default: return ErrorCode::Io;
  }
}

}  // namespace memhal::detail
