#include <memhal/error.hpp>

namespace memhal {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::InvalidArgument: return "invalid_argument";
    case ErrorCode::NotImplemented: return "not_implemented";
    case ErrorCode::Unavailable: return "unavailable";
    case ErrorCode::OutOfMemory: return "out_of_memory";
    case ErrorCode::Io: return "io";
    case ErrorCode::PermissionDenied: return "permission_denied";
    case ErrorCode::OutOfRange: return "out_of_range";
    case ErrorCode::UnsupportedDomain: return "unsupported_domain";
    case ErrorCode::NotHostAddressable: return "not_host_addressable";
    case ErrorCode::Busy: return "busy";
    case ErrorCode::Corrupt: return "corrupt";
    case ErrorCode::Protocol: return "protocol";
    case ErrorCode::Internal: return "internal";
  }
  return "unknown";
}

std::string Error::to_string() const {
  std::string out(memhal::to_string(code_));
  out += ": ";
  out += message_;
  return out;
}

}  // namespace memhal
