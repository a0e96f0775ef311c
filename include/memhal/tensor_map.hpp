/// @file
/// `TensorMap`: an RAII CPU mapping of a tensor's bytes.
///
/// A map is valid until it is destroyed; it keeps the tensor's storage alive, and for backends
/// that need cache maintenance (DMA-BUF) its lifetime is the CPU-access bracket. `data()`
/// points at the tensor's logical element 0; a contiguous tensor is also available as a typed
/// span, a strided one as pointer plus byte strides. Move-only; use from one thread at a time.
///
/// Read maps (`CpuAccess::Read`) never allow writes where the backend can enforce it:
/// * Shm and DmaBuf: enforced by the MMU. A read map's addresses lie in a read-only
///   (`PROT_READ`) mapping of the buffer, made on the first read map and kept with the
///   storage; a write through it faults (SIGSEGV). Write and read-write maps use the buffer's
///   read-write mapping, so the same byte has a different address in a read map than in a write
///   map of the same tensor: compare tensors with `same_storage`, not map addresses.
/// * Mem (and memory lent by a frame): only the type guards it; the pages stay writable.
/// The type says the same for every kind: `const_data()` / `const_plane()` are what a reader
/// uses, `mutable_data()` / `mutable_plane()` answer `PermissionDenied` for a read map, and
/// `span<T>()` with a non-const `T` does too. `data()` / `plane()` stay `std::byte*` for code
/// that already holds a write map; writing through them with a read map is a bug that the MMU
/// catches for Shm and DmaBuf only.
#pragma once

#include <array>
#include <cstddef>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/layout.hpp>
#include <memory>
#include <span>
#include <type_traits>

namespace memhal {

namespace detail {
class Storage;
}

/// The DType a C++ element type stands for, or nothing (std::byte and 16-bit floats stored as
/// raw bits are handled by `TensorMap::span`).
template <class T>
constexpr std::optional<DType> dtype_of() noexcept {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, uint8_t>)
    return DType::U8;
  else if constexpr (std::is_same_v<U, int8_t>)
    return DType::I8;
  else if constexpr (std::is_same_v<U, uint16_t>)
    return DType::U16;
  else if constexpr (std::is_same_v<U, int16_t>)
    return DType::I16;
  else if constexpr (std::is_same_v<U, uint32_t>)
    return DType::U32;
  else if constexpr (std::is_same_v<U, int32_t>)
    return DType::I32;
  else if constexpr (std::is_same_v<U, uint64_t>)
    return DType::U64;
  else if constexpr (std::is_same_v<U, int64_t>)
    return DType::I64;
  else if constexpr (std::is_same_v<U, float>)
    return DType::F32;
  else if constexpr (std::is_same_v<U, double>)
    return DType::F64;
  else
    return std::nullopt;
}

class MEMHAL_EXPORT TensorMap {
 public:
  TensorMap(TensorMap&& other) noexcept;
  TensorMap& operator=(TensorMap&& other) noexcept;
  TensorMap(const TensorMap&) = delete;
  TensorMap& operator=(const TensorMap&) = delete;
  /// Ends the CPU access (and its cache-maintenance bracket).
  ~TensorMap();

  /// The tensor's logical element 0 (for a multi-plane image, the first pixel of plane 0).
  /// With a read map the bytes must not be written (see the file comment); prefer
  /// `const_data()` or `mutable_data()`, which say so in the type.
  std::byte* data() const noexcept { return element0_; }
  /// `data()` for reading: valid with any access.
  const std::byte* const_data() const noexcept { return element0_; }
  /// `data()` for writing: `PermissionDenied` for a read map.
  Result<std::byte*> mutable_data() const;
  /// Bytes of a contiguous tensor (`nbytes()`); 0 for a strided or multi-plane one, which is
  /// read through `data()` and `strides()` or `plane()`.
  std::size_t size_bytes() const noexcept;
  CpuAccess access() const noexcept { return access_; }
  const Layout& layout() const noexcept { return layout_; }
  std::span<const int64_t> shape() const noexcept { return layout_.shape(); }
  /// Signed byte strides from `data()`.
  std::span<const int64_t> strides() const noexcept { return layout_.strides(); }
  DType dtype() const noexcept { return layout_.dtype(); }

  /// First byte of plane `index` of a multi-plane image (rows `planes()[index].pitch` apart);
  /// null for an index beyond the planes.
  std::byte* plane(std::size_t index) const noexcept;
  /// `plane(index)` for reading.
  const std::byte* const_plane(std::size_t index) const noexcept { return plane(index); }
  /// `plane(index)` for writing: `PermissionDenied` for a read map, `OutOfRange` for an index
  /// beyond the planes.
  Result<std::byte*> mutable_plane(std::size_t index) const;

  /// The elements of a contiguous tensor as `T`. `T` must match the dtype (`uint16_t` also
  /// reads f16/bf16 bits; `std::byte` reads any dtype as bytes); a non-const `T` needs a map
  /// with write access. `InvalidArgument` otherwise, `PermissionDenied` for writes through a
  /// read map.
  template <class T>
  Result<std::span<T>> span() const {
    MEMHAL_TRY(check_span(sizeof(T), dtype_of<T>(), std::is_same_v<std::remove_cv_t<T>, std::byte>,
                          std::is_same_v<std::remove_cv_t<T>, uint16_t>, !std::is_const_v<T>));
    return std::span<T>(reinterpret_cast<T*>(element0_), size_bytes() / sizeof(T));
  }

 private:
  friend class Tensor;
  TensorMap(Layout layout, CpuAccess access) : layout_(std::move(layout)), access_(access) {}
  Result<void> check_span(std::size_t element_size, std::optional<DType> wanted, bool any_bytes, bool raw16,
                          bool writable) const;
  void release() noexcept;

  Layout layout_;
  CpuAccess access_;
  std::array<std::shared_ptr<detail::Storage>, kMaxPlanes> buffers_{};
  std::array<std::byte*, kMaxPlanes> bases_{};
  std::byte* element0_ = nullptr;
};

}  // namespace memhal
