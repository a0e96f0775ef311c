/// @file
/// `Tensor`: shared storage plus a `Layout`.
///
/// A cheap value type: copying a `Tensor` shares its storage (like `std::shared_ptr`), and the
/// views (`slice`, `flip`, `transpose`, `permute`, `reshape`, `crop`) return new tensors over
/// the same bytes without copying any. `materialize` makes the one dense copy a strided chain
/// pays. Allocation follows DESIGN.md §3: with no `memory` given, auto-selection tries DmaBuf,
/// then Mem (`MEMHAL_FORCE_MEM` goes straight to Mem) and keeps the reason for each skipped
/// kind in `allocation_notes()`; a pinned `memory` never falls back. New tensors are zeroed.
///
/// Zero-sized dimensions make an empty tensor, as in numpy (0 elements, `nbytes() == 0`; it
/// can be mapped, viewed and materialised). Thread-safety: a `Tensor` object is a value (one
/// thread at a time); different `Tensor` objects sharing storage may be used from different
/// threads, and writes through them race like writes to any shared memory.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/keep_alive.hpp>
#include <memhal/layout.hpp>
#include <memhal/tensor_map.hpp>
#include <memhal/unique_fd.hpp>
#include <memhal/vocabulary.hpp>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace memhal {

namespace detail {
class Storage;
struct TensorAccess;
}  // namespace detail

/// Whether the planes of a new multi-plane image share one buffer or get one each.
enum class PlaneBuffers : uint8_t {
  Shared,    ///< one buffer, planes at aligned offsets
  PerPlane,  ///< one buffer per plane, each plane at offset 0
};

class MEMHAL_EXPORT Tensor {
 public:
  /// A new dense row-major tensor of `shape` and `dtype`. `InvalidArgument` for a bad shape
  /// (negative or overflowing dimension, rank above `kMaxRank`) or dtype; for a pinned
  /// `memory` that cannot serve, `Unavailable` or `NotImplemented` naming the backend and why;
  /// `OutOfMemory` when the allocation itself fails.
  static Result<Tensor> create(std::span<const int64_t> shape, DType dtype,
                               std::optional<MemoryKind> memory = std::nullopt, std::string name = {});
  static Result<Tensor> create(std::initializer_list<int64_t> shape, DType dtype,
                               std::optional<MemoryKind> memory = std::nullopt, std::string name = {}) {
    return create(std::span<const int64_t>(shape.begin(), shape.size()), dtype, memory, std::move(name));
  }

  /// A new image of `width` x `height` in `format` (see `Layout::image` for shapes and
  /// planes), rows aligned to `row_align` bytes. Auto-selection tries DmaBuf, then Mem — never
  /// Shm. With `PlaneBuffers::PerPlane` each plane of a multi-plane YUV format gets a buffer
  /// of its own (offset 0), as V4L2 multi-planar capture and many codecs want; every buffer
  /// is of the kind the first one got. Errors as `create` and `Layout::image`, plus
  /// `InvalidArgument` for `PerPlane` with planar RGB (one strided tensor that cannot span
  /// buffers).
  static Result<Tensor> image(int64_t width, int64_t height, PixelFormat format,
                              std::optional<MemoryKind> memory = std::nullopt, DType dtype = DType::U8,
                              int64_t row_align = kDefaultRowAlign, PlaneBuffers planes = PlaneBuffers::Shared);

  /// A tensor over a buffer made elsewhere (V4L2, a GPU, another process): `fd` is
  /// duplicated (`F_DUPFD_CLOEXEC`), the caller keeps and closes its own. What the fd is comes
  /// from the kernel: a DMA-BUF (`exp_name` in `/proc/self/fdinfo`) imports as `DmaBuf`, a
  /// memfd or shmem file (it answers `F_GET_SEALS`) as `Shm`; `kind`, when given, must match.
  /// A memfd must not be able to shrink under the mapping (its owner's `ftruncate` would turn
  /// the next read into a SIGBUS): one already sealed with `F_SEAL_SHRINK` imports, an unsealed
  /// one is sealed here, which needs a writable fd and a memfd made with `MFD_ALLOW_SEALING`;
  /// any other (a memfd without `MFD_ALLOW_SEALING`, a `shm_open` file, an `O_RDONLY` fd of an
  /// unsealed memfd) is refused. An fd opened `O_RDONLY` gives a tensor that maps for reading
  /// only. Only the bytes the layout reaches (rounded up to whole pages) are mapped, so a small
  /// tensor over a huge buffer costs little address space. `layout` must use one buffer (see
  /// `from_planes` for more).
  /// Errors: `InvalidArgument` for a closed fd, a pipe, socket, device or disk file, a kind
  /// mismatch, a multi-buffer layout, or a memfd that is not and cannot be sealed against
  /// shrinking (the message names `F_SEAL_SHRINK` and the fix); `OutOfRange` when the buffer
  /// is shorter than the layout needs; `Io` when the kernel cannot be asked or the buffer
  /// cannot be mapped.
  static Result<Tensor> from_fd(int fd, const Layout& layout, std::optional<MemoryKind> kind = std::nullopt);

  /// As `from_fd` for a layout over several buffers (`Layout::image_planes` with planes in
  /// separate buffers): `fds[i]` backs buffer `i`; the same fd number given twice is imported
  /// once. `InvalidArgument` when `fds.size()` differs from `layout.buffer_count()`.
  static Result<Tensor> from_planes(std::span<const int> fds, const Layout& layout,
                                    std::optional<MemoryKind> kind = std::nullopt);
  static Result<Tensor> from_planes(std::initializer_list<int> fds, const Layout& layout,
                                    std::optional<MemoryKind> kind = std::nullopt) {
    return from_planes(std::span<const int>(fds.begin(), fds.size()), layout, kind);
  }

  /// A Mem tensor over host memory made elsewhere (a GStreamer or FFmpeg frame, an OpenCV
  /// `Mat`, a V4L2 mmap buffer), used in place: nothing is copied. `data` is buffer 0's byte 0,
  /// the layout's offsets (and plane offsets) count from it; the layout may be any strided
  /// tensor or an image in one buffer (`Layout::image`, `Layout::image_planes`). The caller
  /// promises that `data` holds at least `layout.byte_extent().end` bytes; memhal cannot check.
  /// The memory must stay valid until `keep_alive` (or `release`) lets go of it: memhal holds
  /// it, and the tensor, its views and maps, frames made from it (`MemoryDomain::from_tensor`,
  /// `Tee` branches, `Frame::share`) and tensors back from those all keep it, so it is dropped
  /// (or `release` called, exactly once, on whichever thread drops the last reference) only
  /// after the last of them is gone. An empty `KeepAlive` borrows memory the caller outlives.
  /// `release` must not throw. On error nothing is kept: `keep_alive` is dropped and `release`
  /// is called once before `wrap` returns, so ownership passes in every case.
  /// A `const void*` `data` gives a read-only tensor: write maps are `PermissionDenied`.
  /// Errors: `InvalidArgument` for a null `data` under a non-empty layout, a layout over several
  /// buffers, or a layout whose bytes would wrap around the address space.
  static Result<Tensor> wrap(void* data, const Layout& layout, KeepAlive keep_alive);
  static Result<Tensor> wrap(void* data, const Layout& layout, std::function<void()> release);
  static Result<Tensor> wrap(const void* data, const Layout& layout, KeepAlive keep_alive);
  static Result<Tensor> wrap(const void* data, const Layout& layout, std::function<void()> release);

  /// The fd behind buffer `buffer`, borrowed: owned by the tensor's storage, valid while any
  /// tensor or map over it lives; never close it. -1 for Mem (no fd) or a missing buffer.
  int fd(std::size_t buffer = 0) const noexcept;
  /// A new fd (`F_DUPFD_CLOEXEC`) for buffer `buffer` that the caller owns, e.g. to pass to
  /// another process or a driver. `InvalidArgument` for Mem tensors or a missing buffer, `Io`
  /// when `dup` fails.
  Result<UniqueFd> clone_fd(std::size_t buffer = 0) const;

  /// The identity of buffer `buffer`: process-unique and never reused while the process
  /// runs, so a cache or registry keyed by it cannot mistake a new buffer for a freed one; 0
  /// for a missing buffer. It names the allocation, not the tensor: views, copies, every
  /// hand-out of one `TensorPool` slot, a frame made from the tensor (`MemoryDomain`,
  /// `Tee`, `Frame::share`) and the tensor back from it report the same value. Two imports
  /// of one fd are two buffers.
  uint64_t buffer_id(std::size_t buffer = 0) const noexcept;
  /// This tensor held through `owner` as well: the same layout over the same storage (so the
  /// same `buffer_id`s — a Channel shares it as the buffer it registered), and every copy,
  /// view, map and frame made from the result keeps `owner` alive until the last of them is
  /// gone. For memory imported once and handed out per frame whose producer must not reuse it
  /// while anyone reads it (a V4L2 buffer, a GStreamer buffer of a bounded pool): the import
  /// keeps the identity, `owner` the per-frame hold. An empty `owner` gives the tensor as is.
  Tensor held_by(KeepAlive owner) const;

  const Layout& layout() const noexcept { return layout_; }
  std::span<const int64_t> shape() const noexcept { return layout_.shape(); }
  /// Signed byte strides.
  std::span<const int64_t> strides() const noexcept { return layout_.strides(); }
  std::size_t rank() const noexcept { return layout_.rank(); }
  DType dtype() const noexcept { return layout_.dtype(); }
  int64_t nbytes() const noexcept { return layout_.nbytes(); }
  bool is_contiguous() const noexcept { return layout_.is_contiguous(); }
  std::optional<PixelFormat> pixel_format() const noexcept { return layout_.pixel_format(); }
  const std::string& name() const noexcept { return layout_.name(); }

  /// The kind of memory this tensor actually got.
  MemoryKind memory() const noexcept;
  /// Why auto-selection skipped other kinds before landing on `memory()`; empty when the first
  /// choice served (or the request was pinned).
  const std::string& allocation_notes() const noexcept;

  /// Maps the bytes for the CPU. `InvalidArgument` for `CpuAccess::None` or a value outside
  /// the vocabulary; `NotHostAddressable` for device memory; backend errors otherwise.
  Result<TensorMap> map(CpuAccess access) const;

  // Zero-copy views; errors as the `Layout` functions of the same name.
  Result<Tensor> slice(std::size_t axis, int64_t begin, int64_t end) const;
  Result<Tensor> flip(std::size_t axis) const;
  Result<Tensor> transpose(std::size_t a, std::size_t b) const;
  Result<Tensor> permute(std::span<const std::size_t> axes) const;
  Result<Tensor> permute(std::initializer_list<std::size_t> axes) const {
    return permute(std::span<const std::size_t>(axes.begin(), axes.size()));
  }
  Result<Tensor> reshape(std::span<const int64_t> shape) const;
  Result<Tensor> reshape(std::initializer_list<int64_t> shape) const {
    return reshape(std::span<const int64_t>(shape.begin(), shape.size()));
  }
  Result<Tensor> crop(int64_t x, int64_t y, int64_t width, int64_t height) const;

  /// A new dense copy (row-major, or packed planes), in `memory` when given; else in this
  /// tensor's kind when that kind can be allocated here, else by auto-selection.
  Result<Tensor> materialize(std::optional<MemoryKind> memory = std::nullopt) const;

  /// Copies this tensor's elements into `dst`, which must have the same shape, dtype and
  /// pixel format (any strides, any memory kind the CPU can map). `InvalidArgument` on a
  /// mismatch. Overlapping source and destination are not supported.
  Result<void> copy_to(const Tensor& dst) const;

  /// Whether `a` and `b` view one allocation (any of their buffers, compared by `buffer_id`):
  /// views of one tensor, two hand-outs of one pool slot, and a tensor and
  /// `MemoryDomain::from_tensor(t)->to_tensor()` do. Two separate imports of one fd are
  /// separate allocations here.
  friend MEMHAL_EXPORT bool same_storage(const Tensor& a, const Tensor& b) noexcept;

 private:
  friend struct detail::TensorAccess;  // lets the storage and ipc layers build tensors
  using Buffers = std::array<std::shared_ptr<detail::Storage>, kMaxPlanes>;
  Tensor(Layout layout, Buffers buffers) : layout_(std::move(layout)), buffers_(std::move(buffers)) {}
  Result<Tensor> view(Result<Layout> layout) const;

  Layout layout_;
  Buffers buffers_;
};

MEMHAL_EXPORT bool same_storage(const Tensor& a, const Tensor& b) noexcept;

}  // namespace memhal
