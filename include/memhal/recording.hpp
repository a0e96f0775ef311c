/// @file
/// Recordings: `Recorder` writes tensors to a `.mhrec` file, `Replayer` reads them back, on
/// any platform.
///
/// File format, version 2 (integers little-endian):
/// ```
/// header: 8 bytes "MHREC\r\n\x1a", u32 version, u32 header_length (16)
/// record: u32 magic 'MHRR', u32 descriptor_length, u64 payload_length, i64 timestamp_ns,
///         u32 flags (bit 0: payload present), descriptor (see memhal/descriptor.hpp),
///         payload, u32 CRC-32 of everything from the record magic to the end of the payload
/// ```
/// The payload is the bytes of each buffer the descriptor lists, one after another
/// (`buffer_sizes[i]` bytes of buffer `i`). An image (a tensor with a pixel format) keeps its
/// layout: its buffers are stored as laid out, with their planes' offsets and pitches; other
/// host-readable tensors store their bytes densely; device memory that the CPU cannot map
/// (Cuda) stores the descriptor alone. A frame's record carries its timing, sequence and
/// metadata in the descriptor. Version 1 files (descriptors without metadata, one buffer) are
/// still read. Every record names the original
/// backing with its wire string, so a reader can say "recorded as dmabuf; materialised as mem"
/// or "recorded as cuda without bytes: cannot materialise here", and a record whose codes are
/// newer than this build is reported by name and code, not as corruption. A damaged or
/// truncated record is detected by its checksum and lengths; every intact record before it is
/// still read. Neither class is thread-safe; use one object per thread.
#pragma once

#include <cstdint>
#include <memhal/descriptor.hpp>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/frame.hpp>
#include <memhal/tensor.hpp>
#include <memhal/unique_fd.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace memhal {

inline constexpr uint32_t kRecordingVersion = 2;

/// One record read back from a recording.
struct MEMHAL_EXPORT Record {
  uint64_t index = 0;          ///< position in the file, from 0
  int64_t timestamp_ns = 0;    ///< as given to the recorder
  ipc::Descriptor descriptor;  ///< the tensor as recorded; `frame` set for a frame's record
  bool has_payload = false;    ///< false for memory the recorder could not read (device memory)
  std::vector<std::byte> payload;

  /// A tensor with the recorded bytes, in `memory` when given, else in the recorded kind when
  /// it can be allocated here, else by auto-selection; the tensor's `allocation_notes()` say
  /// how the backing changed. `Unavailable` when there are no bytes ("recorded as cuda without
  /// bytes: cannot materialise here"); `NotImplemented` for a dtype or format this build does
  /// not know, or bytes it cannot read as described (compressed, or a DRM format modifier other
  /// than linear: see `Descriptor::layout`), before anything is allocated; `Corrupt` when the
  /// payload does not fit the layout.
  Result<Tensor> materialize(std::optional<MemoryKind> memory = std::nullopt) const;
  /// As `materialize`, as the frame that was recorded: the tensor as payload
  /// (`MemoryDomain::from_tensor`) with its timing, sequence and metadata. `InvalidArgument`
  /// for the record of a bare tensor.
  Result<Frame> materialize_frame(std::optional<MemoryKind> memory = std::nullopt) const;
};

class MEMHAL_EXPORT Recorder {
 public:
  /// Creates (or truncates) `path` and writes the file header. `Io` / `PermissionDenied`
  /// with the path and errno on failure.
  static Result<Recorder> create(const std::string& path);

  /// Appends `tensor`: its bytes when the CPU can map it, else its descriptor alone. Errors of
  /// the tensor's map (other than `NotHostAddressable`) and `Io` for the write.
  Result<void> write(const Tensor& tensor, int64_t timestamp_ns);
  /// Appends `frame`: its payload as `write(Tensor)` does (`MemoryDomain::to_tensor`, so an
  /// image keeps its layout) with its timing, sequence and metadata. The errors of `write`
  /// and `to_tensor`; `InvalidArgument` naming the key for metadata that cannot be recorded.
  Result<void> write(const Frame& frame, int64_t timestamp_ns);

  /// Appends a record made elsewhere: `descriptor` and, when given, `payload` (which must be
  /// the bytes of the buffers the descriptor lists; they are written as they are).
  Result<void> append(const ipc::Descriptor& descriptor, std::optional<std::span<const std::byte>> payload,
                      int64_t timestamp_ns);

  uint64_t records_written() const noexcept { return records_; }

 private:
  Recorder(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  Result<void> write_tensor(const Tensor& tensor, std::optional<ipc::Descriptor::FrameFields> frame,
                            int64_t timestamp_ns);
  Result<void> append_parts(const ipc::Descriptor& descriptor, std::span<const std::span<const std::byte>> parts,
                            bool has_payload, int64_t timestamp_ns);
  UniqueFd fd_;
  std::string path_;
  uint64_t records_ = 0;
};

class MEMHAL_EXPORT Replayer {
 public:
  /// Opens `path` and checks its header. `Corrupt` for a file that is not a recording,
  /// `Protocol` for a newer version, `Io` / `PermissionDenied` for the open.
  static Result<Replayer> open(const std::string& path);

  /// The next record; an empty optional at the clean end of the file. `Corrupt`, naming the
  /// record index and byte offset, when a record is damaged or truncated; after that error
  /// every further call returns the end (the rest of the file cannot be trusted).
  Result<std::optional<Record>> next();

 private:
  Replayer(UniqueFd fd, std::string path, int64_t size) : fd_(std::move(fd)), path_(std::move(path)), size_(size) {}
  UniqueFd fd_;
  std::string path_;
  int64_t size_ = 0;
  int64_t position_ = 0;
  uint64_t index_ = 0;
  bool done_ = false;
};

}  // namespace memhal
