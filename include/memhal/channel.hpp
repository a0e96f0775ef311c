/// @file
/// `ipc::Channel`: tensors and frames cross process boundaries without their bytes, and each
/// buffer crosses once.
///
/// A channel is one end of a Unix-domain `SOCK_SEQPACKET` socket (a `pair()` for a parent
/// and child, or a named socket through `Listener`/`connect`). The payload stays where it is:
/// only Shm and DmaBuf tensors travel (a Mem tensor is refused with a message that says to
/// allocate Shm — a Shm `TensorPool` for frames — or to copy into Shm with `materialize`).
///
/// **Buffer registry** (the default). The first time a buffer crosses, its fds (`SCM_RIGHTS`)
/// and the tensor's layout go over; `receive` validates every field and fd (a memfd or a
/// DMA-BUF, large enough for the layout, a memfd sealed against shrinking) before it maps
/// anything, and keeps that import. Afterwards a share of that buffer is a message of a few
/// dozen bytes: a share token, the buffer ids, the frame's timing, sequence and metadata, and
/// the layout only when it differs from the view last sent of that buffer (checked against
/// the registered size). The receiver's per-frame path reads no fdinfo, duplicates no fd and
/// maps nothing. Buffers are identified by `Tensor::buffer_id`, so every hand-out of one
/// `TensorPool` slot is one registered buffer.
///
/// **Release.** A received tensor (and everything made from it: views, maps, the frame,
/// `to_tensor()`) holds its share; when the last of them drops, on whatever thread, the
/// receiver tells the sender over a back channel (a second socket the sender passes with its
/// first share). The sending channel keeps its tensor — and so a pool slot's lease — until
/// then: a pooled buffer is never handed out again while the other process still holds a
/// frame of it. A small reader thread of the sending channel (started with its first share)
/// takes the releases, so a producer blocked in `TensorPool::acquire` is woken by them
/// without calling anything. A sending channel destroyed while shares are out keeps those
/// tensors until they are released or the receiving process drops its end.
///
/// **Retire and drop.** When a registered buffer's storage is gone (e.g. its pool was
/// destroyed), the next `send` first tells the receiver, which drops its import once no
/// received tensor uses it. When the connection drops, the receiver drops every import (again
/// only as its tensors go) and the sender every held tensor.
///
/// `set_buffer_registry(false)` sends each tensor in full instead (fds and descriptor every
/// time, imported anew by the receiver, nothing held or released): the path before the
/// registry, kept for comparison and for receivers that keep tensors indefinitely.
///
/// Messages (version 2, little-endian): u32 magic 'MHCH', u16 version, u16 type, u32 fd count,
/// then by type — 1 tensor: a `Descriptor` (frame fields inside), its buffers' fds; 2 back
/// channel: no body, one fd (a `SOCK_SEQPACKET` socket); 3 share: u64 token, u8 flags (bit 0:
/// a view follows, bit 1: a frame), u8 buffer count, {u64 buffer id, u8 fd attached}[count],
/// [u32 length, `Descriptor` of the view], [frame fields as in a descriptor], one fd per
/// attached buffer; 4 retire: u32 count, u64 buffer ids. On the back channel: u32 magic
/// 'MHRL', u32 count, u64 share tokens. At most `kMaxChannelMessage` bytes and `kMaxPlanes`
/// fds a message.
///
/// Thread-safety: one sending and one receiving thread at most per channel (or external
/// locking); received tensors may be dropped on any thread. The socket (`fd()`) is read only
/// by `receive`; a `poll` on it may wake for a retire or back-channel message after which
/// `receive(0)` is `Busy`. Do not `fork` while a sending channel's reader thread runs and use
/// that channel in the child.
#pragma once

#include <chrono>
#include <cstdint>
#include <memhal/descriptor.hpp>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/frame.hpp>
#include <memhal/tensor.hpp>
#include <memhal/unique_fd.hpp>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace memhal::detail {
struct ChannelState;
}

namespace memhal::ipc {

inline constexpr std::size_t kMaxChannelMessage = 64 * 1024;
/// Most buffers a receiver keeps registered at once (a sender retires those that are gone).
inline constexpr std::size_t kMaxRegisteredBuffers = 4096;

/// A parsed channel message: what `receive` checks before it touches any fd.
struct MEMHAL_EXPORT ChannelMessage {
  enum class Type : uint16_t { Tensor = 1, BackChannel = 2, Share = 3, Retire = 4 };
  struct Buffer {
    uint64_t id = 0;
    bool attached = false;  ///< its fd came with the message (first crossing, or a wider view)
  };
  Type type = Type::Tensor;
  uint32_t fd_count = 0;
  std::optional<Descriptor> descriptor;  ///< a tensor's; a share's view when it changed
  std::optional<Descriptor::FrameFields> frame;
  uint64_t token = 0;             ///< share: what the release names
  std::vector<Buffer> buffers;    ///< share: one per buffer of the layout
  std::vector<uint64_t> retired;  ///< retire: the buffer ids
};

/// Parses the bytes of one message that arrived with `fds_received` fds. `Protocol` for a
/// wrong magic, version, type or fd count, a share without a view for a new buffer, or one
/// buffer attached twice; `Corrupt` for a bad descriptor or frame fields. (Public so that it
/// can be fuzzed on its own.)
MEMHAL_EXPORT Result<ChannelMessage> parse_channel_message(std::span<const std::byte> bytes, std::size_t fds_received);

class MEMHAL_EXPORT Channel {
 public:
  /// Two connected ends (`socketpair`, close-on-exec). `Io` with errno on failure.
  static Result<std::pair<Channel, Channel>> pair();
  /// Connects to a `Listener` at `path`. `Unavailable` when nobody listens there.
  static Result<Channel> connect(const std::string& path);
  /// Adopts a connected `SOCK_SEQPACKET` socket (e.g. inherited by a child process).
  /// `InvalidArgument` when `socket` is not one.
  static Result<Channel> adopt(UniqueFd socket);

  Channel(Channel&&) noexcept;
  Channel& operator=(Channel&&) noexcept;
  /// Closes the socket (the peer's `receive` sees the end); shares still out stay held until
  /// released (see above).
  ~Channel();

  /// Sends `tensor` (Shm or DmaBuf): a share of its registered buffers (registering them the
  /// first time), or descriptor + fds when the registry is off. The channel holds a copy of
  /// `tensor` until the receiver releases it. `InvalidArgument` for Mem (allocate Shm instead)
  /// or a message over `kMaxChannelMessage`, `NotImplemented` for kinds without fds,
  /// `Unavailable` when the peer has gone, `Io`.
  Result<void> send(const Tensor& tensor);
  /// Sends `frame`: its payload as a tensor (`MemoryDomain::to_tensor`, no copy: the image's
  /// layout with it), its timing, sequence and metadata. Errors as `send(Tensor)` and
  /// `to_tensor`; `InvalidArgument` naming the key for metadata that cannot cross (see
  /// `Descriptor`).
  Result<void> send(const Frame& frame);

  /// Whether `send` uses the buffer registry (the default) or sends every tensor in full.
  void set_buffer_registry(bool enabled) noexcept { registry_ = enabled; }
  bool buffer_registry() const noexcept { return registry_; }

  /// Waits for the next tensor, up to `timeout`: forever when empty; not at all (only what is
  /// queued) for 0 or less; any longer timeout, up to `milliseconds::max()`, is waited out in
  /// full. `Busy` on timeout; `Unavailable` when the peer closed (or shut down its end);
  /// `Protocol` / `Corrupt` for a bad message, an empty (0-byte) one included, after which the
  /// channel keeps working; `NotImplemented` for a layout this build cannot read as described
  /// (see `Descriptor::layout`); `InvalidArgument` / `OutOfRange` for an fd of the wrong type
  /// or size. On every error all fds that arrived are closed, and the message is consumed.
  Result<Tensor> receive(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  /// As `receive`, for a frame: the tensor becomes the payload (`MemoryDomain::from_tensor`),
  /// with the timing, sequence and metadata that were sent. `Protocol` when a bare tensor
  /// arrives.
  Result<Frame> receive_frame(std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  /// The socket, still owned by the channel (to pass to a child, or to poll on).
  int fd() const noexcept { return socket_.get(); }
  /// Bytes this end has written to / read from the socket (messages only: fds are not bytes;
  /// releases on the back channel not counted).
  uint64_t bytes_sent() const noexcept { return bytes_sent_; }
  uint64_t bytes_received() const noexcept { return bytes_received_; }

 private:
  explicit Channel(UniqueFd socket);
  Result<void> send_tensor(const Tensor& tensor, const std::optional<Descriptor::FrameFields>& frame);
  Result<void> send_share(const Tensor& tensor, const std::optional<Descriptor::FrameFields>& frame);
  Result<void> send_message(std::span<const std::byte> bytes, std::span<const int> fds, const std::string& what);
  Result<std::pair<Tensor, std::optional<Descriptor::FrameFields>>> receive_message(
      std::optional<std::chrono::milliseconds> timeout);
  UniqueFd socket_;
  uint64_t bytes_sent_ = 0;
  uint64_t bytes_received_ = 0;
  bool registry_ = true;
  std::unique_ptr<detail::ChannelState> state_;
};

/// A named socket that `Channel::connect` reaches.
class MEMHAL_EXPORT Listener {
 public:
  /// Binds and listens on `path` (which must not exist; at most 107 bytes).
  static Result<Listener> bind(const std::string& path);
  /// Waits for the next peer (up to `timeout`, with the meaning it has for `Channel::receive`;
  /// `Busy` when it passes).
  Result<Channel> accept(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  int fd() const noexcept { return socket_.get(); }
  /// Removes the socket file.
  ~Listener();
  Listener(Listener&&) noexcept = default;
  Listener& operator=(Listener&&) noexcept = default;

 private:
  Listener(UniqueFd socket, std::string path) : socket_(std::move(socket)), path_(std::move(path)) {}
  UniqueFd socket_;
  std::string path_;
};

}  // namespace memhal::ipc
