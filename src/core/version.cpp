// The version the library was built as: what memhal::version() and memhal_version() report.
#include <memhal/version.hpp>

namespace memhal {

const char* version() noexcept {
  return MEMHAL_VERSION_STRING;
}

}  // namespace memhal
