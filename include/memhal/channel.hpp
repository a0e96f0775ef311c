/// @file
/// `ipc::Channel`: tensors cross process boundaries without their bytes.
///
/// A channel is one end of a Unix-domain `SOCK_SEQPACKET` socket (a `pair()` for a parent
/// and child, or a named socket through `Listener`/`connect`). `send` writes a small message —
/// a header and the tensor's `Descriptor` — with the tensor's fds attached (`SCM_RIGHTS`); the
/// payload stays where it is. `receive` validates every field and every fd (a memfd or a
/// DMA-BUF, large enough for the layout, a memfd sealed against shrinking) before it maps
/// anything, and returns a tensor over the same memory. Only Shm and DmaBuf tensors travel:
/// a Mem tensor is refused with a message that says to allocate Shm.
///
/// Message (version 1, little-endian): u32 magic 'MHCH', u16 version, u16 type (1: tensor),
/// u32 fd count, then the descriptor bytes; at most `kMaxChannelMessage` bytes and
/// `kMaxPlanes` fds. A channel is not thread-safe: one sender and one receiver thread at most,
/// or external locking.
#pragma once

#include <chrono>
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
#include <utility>

namespace memhal::ipc {

inline constexpr std::size_t kMaxChannelMessage = 8192;

/// A parsed channel message: what `receive` checks before it touches any fd.
struct ChannelMessage {
  Descriptor descriptor;
  uint32_t fd_count = 0;
};

/// Parses the bytes of one message that arrived with `fds_received` fds. `Protocol` for a
/// wrong magic, version, type or fd count; `Corrupt` for a bad descriptor. (Public so that it
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

  /// Sends `tensor` (Shm or DmaBuf) as descriptor + fds; the fds are duplicated by the kernel,
  /// the tensor stays the caller's. `InvalidArgument` for Mem (allocate Shm instead),
  /// `NotImplemented` for kinds without fds, `Unavailable` when the peer has gone, `Io`.
  Result<void> send(const Tensor& tensor);
  /// Sends `frame`: its payload as a tensor (`MemoryDomain::to_tensor`, no copy), with its
  /// timing and sequence. Metadata stays in this process. Errors as `send(Tensor)` and
  /// `to_tensor`.
  Result<void> send(const Frame& frame);

  /// Waits for the next tensor, up to `timeout`: forever when empty; not at all (only what is
  /// queued) for 0 or less; any longer timeout, up to `milliseconds::max()`, is waited out in
  /// full. `Busy` on timeout; `Unavailable` when the peer closed (or shut down its end);
  /// `Protocol` / `Corrupt` for a bad message, an empty (0-byte) one included, after which the
  /// channel keeps working; `NotImplemented` for a layout this build cannot read as described
  /// (see `Descriptor::layout`); `InvalidArgument` / `OutOfRange` for an fd of the wrong type
  /// or size. On every error all fds that arrived are closed, and the message is consumed.
  Result<Tensor> receive(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  /// As `receive`, for a frame: the tensor becomes the payload (`MemoryDomain::from_tensor`),
  /// with the timing and sequence that were sent. `Protocol` when a bare tensor arrives.
  Result<Frame> receive_frame(std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  /// The socket, still owned by the channel (to pass to a child, or to poll on).
  int fd() const noexcept { return socket_.get(); }
  /// Bytes this end has written to / read from the socket (messages only: fds are not bytes).
  uint64_t bytes_sent() const noexcept { return bytes_sent_; }
  uint64_t bytes_received() const noexcept { return bytes_received_; }

 private:
  explicit Channel(UniqueFd socket) : socket_(std::move(socket)) {}
  Result<void> send_tensor(const Tensor& tensor, const std::optional<Descriptor::FrameFields>& frame);
  Result<std::pair<Descriptor, Tensor>> receive_message(std::optional<std::chrono::milliseconds> timeout);
  UniqueFd socket_;
  uint64_t bytes_sent_ = 0;
  uint64_t bytes_received_ = 0;
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
