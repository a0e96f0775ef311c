// The DmaBuf backend: buffers from DMA heaps or udmabuf, mapped once, CPU access bracketed
// with DMA_BUF_IOCTL_SYNC.
#pragma once

#include <memhal/memory.hpp>
#include <memhal/unique_fd.hpp>
#include <memory>
#include <string>

#include "storage/storage.hpp"

namespace memhal::detail {

/// A new zeroed DMA-BUF of at least `bytes`, from the preferred DMA heap (or `MEMHAL_DMA_HEAP`),
/// else from udmabuf when no heap can be opened.
Result<std::shared_ptr<Storage>> allocate_dmabuf(std::size_t bytes);

/// DmaBuf storage over a validated DMA-BUF fd: takes ownership of `fd`, maps `size` bytes on
/// first CPU access (read-only unless `writable`). `source` names it in errors.
Result<std::shared_ptr<Storage>> import_dmabuf(UniqueFd fd, std::size_t size, bool writable, std::string source);

Availability probe_dmabuf();

}  // namespace memhal::detail
