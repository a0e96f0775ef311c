/// @file
/// `MemoryDomain`: where a pipeline frame's payload lives, and `DomainSet`, a set of domains
/// (what an element accepts).
///
/// A sum type with one alternative per `MemoryDomainKind`, in code order: `SystemSlice`,
/// `SystemView`, `OwnedDmaBuf`, `OwnedVulkanTexture`, `OwnedWebGPUBuffer`, `OwnedCudaBuffer`,
/// `OwnedD3D11Texture`, `OwnedCvPixelBuffer`, `OwnedWebGPUExternalTexture`, `OwnedWgpuTexture`,
/// `OwnedWgpuBuffer`. Every alternative exists on every platform. An element that reads CPU
/// bytes asks for them with `require_system_slice` / `require_system_bytes`, which refuse any
/// other domain loudly (`UnsupportedDomain`, naming the element and what arrived, with a hint);
/// `share()` hands a payload to another consumer without copying bytes (except owned system
/// bytes not yet made shareable); `from_tensor` / `to_tensor` cross to and from `Tensor`
/// without copying.
///
/// Thread-safety: a value (one thread at a time); shares may be used, written (copy-on-write)
/// and dropped on any threads at once.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/foreign_handles.hpp>
#include <memhal/owned_dma_buf.hpp>
#include <memhal/system_slice.hpp>
#include <memhal/system_view.hpp>
#include <memhal/tensor.hpp>
#include <memhal/vocabulary.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

namespace memhal {

/// A set of `MemoryDomainKind`s as a bitmask: bit `code(kind)` stands for `kind`.
class DomainSet {
 public:
  constexpr DomainSet() noexcept = default;
  constexpr DomainSet(std::initializer_list<MemoryDomainKind> kinds) noexcept {
    for (const MemoryDomainKind kind : kinds) insert(kind);
  }

  /// Every kind in the vocabulary table (derived from it, never written by hand).
  static constexpr DomainSet all() noexcept {
    DomainSet set;
    for (const auto& entry : VocabularyTraits<MemoryDomainKind>::entries) set.insert(entry.value);
    return set;
  }
  /// The set whose bits are `bits`, or nothing when a bit names no kind this build knows.
  static constexpr std::optional<DomainSet> from_bits(uint64_t bits) noexcept {
    if ((bits & ~all().bits_) != 0) return std::nullopt;
    DomainSet set;
    set.bits_ = bits;
    return set;
  }

  constexpr uint64_t bits() const noexcept { return bits_; }
  constexpr bool contains(MemoryDomainKind kind) const noexcept { return (bits_ & bit(kind)) != 0; }
  constexpr bool empty() const noexcept { return bits_ == 0; }
  constexpr std::size_t size() const noexcept {
    std::size_t count = 0;
    for (uint64_t rest = bits_; rest != 0; rest &= rest - 1) ++count;
    return count;
  }
  constexpr DomainSet& insert(MemoryDomainKind kind) noexcept {
    bits_ |= bit(kind);
    return *this;
  }
  constexpr DomainSet& erase(MemoryDomainKind kind) noexcept {
    bits_ &= ~bit(kind);
    return *this;
  }

  friend constexpr DomainSet operator|(DomainSet a, DomainSet b) noexcept { return raw(a.bits_ | b.bits_); }
  friend constexpr DomainSet operator&(DomainSet a, DomainSet b) noexcept { return raw(a.bits_ & b.bits_); }
  friend constexpr bool operator==(DomainSet a, DomainSet b) noexcept = default;

 private:
  static constexpr uint64_t bit(MemoryDomainKind kind) noexcept {
    return code(kind) < 64 ? uint64_t{1} << code(kind) : 0;
  }
  static constexpr DomainSet raw(uint64_t bits) noexcept {
    DomainSet set;
    set.bits_ = bits;
    return set;
  }
  uint64_t bits_ = 0;
};

static_assert(VocabularyTraits<MemoryDomainKind>::entries.back().value <= MemoryDomainKind{63},
              "DomainSet has one bit per code: codes above 63 need a wider mask");

/// The wire spellings of the kinds in `set`, in code order, joined by "|" ("system|dmabuf").
MEMHAL_EXPORT std::string to_string(DomainSet set);

class MEMHAL_EXPORT MemoryDomain {
 public:
  /// The alternatives, in code order: index `i` holds the payload of kind code `i`.
  using Payload = std::variant<SystemSlice, SystemView, OwnedDmaBuf, OwnedVulkanTexture, OwnedWebGPUBuffer,
                               OwnedCudaBuffer, OwnedD3D11Texture, OwnedCvPixelBuffer, OwnedWebGPUExternalTexture,
                               OwnedWgpuTexture, OwnedWgpuBuffer>;

  /// An empty owned system slice.
  MemoryDomain() noexcept = default;
  /// Wraps any alternative (implicit: a payload is a domain).
  template <class T>
  requires(!std::is_same_v<std::remove_cvref_t<T>, MemoryDomain> && std::is_constructible_v<Payload, T&&>)
      MemoryDomain(T&& payload)
  noexcept(std::is_nothrow_constructible_v<Payload, T&&>)  // NOLINT
      : payload_(std::forward<T>(payload)) {}

  MemoryDomainKind kind() const noexcept { return static_cast<MemoryDomainKind>(payload_.index()); }
  const Payload& payload() const noexcept { return payload_; }
  Payload& payload() noexcept { return payload_; }
  /// The payload as `T`, or null when it is another kind.
  template <class T>
  const T* get_if() const noexcept {
    return std::get_if<T>(&payload_);
  }
  template <class T>
  T* get_if() noexcept {
    return std::get_if<T>(&payload_);
  }

  /// "dmabuf (nv12 1920x1080, 2 planes)": the kind and what a person needs to recognise it.
  std::string describe() const;

  /// The bytes of a `System` payload; nothing for every other kind.
  std::optional<std::span<const std::byte>> as_system_slice() const noexcept;
  /// The `System` payload, for an element (`category`, e.g. "jpeg-encoder") that reads only
  /// plain CPU bytes. `UnsupportedDomain` for any other kind, with a message naming
  /// `category`, the domain that arrived and what to do (download it first, materialise a
  /// view, or insert a converter). The pointer is valid while this domain is unchanged.
  Result<const SystemSlice*> require_system_slice(std::string_view category) const;
  Result<SystemSlice*> require_system_slice(std::string_view category);
  /// The payload as packed CPU bytes, for an element that reads them: a `System` payload's own
  /// bytes (borrowed: a count bump, no copy), or a `SystemView` materialised (no copy when the
  /// view is already contiguous). `UnsupportedDomain` as `require_system_slice` for the other
  /// kinds; `OutOfMemory` when materialising fails.
  Result<SharedBytes> require_system_bytes(std::string_view category) const;

  /// Another handle to the same payload: a count bump for every kind, except owned system
  /// bytes not yet made shareable, which are deep-copied. `OutOfMemory` if that copy fails.
  Result<MemoryDomain> share() const;
  /// Makes owned system bytes shareable in place (no copy); no-op for the other kinds.
  void make_shareable() noexcept;

  /// The tensor's bytes as a domain, without copying and without losing anything: a host
  /// tensor (Mem, Shm: one buffer) becomes a shared `System` slice when it is contiguous or a
  /// multi-plane image (the slice covers every plane) and a `SystemView` when it is strided; a
  /// DmaBuf image tensor becomes an `OwnedDmaBuf` over its fds (duplicated, so the domain owns
  /// them) and a Cuda image tensor (one made by `to_tensor` from an `OwnedCudaBuffer`) an
  /// `OwnedCudaBuffer` of its planes, each with the tensor as `keep_alive`. Every payload
  /// remembers the tensor — its storage and whole `Layout` (pixel format, planes with offsets
  /// and pitches, strides, name) — and keeps it alive, and so a `TensorPool` slot, across
  /// `share()`, `Tee` and `Frame::share`. `NotImplemented` for a host tensor over several
  /// buffers, a strided tensor of rank above `kMaxViewRank`, a DmaBuf or Cuda tensor without a
  /// pixel format or with a layout DRM cannot describe, and for other memory kinds; `Io` when
  /// `dup` fails.
  static Result<MemoryDomain> from_tensor(const Tensor& tensor);
  /// The payload as a tensor, without copying. A payload made by `from_tensor` (or a share of
  /// one) and not changed since gives that same tensor back: same storage (`same_storage`,
  /// `buffer_id`), same layout, same rights — a write through it is seen by every share of
  /// the frame, as a write through the producer's tensor is (`SystemSlice::mutable_bytes`
  /// stays copy-on-write; `materialize` to get bytes of your own). Otherwise: `System` bytes
  /// become a 1-D `u8` tensor and a `SystemView` (a transformed one, say) a strided tensor of
  /// its shape, over the storage the bytes came from when they came from one (its kind, fd
  /// and identity), else over the bytes, writable only while the tensor is their sole holder
  /// and they are memhal's (else `map(Write)` answers `PermissionDenied`). A linear
  /// `OwnedDmaBuf` whose fds are the files of its `keep_alive` tensor's buffers comes back over
  /// that storage; any other becomes an image tensor over duplicates of its fds
  /// (`Tensor::from_planes`: the kernel says whether they import as DmaBuf or Shm). Either way
  /// the tensor, its views and maps hold the payload's `keep_alive` while they live. An
  /// `OwnedCudaBuffer` with a pixel format becomes a Cuda image tensor over its device
  /// pointers (one buffer from plane 0's pointer; memhal never dereferences them) holding its
  /// `keep_alive`; its `map` answers `NotHostAddressable`. `UnsupportedDomain` for kinds
  /// without a tensor form here; for a DMA-BUF, `NotImplemented` for a tiled or compressed
  /// modifier, `InvalidArgument` for planes that do not match the format, and the errors of
  /// `Tensor::from_planes`; for CUDA, `NotImplemented` without a pixel format or with a plane
  /// before plane 0, `InvalidArgument` for a null pointer or planes that do not match the
  /// format.
  Result<Tensor> to_tensor() const;

 private:
  Payload payload_;
};

}  // namespace memhal
