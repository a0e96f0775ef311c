// The Mem backend: zeroed, 64-byte aligned process memory.
#pragma once

#include <memory>

#include "storage/storage.hpp"

namespace memhal::detail {

inline constexpr std::size_t kHeapAlignment = 64;

Result<std::shared_ptr<Storage>> allocate_heap(std::size_t bytes);

}  // namespace memhal::detail
