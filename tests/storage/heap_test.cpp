#include <cstdint>
#include <memhal/shared_bytes.hpp>
#include <memhal/tensor.hpp>

#include "storage/heap.hpp"
#include "test_support.hpp"

namespace memhal::detail {
namespace {

bool all_zero(const std::byte* data, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] != std::byte{0}) return false;
  }
  return true;
}

TEST(Heap, BytesAreAlignedZeroedAndRoundedUpToWholeLines) {
  // Below and above the size where the allocator switches from aligned_alloc to mmap.
  for (std::size_t size : {std::size_t{0}, std::size_t{100}, std::size_t{1} << 20}) {
    ASSERT_OK_AND_ASSIGN(HeapBytes bytes, allocate_heap_bytes(size, true));
    const std::size_t rounded = bytes.get_deleter().size();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(bytes.get()) % kHeapAlignment, 0u) << size;
    EXPECT_EQ(rounded % kHeapAlignment, 0u) << size;
    EXPECT_GE(rounded, std::max<std::size_t>(size, 1));
    EXPECT_LT(rounded, std::max<std::size_t>(size, 1) + kHeapAlignment);
    EXPECT_TRUE(all_zero(bytes.get(), rounded)) << size;
  }
}

TEST(Heap, ASizeBeyondTheMachineIsOutOfMemoryBeforeAnythingIsAllocated) {
  // SIZE_MAX would also overflow the rounding; both are refused with the size in the message.
  for (std::size_t size : {SIZE_MAX / 2, SIZE_MAX}) {
    auto bytes = allocate_heap_bytes(size, false);
    EXPECT_ERROR(ErrorCode::OutOfMemory, bytes);
    EXPECT_NE(bytes.error().message().find("mem allocation of " + std::to_string(size) + " bytes: more than"),
              std::string::npos)
        << bytes.error().message();
  }
}

TEST(Heap, MemTensorsAndSharedBytesShareTheAllocator) {
  // One allocator, one failure: the Mem backend and the system bytes of frames refuse alike.
  auto tensor = Tensor::create({int64_t{1} << 62}, DType::U8, MemoryKind::Mem);
  auto shared = SharedBytes::allocate(SIZE_MAX / 2);
  auto overwrite = SharedBytes::allocate_for_overwrite(SIZE_MAX);
  EXPECT_ERROR(ErrorCode::OutOfMemory, tensor);
  EXPECT_ERROR(ErrorCode::OutOfMemory, shared);
  EXPECT_ERROR(ErrorCode::OutOfMemory, overwrite);
  for (const Error* error : {&tensor.error(), &shared.error(), &overwrite.error()}) {
    EXPECT_NE(error->message().find("mem allocation of "), std::string::npos) << error->message();
  }
  ASSERT_OK_AND_ASSIGN(SharedBytes bytes, SharedBytes::allocate(1000));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(bytes.data()) % kHeapAlignment, 0u);
  EXPECT_TRUE(all_zero(bytes.data(), bytes.size()));
}

}  // namespace
}  // namespace memhal::detail
