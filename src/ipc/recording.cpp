#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <cstring>
#include <memhal/memory.hpp>
#include <memhal/recording.hpp>

#include "core/checked_vector.hpp"
#include "core/strings.hpp"
#include "ipc/wire.hpp"
#include "storage/allocator.hpp"
#include "tensor/tensor_access.hpp"

namespace memhal {
namespace {

constexpr std::array<unsigned char, 8> kFileMagic{'M', 'H', 'R', 'E', 'C', '\r', '\n', 0x1a};
constexpr uint32_t kHeaderLength = 16;
constexpr uint32_t kRecordMagic = 0x5252484d;  // "MHRR" in file order
constexpr uint32_t kRecordHeaderLength = 28;
constexpr uint32_t kFlagPayload = 1;
constexpr uint32_t kMaxDescriptorBytes = 64 * 1024;

uint32_t crc_update(uint32_t crc, std::span<const std::byte> bytes) {
  // zlib's crc32 takes a uInt length: feed large payloads in pieces.
  while (!bytes.empty()) {
    const std::size_t piece = std::min<std::size_t>(bytes.size(), 1u << 30);
    crc = static_cast<uint32_t>(::crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(piece)));
    bytes = bytes.subspan(piece);
  }
  return crc;
}

Result<void> write_all(int fd, std::span<const std::byte> bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return detail::fail_errno(detail::code_for_errno(errno), errno, "write to ", path);
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return {};
}

// Reads exactly bytes.size() bytes at `offset`; false when the file ends first.
Result<bool> read_exact(int fd, int64_t offset, std::span<std::byte> bytes, const std::string& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done, offset + static_cast<int64_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return detail::fail_errno(ErrorCode::Io, errno, "read of ", path);
    if (n == 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

Result<UniqueFd> open_file(const std::string& path, int flags) {
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC, 0644));
  if (!fd.valid()) return detail::fail_errno(detail::code_for_errno(errno), errno, "open of ", path);
  return fd;
}

}  // namespace

Result<Recorder> Recorder::create(const std::string& path) {
  MEMHAL_ASSIGN_OR_RETURN(UniqueFd fd, open_file(path, O_WRONLY | O_CREAT | O_TRUNC));
  detail::WireWriter header;
  for (unsigned char c : kFileMagic) header.put(c);
  header.put(kRecordingVersion);
  header.put(kHeaderLength);
  MEMHAL_TRY(write_all(fd.get(), header.take(), path));
  return Recorder(std::move(fd), path);
}

Result<void> Recorder::write(const Tensor& tensor, int64_t timestamp_ns) {
  return write_tensor(tensor, std::nullopt, timestamp_ns);
}

Result<void> Recorder::write(const Frame& frame, int64_t timestamp_ns) {
  MEMHAL_ASSIGN_OR_RETURN(Tensor tensor, frame.payload.to_tensor());
  return write_tensor(tensor, ipc::Descriptor::FrameFields::of(frame), timestamp_ns);
}

Result<void> Recorder::write_tensor(const Tensor& tensor, std::optional<ipc::Descriptor::FrameFields> frame,
                                    int64_t timestamp_ns) {
  MEMHAL_ASSIGN_OR_RETURN(ipc::Descriptor descriptor, ipc::Descriptor::from_tensor(tensor));
  descriptor.frame = std::move(frame);
  auto readable = tensor.map(CpuAccess::Read);
  if (!readable) {
    if (readable.error().code() != ErrorCode::NotHostAddressable) return unexpected(std::move(readable).error());
    return append_parts(descriptor, {}, false, timestamp_ns);
  }
  // An image is stored as laid out (its buffers up to where the layout reaches), so that its
  // planes keep their offsets and pitches; any other tensor densely, as its dense copy.
  Tensor stored = tensor;
  if (!tensor.pixel_format() && (!tensor.is_contiguous() || tensor.layout().offset() != 0)) {
    MEMHAL_ASSIGN_OR_RETURN(stored, tensor.materialize(MemoryKind::Mem));
    MEMHAL_ASSIGN_OR_RETURN(ipc::Descriptor dense, ipc::Descriptor::from_tensor(stored));
    dense.memory_code = descriptor.memory_code;
    dense.memory_name = std::move(descriptor.memory_name);
    dense.frame = std::move(descriptor.frame);
    descriptor = std::move(dense);
  }
  const Layout& layout = stored.layout();
  const auto& buffers = detail::TensorAccess::buffers(stored);
  std::array<std::span<const std::byte>, kMaxPlanes> parts{};
  uint32_t begun = 0;
  Result<void> written;
  for (; begun < layout.buffer_count(); ++begun) {
    auto base = buffers[begun]->begin_access(CpuAccess::Read);
    if (!base) {
      written = unexpected(std::move(base).error());
      break;
    }
    const auto bytes = static_cast<std::size_t>(layout.byte_extent(begun).end);
    descriptor.buffer_sizes[begun] = bytes;
    parts[begun] = std::span<const std::byte>(*base, bytes);
  }
  if (written) written = append_parts(descriptor, std::span(parts.data(), begun), true, timestamp_ns);
  for (uint32_t i = 0; i < begun; ++i) buffers[i]->end_access(CpuAccess::Read);
  return written;
}

Result<void> Recorder::append(const ipc::Descriptor& descriptor, std::optional<std::span<const std::byte>> payload,
                              int64_t timestamp_ns) {
  const std::span<const std::byte> body = payload.value_or(std::span<const std::byte>{});
  return append_parts(descriptor, std::span(&body, 1), payload.has_value(), timestamp_ns);
}

Result<void> Recorder::append_parts(const ipc::Descriptor& descriptor,
                                    std::span<const std::span<const std::byte>> parts, bool has_payload,
                                    int64_t timestamp_ns) {
  MEMHAL_ASSIGN_OR_RETURN(std::vector<std::byte> encoded, descriptor.encode());
  uint64_t payload_length = 0;
  for (const auto& part : parts) payload_length += part.size();
  detail::WireWriter header;
  header.put(kRecordMagic);
  header.put(static_cast<uint32_t>(encoded.size()));
  header.put(payload_length);
  header.put(timestamp_ns);
  header.put(has_payload ? kFlagPayload : uint32_t{0});
  std::vector<std::byte> head = header.take();
  uint32_t crc = crc_update(crc_update(0, head), encoded);
  for (const auto& part : parts) crc = crc_update(crc, part);
  detail::WireWriter trailer;
  trailer.put(crc);
  MEMHAL_TRY(write_all(fd_.get(), head, path_));
  MEMHAL_TRY(write_all(fd_.get(), encoded, path_));
  for (const auto& part : parts) {
    MEMHAL_TRY(write_all(fd_.get(), part, path_));
  }
  MEMHAL_TRY(write_all(fd_.get(), trailer.take(), path_));
  ++records_;
  return {};
}

Result<Replayer> Replayer::open(const std::string& path) {
  MEMHAL_ASSIGN_OR_RETURN(UniqueFd fd, open_file(path, O_RDONLY));
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return detail::fail_errno(ErrorCode::Io, errno, "stat of ", path);
  std::array<std::byte, kHeaderLength> header{};
  MEMHAL_ASSIGN_OR_RETURN(bool complete, read_exact(fd.get(), 0, header, path));
  if (!complete || std::memcmp(header.data(), kFileMagic.data(), kFileMagic.size()) != 0) {
    return detail::fail(ErrorCode::Corrupt, path, " is not a memhal recording (no MHREC header)");
  }
  detail::WireReader in(std::span<const std::byte>(header).subspan(kFileMagic.size()));
  uint32_t version = 0, length = 0;
  in.get(version);
  in.get(length);
  if (version > kRecordingVersion) {
    return detail::fail(ErrorCode::Protocol, path, " is a version ", version, " recording; this build reads up to ",
                        kRecordingVersion);
  }
  if (version == 0 || length < kHeaderLength || length > info.st_size) {
    return detail::fail(ErrorCode::Corrupt, path, ": bad header (version ", version, ", length ", length, ")");
  }
  Replayer replayer(std::move(fd), path, info.st_size);
  replayer.position_ = length;
  return replayer;
}

Result<std::optional<Record>> Replayer::next() {
  if (done_ || position_ == size_) return std::optional<Record>();
  const int64_t start = position_;
  auto damaged = [&](auto... why) -> Result<std::optional<Record>> {
    done_ = true;
    return detail::fail(ErrorCode::Corrupt, path_, ": record ", index_, " at byte ", start, " is damaged: ", why...);
  };
  std::array<std::byte, kRecordHeaderLength> head{};
  MEMHAL_ASSIGN_OR_RETURN(bool complete, read_exact(fd_.get(), start, head, path_));
  if (!complete) return damaged("the file ends inside its header");
  detail::WireReader in(head);
  uint32_t magic = 0, descriptor_length = 0, flags = 0;
  uint64_t payload_length = 0;
  Record record;
  in.get(magic);
  in.get(descriptor_length);
  in.get(payload_length);
  in.get(record.timestamp_ns);
  in.get(flags);
  if (magic != kRecordMagic) return damaged("no record magic");
  const uint64_t left = static_cast<uint64_t>(size_ - start) - kRecordHeaderLength;
  if (descriptor_length > kMaxDescriptorBytes || descriptor_length > left || payload_length > left ||
      descriptor_length + payload_length + 4 > left) {
    return damaged("it claims ", descriptor_length, " + ", payload_length, " bytes; the file has ", left, " left");
  }
  std::vector<std::byte> encoded(descriptor_length);
  MEMHAL_TRY(detail::checked_resize(record.payload, static_cast<std::size_t>(payload_length), "record ", index_, " of ",
                                    path_, " (", payload_length, " payload bytes)"));
  std::array<std::byte, 4> trailer{};
  const int64_t body = start + kRecordHeaderLength;
  MEMHAL_ASSIGN_OR_RETURN(bool got_descriptor, read_exact(fd_.get(), body, encoded, path_));
  MEMHAL_ASSIGN_OR_RETURN(bool got_payload, read_exact(fd_.get(), body + descriptor_length, record.payload, path_));
  MEMHAL_ASSIGN_OR_RETURN(
      bool got_trailer,
      read_exact(fd_.get(), body + descriptor_length + static_cast<int64_t>(payload_length), trailer, path_));
  if (!got_descriptor || !got_payload || !got_trailer) return damaged("the file ends inside it");
  const uint32_t crc = crc_update(crc_update(crc_update(0, head), encoded), record.payload);
  uint32_t stored = 0;
  detail::WireReader(trailer).get(stored);
  if (crc != stored) return damaged("checksum mismatch");
  auto descriptor = ipc::Descriptor::decode(encoded);
  if (!descriptor) return damaged(descriptor.error().message());
  record.descriptor = std::move(*descriptor);
  record.has_payload = (flags & kFlagPayload) != 0;
  record.index = index_++;
  position_ = body + descriptor_length + static_cast<int64_t>(payload_length) + 4;
  return std::optional<Record>(std::move(record));
}

Result<Tensor> Record::materialize(std::optional<MemoryKind> memory) const {
  const std::string recorded = descriptor.memory_description();
  if (!has_payload) {
    return detail::fail(ErrorCode::Unavailable, "record ", index, ": recorded as ", recorded,
                        " without bytes: cannot materialise here");
  }
  MEMHAL_ASSIGN_OR_RETURN(Layout layout, descriptor.layout());
  const auto& sizes = descriptor.buffer_sizes;
  uint64_t total = 0;
  for (uint64_t size : sizes) total += std::min<uint64_t>(size, payload.size() + 1);  // cannot wrap
  if (layout.buffer_count() != sizes.size() || total != payload.size()) {
    return detail::fail(ErrorCode::Corrupt, "record ", index, ": the layout spans ", layout.buffer_count(),
                        " buffers, the descriptor lists ", sizes.size(), " of ", total, " bytes, the payload has ",
                        payload.size());
  }
  const auto original = descriptor.memory();
  if (!memory && original && is_available(*original)) memory = original;
  const auto purpose = layout.pixel_format() ? detail::AllocationPurpose::Image : detail::AllocationPurpose::Tensor;
  detail::TensorAccess::Buffers buffers{};
  std::size_t at = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto size = static_cast<std::size_t>(sizes[i]);
    // Later buffers are pinned to the kind the first got: one tensor has one memory kind.
    const auto kind = i == 0 ? memory : std::optional<MemoryKind>(buffers[0]->kind());
    MEMHAL_ASSIGN_OR_RETURN(buffers[i], detail::allocate(std::max<std::size_t>(size, 1), kind, purpose));
    MEMHAL_ASSIGN_OR_RETURN(std::byte * base, buffers[i]->begin_access(CpuAccess::Write));
    std::memcpy(base, payload.data() + at, size);
    buffers[i]->end_access(CpuAccess::Write);
    at += size;
  }
  detail::Storage& storage = *buffers[0];
  if (storage.kind() != original) {
    storage.set_notes(detail::cat("recorded as ", recorded, "; materialised as ", to_string(storage.kind()),
                                  storage.notes().empty() ? "" : " (", storage.notes(),
                                  storage.notes().empty() ? "" : ")"));
  }
  MEMHAL_TRY(detail::check_layout_fits(layout, buffers));
  return detail::TensorAccess::make(std::move(layout), std::move(buffers));
}

Result<Frame> Record::materialize_frame(std::optional<MemoryKind> memory) const {
  if (!descriptor.frame) {
    return detail::fail(ErrorCode::InvalidArgument, "record ", index, " holds a tensor, not a frame");
  }
  MEMHAL_ASSIGN_OR_RETURN(Tensor tensor, materialize(memory));
  MEMHAL_ASSIGN_OR_RETURN(MemoryDomain domain, MemoryDomain::from_tensor(tensor));
  return Frame{std::move(domain), descriptor.frame->timing, descriptor.frame->sequence, descriptor.frame->metadata};
}

}  // namespace memhal
