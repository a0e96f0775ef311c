// The allocation front door: probes, auto-selection chains and pinned requests (DESIGN.md §3).
#pragma once

#include <memhal/memory.hpp>
#include <memory>
#include <optional>

#include "storage/storage.hpp"

namespace memhal::detail {

/// Which auto-selection chain applies: tensors try DmaBuf → Mem, images DmaBuf → Mem too but
/// never Shm (kept distinct so the chains can diverge without touching callers).
enum class AllocationPurpose { Tensor, Image };

/// Allocates `bytes` (zeroed) from `memory`, or by auto-selection when it is empty. A pinned
/// request never falls back. The returned storage carries the notes of skipped backends.
Result<std::shared_ptr<Storage>> allocate(std::size_t bytes, std::optional<MemoryKind> memory,
                                          AllocationPurpose purpose);

}  // namespace memhal::detail
