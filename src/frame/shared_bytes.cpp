#include <memhal/shared_bytes.hpp>
#include <memhal/system_slice.hpp>

#include <cstring>

#include "core/strings.hpp"
#include "storage/heap.hpp"

namespace memhal {
namespace {

// A new owned block from the Mem backend's allocator; `zero` is false where the caller
// overwrites every byte at once.
Result<detail::Counted<detail::ByteBlock>> new_block(std::size_t size, bool zero) {
  MEMHAL_ASSIGN_OR_RETURN(detail::HeapBytes bytes, detail::allocate_heap_bytes(size, zero));
  auto block = detail::Counted<detail::ByteBlock>::make();
  block->data = bytes.get();
  block->size = size;
  block->writable = true;
  block->owner = std::shared_ptr<const void>(std::move(bytes));
  return block;
}

}  // namespace

Result<SharedBytes> SharedBytes::allocate(std::size_t size) {
  MEMHAL_ASSIGN_OR_RETURN(auto block, new_block(size, true));
  const std::byte* data = block->data;
  return SharedBytes(std::move(block), data, size);
}

Result<SharedBytes> SharedBytes::allocate_for_overwrite(std::size_t size) {
  MEMHAL_ASSIGN_OR_RETURN(auto block, new_block(size, false));
  const std::byte* data = block->data;
  return SharedBytes(std::move(block), data, size);
}

Result<SharedBytes> SharedBytes::copy_of(std::span<const std::byte> bytes) {
  MEMHAL_ASSIGN_OR_RETURN(auto block, new_block(bytes.size(), false));
  if (!bytes.empty()) std::memcpy(block->data, bytes.data(), bytes.size());
  const std::byte* data = block->data;
  return SharedBytes(std::move(block), data, bytes.size());
}

SharedBytes SharedBytes::adopt(std::vector<std::byte> bytes) {
  auto vector = std::make_shared<std::vector<std::byte>>(std::move(bytes));
  auto block = detail::Counted<detail::ByteBlock>::make();
  block->data = vector->data();
  block->size = vector->size();
  block->writable = true;
  block->owner = std::move(vector);
  const std::byte* data = block->data;
  const std::size_t size = block->size;
  return SharedBytes(std::move(block), data, size);
}

SharedBytes SharedBytes::lend(std::span<const std::byte> bytes, std::function<void()> release) {
  // The deleter runs once, when the block (the last reference) dies.
  auto owner = std::shared_ptr<const void>(bytes.data(), [release = std::move(release)](const void*) {
    if (release) release();
  });
  return keep_alive(bytes, std::move(owner));
}

SharedBytes SharedBytes::keep_alive(std::span<const std::byte> bytes, std::shared_ptr<const void> owner) {
  auto block = detail::Counted<detail::ByteBlock>::make();
  block->data = const_cast<std::byte*>(bytes.data());
  block->size = bytes.size();
  block->writable = false;
  block->owner = std::move(owner);
  return SharedBytes(std::move(block), bytes.data(), bytes.size());
}

Result<SharedBytes> SharedBytes::subrange(std::size_t offset, std::size_t size) const {
  if (offset > size_ || size > size_ - offset) {
    return detail::fail(ErrorCode::OutOfRange, "subrange [", offset, ", +", size, ") of ", size_, " shared bytes");
  }
  return SharedBytes(block_, data_ + offset, size);
}

// ---- SystemSlice ----

Result<SystemSlice> SystemSlice::allocate(std::size_t size) {
  MEMHAL_ASSIGN_OR_RETURN(SharedBytes bytes, SharedBytes::allocate(size));
  return SystemSlice(std::move(bytes), Ownership::Owned);
}

Result<SystemSlice> SystemSlice::copy_of(std::span<const std::byte> bytes) {
  MEMHAL_ASSIGN_OR_RETURN(SharedBytes copy, SharedBytes::copy_of(bytes));
  return SystemSlice(std::move(copy), Ownership::Owned);
}

SystemSlice SystemSlice::adopt(std::vector<std::byte> bytes) {
  return SystemSlice(SharedBytes::adopt(std::move(bytes)), Ownership::Owned);
}

SystemSlice SystemSlice::lend(std::span<const std::byte> bytes, std::function<void()> release) {
  return SystemSlice(SharedBytes::lend(bytes, std::move(release)), Ownership::Lent);
}

Result<SystemSlice> SystemSlice::share() const {
  if (ownership_ != Ownership::Owned) return *this;
  return copy_of(bytes_.span());
}

Result<std::span<std::byte>> SystemSlice::mutable_bytes() {
  if (std::byte* data = bytes_.mutable_data()) return std::span<std::byte>(data, bytes_.size());
  MEMHAL_ASSIGN_OR_RETURN(SharedBytes copy, SharedBytes::copy_of(bytes_.span()));
  bytes_ = std::move(copy);
  ownership_ = Ownership::Owned;
  source_.reset();
  return std::span<std::byte>(bytes_.mutable_data(), bytes_.size());
}

std::string_view to_string(SystemSlice::Ownership ownership) noexcept {
  switch (ownership) {
    case SystemSlice::Ownership::Owned: return "owned";
    case SystemSlice::Ownership::Lent: return "lent";
    case SystemSlice::Ownership::Shared: return "shared";
  }
  return "unknown";
}

}  // namespace memhal
