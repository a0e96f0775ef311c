#include <condition_variable>
#include <memhal/tensor_pool.hpp>
#include <mutex>
#include <vector>

#include "core/checked_vector.hpp"
#include "core/deadline.hpp"
#include "core/strings.hpp"
#include "storage/allocator.hpp"
#include "tensor/tensor_access.hpp"

namespace memhal {
namespace detail {

using Slot = TensorAccess::Buffers;

struct PoolState {
  Layout layout;
  MemoryKind memory = MemoryKind::Mem;
  std::size_t capacity = 0;
  std::mutex mutex;
  std::condition_variable returned;
  std::vector<Slot> free;

  explicit PoolState(Layout l) : layout(std::move(l)) {}
  void give_back(Slot slot) {
    {
      std::lock_guard lock(mutex);
      free.push_back(std::move(slot));
    }
    returned.notify_one();
  }
};

namespace {

// One hand-out of a slot. The handed-out tensor holds each slot storage through an aliasing
// pointer whose owner is the lease: the pointer (and so the buffer's identity) is the slot's
// own storage on every hand-out, and the slot goes back whole when the last tensor, view, map
// or frame over any of its buffers is dropped — to the pool if it still exists, else freed.
struct Lease {
  Slot slot;
  std::weak_ptr<PoolState> pool;
  ~Lease() {
    if (auto state = pool.lock()) state->give_back(std::move(slot));
  }
};

// Writes one byte per page so the first frame does not pay the page faults.
Result<void> prefault(Storage& storage) {
  MEMHAL_ASSIGN_OR_RETURN(std::byte * base, storage.begin_access(CpuAccess::Write));
  for (std::size_t offset = 0; offset < storage.size(); offset += 4096) base[offset] = std::byte{0};
  storage.end_access(CpuAccess::Write);
  return {};
}

Result<Slot> allocate_slot(const Layout& layout, std::optional<MemoryKind> memory) {
  const auto purpose = layout.pixel_format() ? AllocationPurpose::Image : AllocationPurpose::Tensor;
  Slot slot{};
  for (uint32_t i = 0; i < layout.buffer_count(); ++i) {
    const auto kind = i == 0 ? memory : std::optional<MemoryKind>(slot[0]->kind());
    MEMHAL_ASSIGN_OR_RETURN(slot[i], allocate(static_cast<std::size_t>(layout.byte_extent(i).end), kind, purpose));
    MEMHAL_TRY(prefault(*slot[i]));
  }
  return slot;
}

}  // namespace
}  // namespace detail

TensorPool::TensorPool(std::shared_ptr<detail::PoolState> state) noexcept : state_(std::move(state)) {}
TensorPool::TensorPool(TensorPool&&) noexcept = default;
TensorPool& TensorPool::operator=(TensorPool&&) noexcept = default;
TensorPool::~TensorPool() = default;

Result<TensorPool> TensorPool::create(const Layout& layout, std::size_t count, std::optional<MemoryKind> memory) {
  if (count == 0) return detail::fail(ErrorCode::InvalidArgument, "a tensor pool needs at least one tensor");
  // Each tensor costs its buffers and its slot; the pool pre-faults every page, so a pool
  // larger than the machine's memory can never be made, and is refused before any allocation.
  std::size_t per_tensor = sizeof(detail::Slot);
  for (uint32_t i = 0; i < layout.buffer_count(); ++i) {
    const ByteExtent extent = layout.byte_extent(i);
    if (extent.begin < 0) return detail::fail(ErrorCode::InvalidArgument, "pool layout reaches before buffer ", i);
    const auto bytes = static_cast<std::size_t>(extent.end);
    per_tensor = bytes > SIZE_MAX - per_tensor ? SIZE_MAX : per_tensor + bytes;
  }
  MEMHAL_TRY(detail::check_fits_in_memory(count, per_tensor, "tensor pool of ", count, " tensors"));
  auto state = std::make_shared<detail::PoolState>(layout);
  MEMHAL_TRY(detail::checked_reserve(state->free, count, "tensor pool of ", count, " tensors"));
  for (std::size_t i = 0; i < count; ++i) {
    // Later tensors are pinned to what the first got, so the whole pool is of one kind.
    const auto kind = i == 0 ? memory : std::optional<MemoryKind>(state->memory);
    MEMHAL_ASSIGN_OR_RETURN(detail::Slot slot, detail::allocate_slot(layout, kind));
    state->memory = slot[0]->kind();
    state->free.push_back(std::move(slot));
  }
  state->capacity = count;
  return TensorPool(std::move(state));
}

Result<Tensor> TensorPool::acquire(std::chrono::nanoseconds timeout) {
  if (!state_) return detail::fail(ErrorCode::InvalidArgument, "acquire from a moved-from tensor pool");
  // wait_for adds the timeout to now and overflows for long ones (nanoseconds::max() would
  // time out at once): wait until a saturated deadline, or without one.
  const auto deadline = detail::deadline_after(timeout);
  const auto returned = [&] { return !state_->free.empty(); };
  std::unique_lock lock(state_->mutex);
  if (deadline == detail::Clock::time_point::max()) {
    state_->returned.wait(lock, returned);
  } else if (!state_->returned.wait_until(lock, deadline, returned)) {
    return detail::fail(
        ErrorCode::Busy, "all ", state_->capacity, " tensors of the pool are out",
        timeout.count() > 0 ? detail::cat(" after waiting ", timeout.count() / 1000, " us") : std::string());
  }
  auto lease = std::make_shared<detail::Lease>();
  lease->slot = std::move(state_->free.back());
  state_->free.pop_back();
  lock.unlock();
  lease->pool = state_;
  detail::TensorAccess::Buffers buffers{};
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (lease->slot[i]) buffers[i] = std::shared_ptr<detail::Storage>(lease, lease->slot[i].get());
  }
  return detail::TensorAccess::make(state_->layout, std::move(buffers));
}

Result<Tensor> TensorPool::try_acquire() {
  return acquire(std::chrono::nanoseconds(0));
}

std::size_t TensorPool::capacity() const noexcept {
  return state_ ? state_->capacity : 0;
}

std::size_t TensorPool::available() const noexcept {
  if (!state_) return 0;
  std::lock_guard lock(state_->mutex);
  return state_->free.size();
}

const Layout& TensorPool::layout() const noexcept {
  return state_->layout;
}

MemoryKind TensorPool::memory() const noexcept {
  return state_ ? state_->memory : MemoryKind::Mem;
}

}  // namespace memhal
