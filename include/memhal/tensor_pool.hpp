/// @file
/// `TensorPool`: a ring of pre-faulted tensors of one layout and memory kind, recycled.
///
/// Fresh Shm or DmaBuf memory costs milliseconds of page faults per 1080p frame on its first
/// write; camera and codec buffer rings avoid that by allocating once and recycling, and so
/// does a pool. `create` allocates every tensor up front and writes each page once; `acquire`
/// hands one out; it comes back by itself when the last reference to it — the tensor, its
/// copies, its views, any `TensorMap`, and any frame made from it (`MemoryDomain::from_tensor`,
/// its `Tee` branches and shares, and the tensors back from them) — is dropped, and never
/// before. A pool destroyed while tensors are out keeps their memory alive until they are
/// dropped, then frees it (nothing is freed twice).
///
/// Each slot is one buffer identity: every hand-out of a slot reports the same
/// `Tensor::buffer_id` and `same_storage` holds between them, so a per-buffer cache (the GL
/// backend's DMA-BUF imports) pays once per slot, not once per frame.
///
/// A recycled tensor holds whatever its last user wrote (only the first hand-out is zeroed).
/// Thread-safe: `acquire`, `try_acquire` and the returns may run on any threads at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/layout.hpp>
#include <memhal/tensor.hpp>
#include <memory>
#include <optional>

namespace memhal {

namespace detail {
struct PoolState;
}

class MEMHAL_EXPORT TensorPool {
 public:
  /// A pool of `count` tensors over `layout` (its strides, planes and buffers; every buffer
  /// sized to the layout's extent), allocated now from `memory` or by auto-selection (DmaBuf
  /// → Mem; for an image layout likewise), and pre-faulted. `InvalidArgument` for a zero
  /// `count`; `OutOfMemory`, before anything is allocated, when `count` tensors of the layout
  /// need more than the machine's physical memory; otherwise the errors of `Tensor::create`
  /// (a pinned kind never falls back).
  static Result<TensorPool> create(const Layout& layout, std::size_t count,
                                   std::optional<MemoryKind> memory = std::nullopt);

  TensorPool(TensorPool&&) noexcept;
  TensorPool& operator=(TensorPool&&) noexcept;
  TensorPool(const TensorPool&) = delete;
  TensorPool& operator=(const TensorPool&) = delete;
  /// Tensors still out stay valid; their memory is freed when they are dropped.
  ~TensorPool();

  /// A free tensor, waiting up to `timeout` for one to come back (0 or negative: not at all;
  /// a timeout past the clock's range, such as `nanoseconds::max()`, waits forever). `Busy`
  /// when none came back in time; `InvalidArgument` on a moved-from pool.
  Result<Tensor> acquire(std::chrono::nanoseconds timeout);
  /// A free tensor now, or `Busy` when all are out.
  Result<Tensor> try_acquire();

  /// How many tensors the pool owns.
  std::size_t capacity() const noexcept;
  /// How many are free now (a snapshot: other threads may change it at once).
  std::size_t available() const noexcept;
  /// The layout of every tensor (not to be called on a moved-from pool).
  const Layout& layout() const noexcept;
  /// The kind every tensor of the pool got.
  MemoryKind memory() const noexcept;

 private:
  explicit TensorPool(std::shared_ptr<detail::PoolState> state) noexcept;
  std::shared_ptr<detail::PoolState> state_;
};

}  // namespace memhal
