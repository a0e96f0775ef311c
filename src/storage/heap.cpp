#include "storage/heap.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/checked_vector.hpp"
#include "core/strings.hpp"

namespace memhal::detail {
namespace {

// Large buffers come straight from mmap: page aligned and zero-filled lazily by the kernel,
// so a 4K frame is not written twice (once to zero it, once with the image).
constexpr std::size_t kMmapThreshold = 256 * 1024;

class HeapStorage final : public Storage {
 public:
  HeapStorage(HeapBytes data, std::size_t size) : data_(std::move(data)), size_(size) {}
  MemoryKind kind() const noexcept override { return MemoryKind::Mem; }
  std::size_t size() const noexcept override { return size_; }
  Result<std::byte*> begin_access(CpuAccess) override { return data_.get(); }
  void end_access(CpuAccess) noexcept override {}

 private:
  HeapBytes data_;
  std::size_t size_;
};

}  // namespace

void HeapFree::operator()(std::byte* data) const noexcept {
  if (mapped_) {
    ::munmap(data, size_);
  } else {
    std::free(data);
  }
}

Result<HeapBytes> allocate_heap_bytes(std::size_t bytes, bool zero) {
  // Refused before asking: under ASan a failed allocation of an absurd size aborts.
  if (const std::size_t memory = physical_memory_bytes(); bytes > memory) {
    return fail(ErrorCode::OutOfMemory, "mem allocation of ", bytes, " bytes: more than the ", memory,
                " bytes of memory this machine has");
  }
  // Rounded up so that the allocation is never empty and SIMD code may read whole vectors.
  const std::size_t size = (std::max<std::size_t>(bytes, 1) + kHeapAlignment - 1) / kHeapAlignment * kHeapAlignment;
  if (size >= kMmapThreshold) {
    void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED)
      return fail_errno(ErrorCode::OutOfMemory, errno, "mem allocation of ", bytes, " bytes failed");
    return HeapBytes(static_cast<std::byte*>(data), HeapFree(size, true));
  }
  void* data = std::aligned_alloc(kHeapAlignment, size);
  if (data == nullptr) return fail(ErrorCode::OutOfMemory, "mem allocation of ", bytes, " bytes failed");
  if (zero) std::memset(data, 0, size);
  return HeapBytes(static_cast<std::byte*>(data), HeapFree(size, false));
}

Result<std::shared_ptr<Storage>> allocate_heap(std::size_t bytes) {
  MEMHAL_ASSIGN_OR_RETURN(HeapBytes data, allocate_heap_bytes(bytes, true));
  const std::size_t size = data.get_deleter().size();
  return std::make_shared<HeapStorage>(std::move(data), size);
}

}  // namespace memhal::detail
