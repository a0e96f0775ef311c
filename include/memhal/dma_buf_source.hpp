/// @file
/// The sources of DMA-BUF memory this process found: the DMA heaps under `/dev/dma_heap` and
/// `/dev/udmabuf`.
///
/// The DmaBuf backend opens every heap once, keeps the fds open for the life of the process,
/// and allocates from the first usable one in the preference order `linux,cma`, `reserved`,
/// `system`, then any other by name; `MEMHAL_DMA_HEAP=<name>` (read at each allocation) names
/// the only heap to use (`udmabuf` selects udmabuf). When no heap can be opened, buffers come
/// from `/dev/udmabuf`, which turns a sealed memfd into a real DMA-BUF. Thread-safe.
#pragma once

#include <memhal/export.hpp>
#include <string>
#include <vector>

namespace memhal {

/// One place DMA-BUFs can come from, and whether this process can use it.
struct DmaBufSource {
  std::string name;     ///< heap name ("system", "linux,cma"), "udmabuf", or "dma_heap" for a missing directory
  std::string path;     ///< device node ("/dev/dma_heap/system", "/dev/udmabuf") or directory
  bool usable = false;  ///< the node is open for allocation
  std::string state;    ///< "open", or exactly why not (errno text, with a hint for EACCES)
};

/// Every DMA heap found, in preference order, then udmabuf. When `/dev/dma_heap` is missing or
/// unreadable it appears as one entry named `dma_heap` with the reason. Opens the nodes on the
/// first call (of this or any allocation) and keeps them open.
MEMHAL_EXPORT std::vector<DmaBufSource> dma_buf_sources();

}  // namespace memhal
