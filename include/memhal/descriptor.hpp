/// @file
/// `ipc::Descriptor`: a tensor's (or frame's) layout as a small, versioned binary record.
///
/// A descriptor is what travels beside a tensor's fds over a Unix socket, and what a recording
/// stores in front of each payload. It keeps every vocabulary value as its raw code *and*, for
/// the backing memory kind, its wire string: a reader built before a producer learned a new
/// kind can still name it ("recorded as metalbuffer (code 9)") instead of calling the data
/// corrupt. `decode` checks the structure (magic, version, lengths, limits); `layout` checks the
/// meaning (known codes, sizes that do not overflow, bytes laid out as the shape and strides
/// say) and builds a `Layout`. A channel and a recording's `materialize` call `layout` before
/// they map or copy anything, so a descriptor of compressed or tiled bytes is refused by name
/// there rather than read as linear pixels; `decode` alone still accepts it, so that a reader
/// can list it.
///
/// Wire format, version 2, all integers little-endian:
/// ```
/// u32 magic 'MHDS'  u16 version  u16 flags  u32 total_length
/// u32 memory_code   u8 memory_name_length  memory_name
/// u32 dtype_code    u32 pixel_format_code (0: none)  u32 compression_code  u64 drm_modifier
/// u8 rank           i64 shape[rank]  i64 strides[rank]  i64 offset
/// u8 plane_count    { u32 buffer  i64 offset  i64 pitch }[plane_count]
/// u8 buffer_count   u64 buffer_size[buffer_count]
/// flags bit 0 (a frame): frame fields (below)
/// u16 name_length   name
///
/// frame fields: i64 pts  i64 dts  i64 duration (INT64_MIN: unknown)  u64 sequence  metadata
/// metadata:     u16 count  { u8 key_length  key  u8 type  value }[count], keys strictly
///               ascending; type 1 bool (u8 0/1), 2 int32_t, 3 uint32_t, 4 int64_t, 5 uint64_t,
///               6 float, 7 double (IEEE bits), 8 std::string, 9 std::vector<uint8_t>
///               (u32 length, bytes)
/// ```
/// Version 1 (still read) had no metadata after the sequence. `Metadata` entries of other
/// types cannot be encoded: `encode` names the key (erase it, or store it as one of these).
/// Thread-safe as a value type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/frame.hpp>
#include <memhal/layout.hpp>
#include <memhal/vocabulary.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace memhal {
class Tensor;
}

namespace memhal::ipc {

inline constexpr uint16_t kDescriptorVersion = 2;
inline constexpr std::size_t kMaxDescriptorName = 1024;  ///< longest tensor name carried, bytes
inline constexpr std::size_t kMaxMetadataEntries = 256;  ///< most metadata entries a frame carries

struct MEMHAL_EXPORT Descriptor {
  uint32_t memory_code = 0;        ///< `MemoryKind` code of the original backing
  std::string memory_name;         ///< its wire string (kept for codes this build does not know)
  uint32_t dtype_code = 0;         ///< `DType` code
  uint32_t pixel_format_code = 0;  ///< `PixelFormat` code; 0 when the tensor is not an image
  uint32_t compression_code = 0;   ///< `Compression` code; only `none` can be read
  uint64_t drm_modifier = 0;       ///< DRM format modifier; only 0 (DRM_FORMAT_MOD_LINEAR) can be read
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;        ///< signed byte strides
  int64_t offset = 0;                  ///< byte offset of element 0 in buffer 0
  std::vector<PlaneLayout> planes;     ///< buffer/offset/pitch of each plane (multi-plane images)
  std::vector<uint64_t> buffer_sizes;  ///< bytes of each buffer (fd) that goes with it
  /// Frame fields, present when the descriptor describes a `Frame` rather than a bare tensor.
  struct MEMHAL_EXPORT FrameFields {
    FrameTiming timing;
    uint64_t sequence = 0;
    Metadata metadata;  ///< entries of the types listed above
    /// The fields of `frame` (its metadata shared, not copied).
    static FrameFields of(const Frame& frame) { return {frame.timing, frame.sequence, frame.metadata}; }
    /// Equal timing, sequence and metadata (the same keys, types and values).
    friend MEMHAL_EXPORT bool operator==(const FrameFields& a, const FrameFields& b);
  };
  std::optional<FrameFields> frame;
  std::string name;

  /// The descriptor of `tensor`: its layout, its memory kind and the sizes of its buffers.
  static Result<Descriptor> from_tensor(const Tensor& tensor);

  /// The memory kind, when this build knows the code.
  std::optional<MemoryKind> memory() const noexcept { return from_code<MemoryKind>(memory_code); }
  /// "dmabuf", or "<name> (code N, unknown to this build)".
  std::string memory_description() const;

  /// The layout described. `NotImplemented` for bytes this build cannot read as described: a
  /// compression other than `none` (named, or by its code when unknown: "compression code
  /// 999"), a DRM format modifier other than DRM_FORMAT_MOD_LINEAR (in hex with its vendor and,
  /// where known, its name: "0x0100000000000001 (vendor intel, I915_FORMAT_MOD_X_TILED)";
  /// DRM_FORMAT_MOD_INVALID included, as its layout is known only to the driver), a dtype or
  /// pixel format this build does not know (named by code). Not `Corrupt`: the record is
  /// intact, it asks for a reader this build lacks. `InvalidArgument` for a shape, stride or
  /// plane that is not valid.
  Result<Layout> layout() const;

  /// The wire bytes. Fails only with `InvalidArgument` for more dimensions, planes or buffers
  /// than the format carries, a name longer than `kMaxDescriptorName`, or metadata the format
  /// cannot carry (a type not listed above, a key over 255 bytes, more than
  /// `kMaxMetadataEntries` entries).
  Result<std::vector<std::byte>> encode() const;

  /// Parses wire bytes (version 1 or 2). `Corrupt` for a wrong magic, a length that does not
  /// match, a field past the end or beyond its limit, metadata keys out of order or of an
  /// unknown type; `Protocol` for a newer version than this build reads.
  static Result<Descriptor> decode(std::span<const std::byte> bytes);

  friend bool operator==(const Descriptor& a, const Descriptor& b);
};

MEMHAL_EXPORT bool operator==(const Descriptor& a, const Descriptor& b);

}  // namespace memhal::ipc
