// Growing a std::vector to a size a caller chose, as a Result. The standard library reports a
// size past max_size() with std::length_error and a failed allocation with std::bad_alloc, and
// the library does not throw; under ASan a failed operator new aborts instead of throwing, so
// sizes no machine can hold are refused before anything is asked of the allocator.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <vector>

#include "core/strings.hpp"

namespace memhal::detail {

/// The machine's physical memory in bytes (SIZE_MAX when the system does not say).
inline std::size_t physical_memory_bytes() noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return SIZE_MAX;
  const auto p = static_cast<std::size_t>(pages), s = static_cast<std::size_t>(page);
  return p > SIZE_MAX / s ? SIZE_MAX : p * s;
}

/// `OutOfMemory` unless `count` items of `each` bytes fit in the machine's memory (without
/// overflow); the message names `what`.
template <class... What>
Result<void> check_fits_in_memory(std::size_t count, std::size_t each, const What&... what) {
  const std::size_t memory = physical_memory_bytes();
  if (each != 0 && count > memory / each) {
    return fail(ErrorCode::OutOfMemory, what..., ": ", count, " x ", each, " bytes is more than the ", memory,
                " bytes of memory this machine has");
  }
  return {};
}

/// `v.reserve(n)`, or `OutOfMemory` naming `what`, `n` and the bytes it would take.
template <class T, class... What>
Result<void> checked_reserve(std::vector<T>& v, std::size_t n, const What&... what) {
  if (n > v.max_size()) {
    return fail(ErrorCode::OutOfMemory, what..., ": ", n, " entries of ", sizeof(T),
                " bytes exceed the address space (at most ", v.max_size(), ")");
  }
  MEMHAL_TRY(check_fits_in_memory(n, sizeof(T), what...));
  try {
    v.reserve(n);
  } catch (const std::bad_alloc&) {
    return fail(ErrorCode::OutOfMemory, what..., ": cannot allocate ", n, " entries of ", sizeof(T), " bytes");
  } catch (const std::length_error&) {
    return fail(ErrorCode::OutOfMemory, what..., ": ", n, " entries exceed the address space");
  }
  return {};
}

/// `v.resize(n)`, with the errors of `checked_reserve`.
template <class T, class... What>
Result<void> checked_resize(std::vector<T>& v, std::size_t n, const What&... what) {
  MEMHAL_TRY(checked_reserve(v, n, what...));
  v.resize(n);
  return {};
}

}  // namespace memhal::detail
