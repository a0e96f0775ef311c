// A test hook: counts the DMA_BUF_IOCTL_SYNC calls the DmaBuf backend makes, so tests can
// check that CPU access really is bracketed. Private; not part of the installed API.
#pragma once

#include <atomic>
#include <cstdint>

namespace memhal::detail {

struct DmaBufSyncCounters {
  std::atomic<uint64_t> starts{0};  ///< DMA_BUF_SYNC_START calls that succeeded
  std::atomic<uint64_t> ends{0};    ///< DMA_BUF_SYNC_END calls that succeeded
  std::atomic<uint64_t> reads{0};   ///< calls whose direction included DMA_BUF_SYNC_READ
  std::atomic<uint64_t> writes{0};  ///< calls whose direction included DMA_BUF_SYNC_WRITE
};

/// The process-wide counters (never reset by the library).
DmaBufSyncCounters& dmabuf_sync_counters() noexcept;

}  // namespace memhal::detail
