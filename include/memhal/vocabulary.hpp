/// @file
/// The vocabularies of memhal: `MemoryKind`, `DType`, `PixelFormat`, `Compression`,
/// `CpuAccess` and `MemoryDomainKind`; the options of `ImageProcessor` (`Flip`, `Rotation`,
/// `ResizeMode`, `Interpolation`, `ColorMatrix`, `ColorRange`, `ImageBackend`); and `ErrorCode`.
///
/// Each is an `enum class E : uint32_t` with explicit, stable codes, and each has exactly one
/// table (`VocabularyTraits<E>::entries`: code, wire string, accepted aliases) from which the
/// generic functions below — and the C constants, the Python enums, the CLI and the file
/// formats — are derived. Every enumerator exists on every platform: a code names a thing;
/// whether this process can serve it is a run-time question (`memhal/memory.hpp`). Unknown
/// codes and strings are rejected (an empty optional), never guessed. New enumerators are only
/// ever appended with new codes; a code is never reused.
///
/// All functions here are pure and thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>

namespace memhal {

/// Which backend a tensor is allocated from.
enum class MemoryKind : uint32_t { Mem = 0, Shm = 1, DmaBuf = 2, IoSurface = 3, Pbo = 4, Cuda = 5 };

/// Element type of a tensor.
enum class DType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  U64 = 6,
  I64 = 7,
  F16 = 8,
  F32 = 9,
  F64 = 10,
  BF16 = 11,
};

/// Pixel layout of an image. Code 0 is never a format.
enum class PixelFormat : uint32_t {
  Rgb = 1,
  Rgba = 2,
  Bgra = 3,
  Grey = 4,
  Yuyv = 5,
  Vyuy = 6,
  Nv12 = 7,
  Nv16 = 8,
  PlanarRgb = 9,
  PlanarRgba = 10,
  Nv24 = 11,
  Nv21 = 12,
  I420 = 13,
  Uyvy = 14,
  Bgr = 15,
};

/// Framebuffer compression a buffer may carry (GPU-vendor tiling/compression schemes).
enum class Compression : uint32_t { None = 0, Any = 1, Ubwc = 2, Afbc = 3, Pvric = 4, Dcc = 5 };

/// What a CPU mapping will do with the bytes.
enum class CpuAccess : uint32_t { None = 0, Read = 1, Write = 2, ReadWrite = 3 };

/// Where a pipeline frame's payload lives (declaration order of the frame payloads).
enum class MemoryDomainKind : uint32_t {
  System = 0,
  SystemView = 1,
  DmaBuf = 2,
  VulkanTexture = 3,
  WebGPUBuffer = 4,
  Cuda = 5,
  D3D11Texture = 6,
  CvPixelBuffer = 7,
  WebGPUExternalTexture = 8,
  WgpuTexture = 9,
  WgpuBuffer = 10,
};

/// Mirroring applied to the cropped source, before rotation.
enum class Flip : uint32_t { None = 0, Horizontal = 1, Vertical = 2, Both = 3 };

/// Clockwise rotation applied after the flip.
enum class Rotation : uint32_t { None = 0, Cw90 = 1, Cw180 = 2, Cw270 = 3 };

/// `Stretch` fills the destination; `Letterbox` keeps the aspect ratio, centres, and pads.
enum class ResizeMode : uint32_t { Stretch = 0, Letterbox = 1 };

/// `Area` averages every source pixel an output pixel covers (use it for downscales beyond
/// 2x, where bilinear aliases); on upscales it behaves as `Bilinear`.
enum class Interpolation : uint32_t { Bilinear = 0, Nearest = 1, Area = 2 };

/// Y'CbCr matrix of YUV sources and destinations.
enum class ColorMatrix : uint32_t { Bt601 = 0, Bt709 = 1 };

/// `Limited`: Y in 16..235, chroma in 16..240; `Full`: 0..255.
enum class ColorRange : uint32_t { Limited = 0, Full = 1 };

/// The backends that run `ImageProcessor` conversions.
enum class ImageBackend : uint32_t { Cpu = 0, Gl = 1 };

/// Why a call failed (`memhal/error.hpp`). Codes are stable and only ever appended; 0 is
/// success in the C API and is therefore never an `ErrorCode`.
enum class ErrorCode : uint32_t {
  InvalidArgument = 1,     ///< the caller passed something that can never work
  NotImplemented = 2,      ///< no backend in this build serves the request
  Unavailable = 3,         ///< a backend exists but cannot serve the request here, now
  OutOfMemory = 4,         ///< an allocation failed
  Io = 5,                  ///< a system call or file operation failed
  PermissionDenied = 6,    ///< the operating system refused access
  OutOfRange = 7,          ///< an index or size lies outside what the object holds
  UnsupportedDomain = 8,   ///< a frame arrived in a memory domain the element cannot read
  NotHostAddressable = 9,  ///< the memory cannot be mapped for CPU access
  Busy = 10,               ///< every resource of a pool is in use
  Corrupt = 11,            ///< stored or received data fails validation
  Protocol = 12,           ///< a peer broke the wire protocol
  Internal = 13,           ///< a bug in memhal
};

/// One row of a vocabulary table: the enumerator, its one wire spelling, and the other
/// spellings `from_string` accepts (legacy or common names; never written).
template <class E>
struct VocabularyEntry {
  E value;
  std::string_view wire;
  std::array<std::string_view, 2> aliases{};
};

/// The table of vocabulary `E`; specialised once per vocabulary below.
template <class E>
struct VocabularyTraits;

template <>
struct VocabularyTraits<MemoryKind> {
  static constexpr std::string_view name = "MemoryKind";
  static constexpr std::array<VocabularyEntry<MemoryKind>, 6> entries{{
      {MemoryKind::Mem, "mem"},
      {MemoryKind::Shm, "shm"},
      {MemoryKind::DmaBuf, "dmabuf", {"dma"}},
      {MemoryKind::IoSurface, "iosurface"},
      {MemoryKind::Pbo, "pbo"},
      {MemoryKind::Cuda, "cuda"},
  }};
};

template <>
struct VocabularyTraits<DType> {
  static constexpr std::string_view name = "DType";
  static constexpr std::array<VocabularyEntry<DType>, 12> entries{{
      {DType::U8, "u8"},
      {DType::I8, "i8"},
      {DType::U16, "u16"},
      {DType::I16, "i16"},
      {DType::U32, "u32"},
      {DType::I32, "i32"},
      {DType::U64, "u64"},
      {DType::I64, "i64"},
      {DType::F16, "f16"},
      {DType::F32, "f32"},
      {DType::F64, "f64"},
      {DType::BF16, "bf16"},
  }};
};

template <>
struct VocabularyTraits<PixelFormat> {
  static constexpr std::string_view name = "PixelFormat";
  static constexpr std::array<VocabularyEntry<PixelFormat>, 15> entries{{
      {PixelFormat::Rgb, "rgb"},
      {PixelFormat::Rgba, "rgba"},
      {PixelFormat::Bgra, "bgra"},
      {PixelFormat::Grey, "grey", {"gray", "y800"}},
      {PixelFormat::Yuyv, "yuyv"},
      {PixelFormat::Vyuy, "vyuy"},
      {PixelFormat::Nv12, "nv12"},
      {PixelFormat::Nv16, "nv16"},
      {PixelFormat::PlanarRgb, "planar_rgb", {"8bps"}},
      {PixelFormat::PlanarRgba, "planar_rgba"},
      {PixelFormat::Nv24, "nv24"},
      {PixelFormat::Nv21, "nv21"},
      {PixelFormat::I420, "i420"},
      {PixelFormat::Uyvy, "uyvy"},
      {PixelFormat::Bgr, "bgr"},
  }};
};

template <>
struct VocabularyTraits<Compression> {
  static constexpr std::string_view name = "Compression";
  static constexpr std::array<VocabularyEntry<Compression>, 6> entries{{
      {Compression::None, "none"},
      {Compression::Any, "any"},
      {Compression::Ubwc, "ubwc"},
      {Compression::Afbc, "afbc"},
      {Compression::Pvric, "pvric"},
      {Compression::Dcc, "dcc"},
  }};
};

template <>
struct VocabularyTraits<CpuAccess> {
  static constexpr std::string_view name = "CpuAccess";
  static constexpr std::array<VocabularyEntry<CpuAccess>, 4> entries{{
      {CpuAccess::None, "none"},
      {CpuAccess::Read, "read"},
      {CpuAccess::Write, "write"},
      {CpuAccess::ReadWrite, "read_write"},
  }};
};

template <>
struct VocabularyTraits<MemoryDomainKind> {
  static constexpr std::string_view name = "MemoryDomainKind";
  static constexpr std::array<VocabularyEntry<MemoryDomainKind>, 11> entries{{
      {MemoryDomainKind::System, "system"},
      {MemoryDomainKind::SystemView, "system_view"},
      {MemoryDomainKind::DmaBuf, "dmabuf"},
      {MemoryDomainKind::VulkanTexture, "vulkan_texture"},
      {MemoryDomainKind::WebGPUBuffer, "webgpu_buffer"},
      {MemoryDomainKind::Cuda, "cuda"},
      {MemoryDomainKind::D3D11Texture, "d3d11_texture"},
      {MemoryDomainKind::CvPixelBuffer, "cv_pixel_buffer"},
      {MemoryDomainKind::WebGPUExternalTexture, "webgpu_external_texture"},
      {MemoryDomainKind::WgpuTexture, "wgpu_texture"},
      {MemoryDomainKind::WgpuBuffer, "wgpu_buffer"},
  }};
};

template <>
struct VocabularyTraits<Flip> {
  static constexpr std::string_view name = "Flip";
  static constexpr std::array<VocabularyEntry<Flip>, 4> entries{{
      {Flip::None, "none"},
      {Flip::Horizontal, "horizontal", {"h"}},
      {Flip::Vertical, "vertical", {"v"}},
      {Flip::Both, "both"},
  }};
};

template <>
struct VocabularyTraits<Rotation> {
  static constexpr std::string_view name = "Rotation";
  // The aliases are the clockwise degrees (`memhal convert --rotate 90`).
  static constexpr std::array<VocabularyEntry<Rotation>, 4> entries{{
      {Rotation::None, "none", {"0"}},
      {Rotation::Cw90, "cw90", {"90"}},
      {Rotation::Cw180, "cw180", {"180"}},
      {Rotation::Cw270, "cw270", {"270"}},
  }};
};

template <>
struct VocabularyTraits<ResizeMode> {
  static constexpr std::string_view name = "ResizeMode";
  static constexpr std::array<VocabularyEntry<ResizeMode>, 2> entries{{
      {ResizeMode::Stretch, "stretch"},
      {ResizeMode::Letterbox, "letterbox"},
  }};
};

template <>
struct VocabularyTraits<Interpolation> {
  static constexpr std::string_view name = "Interpolation";
  static constexpr std::array<VocabularyEntry<Interpolation>, 3> entries{{
      {Interpolation::Bilinear, "bilinear"},
      {Interpolation::Nearest, "nearest"},
      {Interpolation::Area, "area"},
  }};
};

template <>
struct VocabularyTraits<ColorMatrix> {
  static constexpr std::string_view name = "ColorMatrix";
  static constexpr std::array<VocabularyEntry<ColorMatrix>, 2> entries{{
      {ColorMatrix::Bt601, "bt601"},
      {ColorMatrix::Bt709, "bt709"},
  }};
};

template <>
struct VocabularyTraits<ColorRange> {
  static constexpr std::string_view name = "ColorRange";
  // The aliases are FFmpeg's color_range names.
  static constexpr std::array<VocabularyEntry<ColorRange>, 2> entries{{
      {ColorRange::Limited, "limited", {"tv"}},
      {ColorRange::Full, "full", {"pc"}},
  }};
};

template <>
struct VocabularyTraits<ImageBackend> {
  static constexpr std::string_view name = "ImageBackend";
  static constexpr std::array<VocabularyEntry<ImageBackend>, 2> entries{{
      {ImageBackend::Cpu, "cpu"},
      {ImageBackend::Gl, "gl"},
  }};
};

template <>
struct VocabularyTraits<ErrorCode> {
  static constexpr std::string_view name = "ErrorCode";
  static constexpr std::array<VocabularyEntry<ErrorCode>, 13> entries{{
      {ErrorCode::InvalidArgument, "invalid_argument"},
      {ErrorCode::NotImplemented, "not_implemented"},
      {ErrorCode::Unavailable, "unavailable"},
      {ErrorCode::OutOfMemory, "out_of_memory"},
      {ErrorCode::Io, "io"},
      {ErrorCode::PermissionDenied, "permission_denied"},
      {ErrorCode::OutOfRange, "out_of_range"},
      {ErrorCode::UnsupportedDomain, "unsupported_domain"},
      {ErrorCode::NotHostAddressable, "not_host_addressable"},
      {ErrorCode::Busy, "busy"},
      {ErrorCode::Corrupt, "corrupt"},
      {ErrorCode::Protocol, "protocol"},
      {ErrorCode::Internal, "internal"},
  }};
};

/// A type with a vocabulary table.
template <class E>
concept Vocabulary = std::is_enum_v<E> && requires {
  VocabularyTraits<E>::entries;
};

namespace detail {

template <Vocabulary E>
constexpr bool table_is_well_formed() {
  const auto& entries = VocabularyTraits<E>::entries;
  for (std::size_t i = 1; i < entries.size(); ++i) {
    // Code order, no duplicates: `all<E>()` and `from_code` rely on it.
    if (static_cast<uint32_t>(entries[i - 1].value) >= static_cast<uint32_t>(entries[i].value)) return false;
  }
  for (const auto& entry : entries) {
    if (entry.wire.empty()) return false;
  }
  return true;
}

template <Vocabulary E>
inline constexpr auto kValues = [] {
  std::array<E, VocabularyTraits<E>::entries.size()> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = VocabularyTraits<E>::entries[i].value;
  return out;
}();

constexpr char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

constexpr bool equals_ignoring_ascii_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

}  // namespace detail

/// The stable code of `value`; identical on every surface.
template <Vocabulary E>
constexpr uint32_t code(E value) noexcept {
  return static_cast<uint32_t>(value);
}

/// The enumerator with code `c`, or nothing for a code this build does not know.
template <Vocabulary E>
constexpr std::optional<E> from_code(uint32_t c) noexcept {
  for (const auto& entry : VocabularyTraits<E>::entries) {
    if (static_cast<uint32_t>(entry.value) == c) return entry.value;
  }
  return std::nullopt;
}

/// The one wire spelling of `value` (lower case); empty for a value outside the table.
template <Vocabulary E>
constexpr std::string_view to_string(E value) noexcept {
  for (const auto& entry : VocabularyTraits<E>::entries) {
    if (entry.value == value) return entry.wire;
  }
  return {};
}

/// The enumerator spelled `text` — its wire spelling or an alias, ASCII case-insensitively —
/// or nothing for a string this build does not know.
template <Vocabulary E>
std::optional<E> from_string(std::string_view text) noexcept {
  const auto& entries = VocabularyTraits<E>::entries;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (detail::equals_ignoring_ascii_case(text, entries[i].wire)) return entries[i].value;
    for (std::size_t a = 0; a < entries[i].aliases.size(); ++a) {
      const std::string_view alias = entries[i].aliases[a];
      if (!alias.empty() && detail::equals_ignoring_ascii_case(text, alias)) return entries[i].value;
    }
  }
  return std::nullopt;
}

/// Every enumerator of `E`, in code order.
template <Vocabulary E>
constexpr std::span<const E> all() noexcept {
  return detail::kValues<E>;
}

static_assert(detail::table_is_well_formed<MemoryKind>());
static_assert(detail::table_is_well_formed<DType>());
static_assert(detail::table_is_well_formed<PixelFormat>());
static_assert(detail::table_is_well_formed<Compression>());
static_assert(detail::table_is_well_formed<CpuAccess>());
static_assert(detail::table_is_well_formed<MemoryDomainKind>());
static_assert(detail::table_is_well_formed<Flip>());
static_assert(detail::table_is_well_formed<Rotation>());
static_assert(detail::table_is_well_formed<ResizeMode>());
static_assert(detail::table_is_well_formed<Interpolation>());
static_assert(detail::table_is_well_formed<ColorMatrix>());
static_assert(detail::table_is_well_formed<ColorRange>());
static_assert(detail::table_is_well_formed<ImageBackend>());
static_assert(detail::table_is_well_formed<ErrorCode>());

/// Size in bytes of one element of `dtype`; 0 for a value outside the table.
constexpr std::size_t size_of(DType dtype) noexcept {
  switch (dtype) {
    case DType::U8:
    case DType::I8: return 1;
    case DType::U16:
    case DType::I16:
    case DType::F16:
    case DType::BF16: return 2;
    case DType::U32:
    case DType::I32:
    case DType::F32: return 4;
    case DType::U64:
    case DType::I64:
    case DType::F64: return 8;
  }
  return 0;
}

/// Whether `access` lets the CPU read / write.
constexpr bool can_read(CpuAccess access) noexcept {
  return access == CpuAccess::Read || access == CpuAccess::ReadWrite;
}
constexpr bool can_write(CpuAccess access) noexcept {
  return access == CpuAccess::Write || access == CpuAccess::ReadWrite;
}

}  // namespace memhal
