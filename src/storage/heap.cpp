#include "storage/heap.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "core/strings.hpp"

namespace memhal::detail {
namespace {

// Large buffers come straight from mmap: page aligned and zero-filled lazily by the kernel,
// so a 4K frame is not written twice (once to zero it, once with the image).
constexpr std::size_t kMmapThreshold = 256 * 1024;

class HeapStorage final : public Storage {
 public:
  HeapStorage(std::byte* data, std::size_t size, bool mmapped) : data_(data), size_(size), mmapped_(mmapped) {}
  ~HeapStorage() override {
    if (mmapped_) {
      ::munmap(data_, size_);
    } else {
      std::free(data_);
    }
  }
  MemoryKind kind() const noexcept override { return MemoryKind::Mem; }
  std::size_t size() const noexcept override { return size_; }
  Result<std::byte*> begin_access(CpuAccess) override { return data_; }
  void end_access(CpuAccess) noexcept override {}

 private:
  std::byte* data_;
  std::size_t size_;
  bool mmapped_;
};

}  // namespace

Result<std::shared_ptr<Storage>> allocate_heap(std::size_t bytes) {
  // Round up so that the allocation is never empty and SIMD code may read whole vectors.
  const std::size_t size = (std::max<std::size_t>(bytes, 1) + kHeapAlignment - 1) / kHeapAlignment * kHeapAlignment;
  if (size < bytes) return fail(ErrorCode::OutOfMemory, "mem allocation of ", bytes, " bytes overflows");
  if (size >= kMmapThreshold) {
    void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED)
      return fail_errno(ErrorCode::OutOfMemory, errno, "mem allocation of ", bytes, " bytes failed");
    return std::make_shared<HeapStorage>(static_cast<std::byte*>(data), size, true);
  }
  void* data = std::aligned_alloc(kHeapAlignment, size);
  if (data == nullptr) return fail(ErrorCode::OutOfMemory, "mem allocation of ", bytes, " bytes failed");
  std::memset(data, 0, size);
  return std::make_shared<HeapStorage>(static_cast<std::byte*>(data), size, false);
}

}  // namespace memhal::detail
