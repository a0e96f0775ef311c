// The Shm backend: sealed memfds, mapped once.
#pragma once

#include <memhal/memory.hpp>
#include <memhal/unique_fd.hpp>
#include <memory>
#include <string_view>

#include "storage/storage.hpp"

namespace memhal::detail {

/// A memfd of `bytes` (rounded up to whole pages), `MFD_CLOEXEC | MFD_ALLOW_SEALING`, sized
/// and then sealed with `seals` (F_SEAL_* bits). `what` names the buffer in errors.
Result<UniqueFd> create_sealed_memfd(const char* name, std::size_t bytes, unsigned seals);

/// A new zeroed Shm storage of at least `bytes`, sealed against shrinking and growing.
Result<std::shared_ptr<Storage>> allocate_shm(std::size_t bytes);

/// Shm storage over an fd the caller has already validated as memfd/shmem: takes ownership of
/// `fd`, maps `size` bytes now (read-only unless `writable`). `source` names it in errors.
Result<std::shared_ptr<Storage>> import_shm(UniqueFd fd, std::size_t size, bool writable, std::string_view source);

Availability probe_shm();

}  // namespace memhal::detail
