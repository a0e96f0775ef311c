// Imports of buffers made elsewhere (V4L2, a GPU, another process): what an fd really is, read
// from the kernel (/proc/self/fdinfo, fstat, seals), never guessed from device numbers.
#pragma once

#include <memhal/vocabulary.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "storage/storage.hpp"

namespace memhal::detail {

/// What the kernel says an fd is.
struct FdIdentity {
  MemoryKind kind = MemoryKind::Shm;  ///< DmaBuf (fdinfo has exp_name) or Shm (a memfd / shmem file)
  std::size_t size = 0;               ///< bytes in the buffer
  bool writable = false;              ///< opened for writing and not sealed against writes
  std::string exporter;               ///< the DMA-BUF exporter's name, or "memfd"/"shmem"
};

/// Identifies `fd` (borrowed). `InvalidArgument` naming what it is instead for a closed fd, a
/// pipe, a socket, a device or a regular file; `Io` when /proc cannot be read.
Result<FdIdentity> identify_fd(int fd);

/// Makes sure the memfd/shmem file behind `fd` (borrowed) cannot shrink under a mapping: it is
/// sealed with `F_SEAL_SHRINK` already, or gets that seal now (which needs a writable fd and a
/// file made with `MFD_ALLOW_SEALING`). `InvalidArgument` naming `F_SEAL_SHRINK` and the fix
/// otherwise. `what` describes the operation in errors.
Result<void> require_shrink_seal(int fd, std::string_view what);

/// Storage over a duplicate of `fd` (the caller keeps and closes its own): identified, checked
/// against `kind` when given and against `needed` bytes; a memfd must pass
/// `require_shrink_seal`. Only the first `needed` bytes (rounded up to whole pages, at most the
/// buffer) are mapped, and that is the storage's `size()`. `what` describes the import in
/// errors ("import of fd 7 as nv12 1920x1080"). `OutOfRange` for a buffer shorter than `needed`.
Result<std::shared_ptr<Storage>> import_fd(int fd, std::optional<MemoryKind> kind, std::size_t needed,
                                           std::string_view what);

}  // namespace memhal::detail
