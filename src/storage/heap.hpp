// Process memory: the one allocator behind the Mem backend and SharedBytes.
#pragma once

#include <cstddef>
#include <memory>

#include "storage/storage.hpp"

namespace memhal::detail {

inline constexpr std::size_t kHeapAlignment = 64;

/// Frees what `allocate_heap_bytes` returned (it knows how: free or munmap).
class HeapFree {
 public:
  HeapFree() = default;
  HeapFree(std::size_t size, bool mapped) noexcept : size_(size), mapped_(mapped) {}
  void operator()(std::byte* data) const noexcept;
  std::size_t size() const noexcept { return size_; }  ///< the bytes allocated (rounded up)

 private:
  std::size_t size_ = 0;
  bool mapped_ = false;
};
using HeapBytes = std::unique_ptr<std::byte, HeapFree>;

/// At least `bytes` bytes (rounded up to whole 64-byte lines, never empty), 64-byte aligned and
/// zeroed unless `zero` is false (the contents are then unspecified). `OutOfMemory`, naming
/// `bytes`, for a size the machine cannot hold or a failed allocation.
Result<HeapBytes> allocate_heap_bytes(std::size_t bytes, bool zero);

/// A Mem `Storage` of `bytes` zeroed bytes from `allocate_heap_bytes`.
Result<std::shared_ptr<Storage>> allocate_heap(std::size_t bytes);

}  // namespace memhal::detail
