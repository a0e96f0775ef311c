// Internal access to a SharedBytes block, for the Tensor <-> MemoryDomain conversions.
#pragma once

#include <memhal/shared_bytes.hpp>

namespace memhal::detail {

struct SharedBytesAccess {
  static const ByteBlock* block(const SharedBytes& bytes) noexcept { return bytes.block_.get(); }

  /// `keep_alive` bytes that are the whole of `storage`.
  static SharedBytes of_storage(std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
                                std::shared_ptr<Storage> storage) {
    SharedBytes shared = SharedBytes::keep_alive(bytes, std::move(owner));
    shared.block_->storage = std::move(storage);
    return shared;
  }
};

}  // namespace memhal::detail
