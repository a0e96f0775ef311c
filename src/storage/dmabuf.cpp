#include "storage/dmabuf.hpp"

#include <linux/dma-buf.h>
#include <sys/ioctl.h>
#include <sys/sysinfo.h>

#include <mutex>

#include "core/strings.hpp"
#include "storage/dma_heap.hpp"
#include "storage/dmabuf_sync.hpp"
#include "storage/mapping.hpp"

namespace memhal::detail {

DmaBufSyncCounters& dmabuf_sync_counters() noexcept {
  static DmaBufSyncCounters counters;
  return counters;
}

namespace {

uint64_t sync_direction(CpuAccess access) {
  switch (access) {
    case CpuAccess::Read: return DMA_BUF_SYNC_READ;
    case CpuAccess::Write: return DMA_BUF_SYNC_WRITE;
    default: return DMA_BUF_SYNC_RW;
  }
}

// The CPU sees a DMA-BUF through persistent mappings (one per direction, see base_for). Read
// maps share one READ bracket (opened by the first, closed by the last); a write map is
// exclusive, so the exporter sees exactly one bracket per writer and never a write inside a
// read bracket.
class DmaBufStorage final : public Storage {
 public:
  DmaBufStorage(UniqueFd fd, std::size_t size, bool writable, std::string source)
      : fd_(std::move(fd)), size_(size), writable_(writable), source_(std::move(source)) {}
  MemoryKind kind() const noexcept override { return MemoryKind::DmaBuf; }
  std::size_t size() const noexcept override { return size_; }
  const UniqueFd* owned_fd() const noexcept override { return &fd_; }

  Result<std::byte*> begin_access(CpuAccess access) override {
    std::lock_guard lock(mutex_);
    if (can_write(access) && !writable_) {
      return fail(ErrorCode::PermissionDenied, to_string(access), " map of dmabuf fd ", fd_.get(), " (", source_,
                  "): the buffer is read-only (fd opened O_RDONLY)");
    }
    MEMHAL_ASSIGN_OR_RETURN(std::byte * base, base_for(access));
    if (writer_ || (access != CpuAccess::Read && readers_ > 0)) {
      return fail(ErrorCode::Busy, to_string(access), " map of dmabuf fd ", fd_.get(), ": ",
                  writer_ ? "a write map is open" : cat(readers_, " read map(s) are open"),
                  "; a write map is exclusive");
    }
    if (access == CpuAccess::Read && readers_ > 0) {
      ++readers_;
      return base;
    }
    MEMHAL_TRY(sync(DMA_BUF_SYNC_START | sync_direction(access)));
    if (access == CpuAccess::Read) {
      readers_ = 1;
    } else {
      writer_ = true;
    }
    return base;
  }

  void end_access(CpuAccess access) noexcept override {
    std::lock_guard lock(mutex_);
    if (access == CpuAccess::Read) {
      if (readers_ == 0 || --readers_ > 0) return;
    } else {
      if (!writer_) return;
      writer_ = false;
    }
    // Nothing can be done about a failed END here: the mapping stays valid and the next START
    // resynchronises.
    (void)sync(DMA_BUF_SYNC_END | sync_direction(access));
  }

 private:
  Result<void> sync(uint64_t flags) {
    dma_buf_sync request{flags};
    int rc;
    do {
      rc = ::ioctl(fd_.get(), DMA_BUF_IOCTL_SYNC, &request);
    } while (rc != 0 && (errno == EINTR || errno == EAGAIN));
    if (rc != 0) {
      return fail_errno(code_for_errno(errno), errno, "DMA_BUF_IOCTL_SYNC ",
                        (flags & DMA_BUF_SYNC_END) ? "END" : "START", " on dmabuf fd ", fd_.get(), " (", source_,
                        ") failed");
    }
    auto& counters = dmabuf_sync_counters();
    ((flags & DMA_BUF_SYNC_END) ? counters.ends : counters.starts).fetch_add(1, std::memory_order_relaxed);
    if (flags & DMA_BUF_SYNC_READ) counters.reads.fetch_add(1, std::memory_order_relaxed);
    if (flags & DMA_BUF_SYNC_WRITE) counters.writes.fetch_add(1, std::memory_order_relaxed);
    return {};
  }

  // The mapping `access` goes through, made on first use: a read-only one for read maps, so
  // that the MMU refuses writes through them (DESIGN §4), and a read-write one for the others.
  // A read-only buffer has only the read-only one. Called with mutex_ held.
  Result<std::byte*> base_for(CpuAccess access) {
    const bool write = can_write(access);
    Mapping& mapping = write || !writable_ ? mapping_ : read_mapping_;
    if (!mapping.valid()) {
      MEMHAL_ASSIGN_OR_RETURN(mapping, Mapping::create(fd_.get(), size_, write, cat("dmabuf from ", source_)));
    }
    return mapping.base();
  }

  UniqueFd fd_;
  std::size_t size_;
  bool writable_;
  std::string source_;
  std::mutex mutex_;
  Mapping mapping_;       // read-write when writable_, else read-only
  Mapping read_mapping_;  // a writable buffer's read-only view
  int readers_ = 0;
  bool writer_ = false;
};

}  // namespace

Result<std::shared_ptr<Storage>> allocate_dmabuf(std::size_t bytes) {
  const std::size_t size = page_round(bytes);
  if (size == 0) return fail(ErrorCode::OutOfMemory, "dmabuf allocation of ", bytes, " bytes overflows");
  // The system heap takes pages one by one and calls in the OOM killer rather than refuse a
  // size the machine cannot hold; refuse it here instead.
  struct sysinfo info {};
  if (::sysinfo(&info) == 0 && size / info.mem_unit > info.totalram) {
    return fail(ErrorCode::OutOfMemory, "dmabuf allocation of ", bytes, " bytes exceeds this machine's ",
                static_cast<uint64_t>(info.totalram) * info.mem_unit, " bytes of RAM");
  }
  MEMHAL_ASSIGN_OR_RETURN(NewDmaBuf buffer, allocate_dma_buf_fd(size));
  return std::make_shared<DmaBufStorage>(std::move(buffer.fd), size, true, std::move(buffer.source));
}

Result<std::shared_ptr<Storage>> import_dmabuf(UniqueFd fd, std::size_t size, bool writable, std::string source) {
  return std::make_shared<DmaBufStorage>(std::move(fd), size, writable, std::move(source));
}

Availability probe_dmabuf() {
  auto buffer = allocate_dma_buf_fd(page_round(1));
  if (!buffer) return {false, buffer.error().message(), ErrorCode::Unavailable};
  return {true, buffer->source, ErrorCode::Unavailable};
}

}  // namespace memhal::detail
