// Where DMA-BUFs come from: the DMA heaps under /dev/dma_heap (opened once, kept open) and
// /dev/udmabuf, in the preference order of DESIGN.md §3.
#pragma once

#include <memhal/dma_buf_source.hpp>
#include <memhal/error.hpp>
#include <memhal/unique_fd.hpp>
#include <string>

namespace memhal::detail {

/// A new DMA-BUF fd (O_RDWR, O_CLOEXEC) of `bytes` (already page-rounded) and a description of
/// its source ("/dev/dma_heap/system"). Honours `MEMHAL_DMA_HEAP` (read at each call).
struct NewDmaBuf {
  UniqueFd fd;
  std::string source;
};
Result<NewDmaBuf> allocate_dma_buf_fd(std::size_t bytes);

}  // namespace memhal::detail
