#include <memhal/descriptor.hpp>
#include <memhal/pixel_format.hpp>
#include <memhal/tensor.hpp>

#include <array>
#include <bit>
#include <iomanip>
#include <sstream>
#include <string_view>
#include <utility>

#include "core/strings.hpp"
#include "ipc/frame_wire.hpp"
#include "tensor/tensor_access.hpp"

namespace memhal::ipc {
namespace {

constexpr uint32_t kMagic = 0x5344484d;  // "MHDS" in file order
constexpr uint16_t kFlagFrame = 1;
constexpr uint16_t kKnownFlags = kFlagFrame;
constexpr int64_t kNoTime = INT64_MIN;  // an unknown time on the wire

// DRM format modifiers (drm_fourcc.h): the vendor in the top byte, its code below.
constexpr uint64_t kModLinear = 0;
constexpr uint64_t kModInvalid = (uint64_t{1} << 56) - 1;
constexpr uint64_t mod_code(uint64_t vendor, uint64_t value) {
  return (vendor << 56) | (value & kModInvalid);
}

std::string modifier_description(uint64_t modifier) {
  static constexpr std::array<std::string_view, 11> kVendors{
      "none", "intel", "amd", "nvidia", "samsung", "qcom", "vivante", "broadcom", "arm", "allwinner", "amlogic"};
  static constexpr std::array<std::pair<uint64_t, std::string_view>, 7> kNames{{
      {kModInvalid, "DRM_FORMAT_MOD_INVALID: no explicit layout, only the driver that allocated it knows"},
      {mod_code(1, 1), "I915_FORMAT_MOD_X_TILED"},
      {mod_code(1, 2), "I915_FORMAT_MOD_Y_TILED"},
      {mod_code(1, 3), "I915_FORMAT_MOD_Yf_TILED"},
      {mod_code(1, 9), "I915_FORMAT_MOD_4_TILED"},
      {mod_code(4, 1), "DRM_FORMAT_MOD_SAMSUNG_64_32_TILE"},
      {mod_code(5, 1), "DRM_FORMAT_MOD_QCOM_COMPRESSED"},
  }};
  std::ostringstream out;
  out << "0x" << std::hex << std::setw(16) << std::setfill('0') << modifier << std::dec << " (";
  const uint64_t vendor = modifier >> 56;
  if (vendor < kVendors.size()) {
    out << "vendor " << kVendors[vendor];
  } else {
    out << "vendor 0x" << std::hex << vendor << std::dec << ", unknown to this build";
  }
  for (const auto& [known, name] : kNames) {
    if (known == modifier) out << ", " << name;
  }
  out << ")";
  return out.str();
}

// What Layout can describe: uncompressed bytes at the offsets the shape and strides give.
// Anything else would be read as garbage pixels, so it is refused before anything is mapped.
Result<void> check_linear(const Descriptor& d) {
  const std::string tensor =
      d.name.empty() ? std::string("the descriptor") : detail::cat("descriptor of '", d.name, "'");
  if (d.compression_code != code(Compression::None)) {
    const auto compression = from_code<Compression>(d.compression_code);
    const std::string what = compression ? detail::cat(to_string(*compression), " (code ", d.compression_code, ")")
                                         : detail::cat("code ", d.compression_code, " (unknown to this build)");
    return detail::fail(ErrorCode::NotImplemented, tensor, " has compression ", what,
                        ": its bytes are compressed, and this build reads only uncompressed (none) buffers");
  }
  if (d.drm_modifier != kModLinear) {
    return detail::fail(ErrorCode::NotImplemented, tensor, " has DRM format modifier ",
                        modifier_description(d.drm_modifier),
                        ": its bytes are not laid out as its shape and strides say, and this build reads only "
                        "DRM_FORMAT_MOD_LINEAR (0) buffers");
  }
  return {};
}

// Metadata value types on the wire, in the order of the format's type codes (1, 2, ...).
using MetadataTypes =
    std::tuple<bool, int32_t, uint32_t, int64_t, uint64_t, float, double, std::string, std::vector<uint8_t>>;

template <class T>
void put_value(detail::WireWriter& out, const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    out.put(static_cast<uint8_t>(value));
  } else if constexpr (std::is_same_v<T, float>) {
    out.put(std::bit_cast<uint32_t>(value));
  } else if constexpr (std::is_same_v<T, double>) {
    out.put(std::bit_cast<uint64_t>(value));
  } else if constexpr (std::is_integral_v<T>) {
    out.put(value);
  } else {
    out.put(static_cast<uint32_t>(value.size()));
    out.put_bytes(std::as_bytes(std::span(value.data(), value.size())));
  }
}

template <class T>
bool get_value(detail::WireReader& in, Metadata& metadata, std::string key) {
  T value{};
  if constexpr (std::is_same_v<T, bool>) {
    uint8_t bit = 2;
    if (!in.get(bit) || bit > 1) return false;
    value = bit == 1;
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t> bits = 0;
    if (!in.get(bits)) return false;
    value = std::bit_cast<T>(bits);
  } else if constexpr (std::is_integral_v<T>) {
    if (!in.get(value)) return false;
  } else {
    uint32_t length = 0;
    std::span<const std::byte> bytes;
    if (!in.get(length) || !in.get_span(length, bytes)) return false;
    const auto* data = reinterpret_cast<const typename T::value_type*>(bytes.data());
    value.assign(data, data + bytes.size());
  }
  metadata.set(std::move(key), std::move(value));
  return true;
}

// Writes the entry under `key` when it holds one of the wire types; false when none matched.
template <std::size_t... I>
bool put_entry(detail::WireWriter& out, const Metadata& metadata, const std::string& key, std::index_sequence<I...>) {
  auto one = [&]<std::size_t N>(std::integral_constant<std::size_t, N>) {
    const auto* value = metadata.get<std::tuple_element_t<N, MetadataTypes>>(key);
    if (value == nullptr) return false;
    out.put(static_cast<uint8_t>(N + 1));
    put_value(out, *value);
    return true;
  };
  return (one(std::integral_constant<std::size_t, I>{}) || ...);
}

template <std::size_t... I>
bool get_entry(detail::WireReader& in, uint8_t type, Metadata& metadata, std::string key, std::index_sequence<I...>) {
  bool read = false;
  ((type == I + 1 ? (read = get_value<std::tuple_element_t<I, MetadataTypes>>(in, metadata, std::move(key))) : false),
   ...);
  return read;
}

constexpr auto kMetadataTypes = std::make_index_sequence<std::tuple_size_v<MetadataTypes>>{};

}  // namespace

Result<void> put_frame_fields(detail::WireWriter& out, const Descriptor::FrameFields& fields) {
  for (const auto& time : {fields.timing.pts, fields.timing.dts, fields.timing.duration})
    out.put(time.value_or(kNoTime));
  out.put(fields.sequence);
  const std::vector<std::string> keys = fields.metadata.keys();
  if (keys.size() > kMaxMetadataEntries) {
    return detail::fail(ErrorCode::InvalidArgument, "frame ", fields.sequence, " has ", keys.size(),
                        " metadata entries; at most ", kMaxMetadataEntries, " cross a process or are recorded");
  }
  out.put(static_cast<uint16_t>(keys.size()));
  for (const std::string& key : keys) {
    if (key.size() > 255) {
      return detail::fail(ErrorCode::InvalidArgument, "frame ", fields.sequence, ": metadata key of ", key.size(),
                          " bytes (at most 255 cross a process or are recorded)");
    }
    out.put(static_cast<uint8_t>(key.size()));
    out.put_string(key);
    if (!put_entry(out, fields.metadata, key, kMetadataTypes)) {
      return detail::fail(ErrorCode::InvalidArgument, "frame ", fields.sequence, ": metadata '", key,
                          "' holds a type that cannot cross a process or be recorded (bool, int32_t, uint32_t, ",
                          "int64_t, uint64_t, float, double, std::string and std::vector<uint8_t> can); erase it or ",
                          "store it as one of those");
    }
  }
  return {};
}

Result<Descriptor::FrameFields> get_frame_fields(detail::WireReader& in, uint16_t version, std::string_view where) {
  auto truncated = [&](const char* field) { return detail::fail(ErrorCode::Corrupt, where, " ends inside ", field); };
  Descriptor::FrameFields fields;
  for (auto* time : {&fields.timing.pts, &fields.timing.dts, &fields.timing.duration}) {
    int64_t value = 0;
    if (!in.get(value)) return truncated("the frame timing");
    if (value != kNoTime) *time = value;
  }
  if (!in.get(fields.sequence)) return truncated("the frame sequence");
  if (version < 2) return fields;
  uint16_t count = 0;
  if (!in.get(count)) return truncated("the metadata count");
  if (count > kMaxMetadataEntries) {
    return detail::fail(ErrorCode::Corrupt, where, " has ", count, " metadata entries (at most ", kMaxMetadataEntries,
                        ")");
  }
  std::string previous;
  for (uint16_t i = 0; i < count; ++i) {
    uint8_t length = 0, type = 0;
    std::string key;
    if (!in.get(length) || !in.get_string(length, key) || !in.get(type)) return truncated("a metadata entry");
    if (i > 0 && key <= previous) {
      return detail::fail(ErrorCode::Corrupt, where, ": metadata key '", key, "' follows '", previous,
                          "' (keys are unique and ascending)");
    }
    if (type == 0 || type > std::tuple_size_v<MetadataTypes>) {
      return detail::fail(ErrorCode::Corrupt, where, ": metadata '", key, "' has type code ", int(type),
                          ", unknown to this build");
    }
    previous = key;
    if (!get_entry(in, type, fields.metadata, std::move(key), kMetadataTypes)) return truncated("a metadata value");
  }
  return fields;
}

bool operator==(const Descriptor::FrameFields& a, const Descriptor::FrameFields& b) {
  if (a.timing != b.timing || a.sequence != b.sequence) return false;
  detail::WireWriter x, y;
  const bool encoded = put_frame_fields(x, a).has_value() && put_frame_fields(y, b).has_value();
  return encoded && x.take() == y.take();  // keys sorted, values by type: equal bytes, equal metadata
}

namespace {}  // namespace

Result<Descriptor> Descriptor::from_tensor(const Tensor& tensor) {
  const Layout& layout = tensor.layout();
  Descriptor out;
  out.memory_code = code(tensor.memory());
  out.memory_name = std::string(to_string(tensor.memory()));
  out.dtype_code = code(layout.dtype());
  out.pixel_format_code = layout.pixel_format() ? code(*layout.pixel_format()) : 0;
  out.compression_code = code(Compression::None);
  out.shape.assign(layout.shape().begin(), layout.shape().end());
  out.strides.assign(layout.strides().begin(), layout.strides().end());
  out.offset = layout.offset();
  out.planes.assign(layout.planes().begin(), layout.planes().end());
  const auto& buffers = detail::TensorAccess::buffers(tensor);
  for (uint32_t i = 0; i < layout.buffer_count(); ++i) out.buffer_sizes.push_back(buffers[i]->size());
  out.name = layout.name();
  return out;
}

std::string Descriptor::memory_description() const {
  if (memory()) return memory_name;
  return detail::cat(memory_name.empty() ? "?" : memory_name, " (code ", memory_code, ", unknown to this build)");
}

Result<Layout> Descriptor::layout() const {
  MEMHAL_TRY(check_linear(*this));
  auto dtype = from_code<DType>(dtype_code);
  if (!dtype) return detail::fail(ErrorCode::NotImplemented, "dtype code ", dtype_code, " is unknown to this build");
  std::optional<PixelFormat> format;
  if (pixel_format_code != 0) {
    format = from_code<PixelFormat>(pixel_format_code);
    if (!format) {
      return detail::fail(ErrorCode::NotImplemented, "pixel format code ", pixel_format_code,
                          " is unknown to this build");
    }
  }
  if (!planes.empty()) {
    if (!format || shape.size() != 2) {
      return detail::fail(ErrorCode::InvalidArgument, "descriptor has ", planes.size(),
                          " planes but is not a {h, w} multi-plane image");
    }
    MEMHAL_ASSIGN_OR_RETURN(Layout layout, Layout::image_planes(shape[1], shape[0], *format, planes, *dtype));
    layout.set_name(name);
    return layout;
  }
  MEMHAL_ASSIGN_OR_RETURN(Layout layout, Layout::strided(shape, strides, offset, *dtype));
  if (format) {
    MEMHAL_ASSIGN_OR_RETURN(layout, layout.with_pixel_format(*format));
  }
  layout.set_name(name);
  return layout;
}

Result<std::vector<std::byte>> Descriptor::encode() const {
  if (shape.size() != strides.size() || shape.size() > kMaxRank) {
    return detail::fail(ErrorCode::InvalidArgument, "descriptor with ", shape.size(), " dimensions and ",
                        strides.size(), " strides (at most ", kMaxRank, ")");
  }
  if (planes.size() > kMaxPlanes || buffer_sizes.size() > kMaxPlanes) {
    return detail::fail(ErrorCode::InvalidArgument, "descriptor with ", planes.size(), " planes and ",
                        buffer_sizes.size(), " buffers (at most ", kMaxPlanes, ")");
  }
  if (name.size() > kMaxDescriptorName || memory_name.size() > 255) {
    return detail::fail(ErrorCode::InvalidArgument, "descriptor name of ", name.size(), " bytes (at most ",
                        kMaxDescriptorName, ")");
  }
  detail::WireWriter out;
  out.put(kMagic);
  out.put(kDescriptorVersion);
  out.put(static_cast<uint16_t>(frame ? kFlagFrame : 0));
  out.put(uint32_t{0});  // total length, patched below
  out.put(memory_code);
  out.put(static_cast<uint8_t>(memory_name.size()));
  out.put_string(memory_name);
  out.put(dtype_code);
  out.put(pixel_format_code);
  out.put(compression_code);
  out.put(drm_modifier);
  out.put(static_cast<uint8_t>(shape.size()));
  for (int64_t d : shape) out.put(d);
  for (int64_t s : strides) out.put(s);
  out.put(offset);
  out.put(static_cast<uint8_t>(planes.size()));
  for (const PlaneLayout& plane : planes) {
    out.put(plane.buffer);
    out.put(plane.offset);
    out.put(plane.pitch);
  }
  out.put(static_cast<uint8_t>(buffer_sizes.size()));
  for (uint64_t size : buffer_sizes) out.put(size);
  if (frame) {
    MEMHAL_TRY(put_frame_fields(out, *frame));
  }
  out.put(static_cast<uint16_t>(name.size()));
  out.put_string(name);
  out.patch_u32(8, static_cast<uint32_t>(out.size()));
  return out.take();
}

Result<Descriptor> Descriptor::decode(std::span<const std::byte> bytes) {
  detail::WireReader in(bytes);
  auto truncated = [&](const char* field) {
    return detail::fail(ErrorCode::Corrupt, "descriptor of ", bytes.size(), " bytes ends inside ", field);
  };
  uint32_t magic = 0, total = 0;
  uint16_t version = 0, flags = 0;
  if (!in.get(magic) || !in.get(version) || !in.get(flags) || !in.get(total)) return truncated("its header");
  if (magic != kMagic) return detail::fail(ErrorCode::Corrupt, "not a memhal descriptor (magic ", magic, ")");
  if (version > kDescriptorVersion) {
    return detail::fail(ErrorCode::Protocol, "descriptor version ", version, " is newer than this build reads (",
                        kDescriptorVersion, ")");
  }
  if (version == 0) return detail::fail(ErrorCode::Corrupt, "descriptor version 0");
  if ((flags & ~kKnownFlags) != 0) return detail::fail(ErrorCode::Corrupt, "descriptor flags ", flags, " unknown");
  if (total != bytes.size()) {
    return detail::fail(ErrorCode::Corrupt, "descriptor says ", total, " bytes, got ", bytes.size());
  }
  Descriptor out;
  uint8_t length8 = 0;
  if (!in.get(out.memory_code) || !in.get(length8) || !in.get_string(length8, out.memory_name)) {
    return truncated("the memory kind");
  }
  if (!in.get(out.dtype_code) || !in.get(out.pixel_format_code) || !in.get(out.compression_code) ||
      !in.get(out.drm_modifier)) {
    return truncated("the codes");
  }
  uint8_t rank = 0;
  if (!in.get(rank)) return truncated("the rank");
  if (rank > kMaxRank) return detail::fail(ErrorCode::Corrupt, "descriptor rank ", int(rank), " > ", kMaxRank);
  out.shape.resize(rank);
  out.strides.resize(rank);
  for (auto& d : out.shape) {
    if (!in.get(d)) return truncated("the shape");
  }
  for (auto& s : out.strides) {
    if (!in.get(s)) return truncated("the strides");
  }
  if (!in.get(out.offset)) return truncated("the offset");
  uint8_t count = 0;
  if (!in.get(count)) return truncated("the plane count");
  if (count > kMaxPlanes) return detail::fail(ErrorCode::Corrupt, "descriptor has ", int(count), " planes");
  out.planes.resize(count);
  for (auto& plane : out.planes) {
    if (!in.get(plane.buffer) || !in.get(plane.offset) || !in.get(plane.pitch)) return truncated("a plane");
  }
  if (!in.get(count)) return truncated("the buffer count");
  if (count > kMaxPlanes) return detail::fail(ErrorCode::Corrupt, "descriptor has ", int(count), " buffers");
  out.buffer_sizes.resize(count);
  for (auto& size : out.buffer_sizes) {
    if (!in.get(size)) return truncated("the buffer sizes");
  }
  if (flags & kFlagFrame) {
    MEMHAL_ASSIGN_OR_RETURN(out.frame,
                            get_frame_fields(in, version, detail::cat("descriptor of ", bytes.size(), " bytes")));
  }
  uint16_t name_length = 0;
  if (!in.get(name_length) || !in.get_string(name_length, out.name)) return truncated("the name");
  if (out.name.size() > kMaxDescriptorName) {
    return detail::fail(ErrorCode::Corrupt, "descriptor name of ", out.name.size(), " bytes");
  }
  if (in.remaining() != 0) return detail::fail(ErrorCode::Corrupt, "descriptor has ", in.remaining(), " stray bytes");
  return out;
}

bool operator==(const Descriptor& a, const Descriptor& b) {
  auto same_planes = [](const std::vector<PlaneLayout>& x, const std::vector<PlaneLayout>& y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const PlaneLayout& p, const PlaneLayout& q) {
      return p.buffer == q.buffer && p.offset == q.offset && p.pitch == q.pitch;
    });
  };
  return a.memory_code == b.memory_code && a.memory_name == b.memory_name && a.dtype_code == b.dtype_code &&
         a.pixel_format_code == b.pixel_format_code && a.compression_code == b.compression_code &&
         a.drm_modifier == b.drm_modifier && a.shape == b.shape && a.strides == b.strides && a.offset == b.offset &&
         same_planes(a.planes, b.planes) && a.buffer_sizes == b.buffer_sizes && a.frame == b.frame && a.name == b.name;
}

}  // namespace memhal::ipc
