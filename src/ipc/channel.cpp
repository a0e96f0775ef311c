#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <memhal/channel.hpp>

#include "core/deadline.hpp"
#include "core/strings.hpp"
#include "ipc/wire.hpp"

namespace memhal::ipc {
namespace {

constexpr uint32_t kMagic = 0x4843484d;  // "MHCH" in wire order
constexpr uint16_t kVersion = 1;
constexpr uint16_t kTypeTensor = 1;

// Waits until `fd` is readable or its peer hung up, and returns poll's events for it; Busy
// when `timeout` passes first (at once for 0 or less). poll(2) takes an int of milliseconds,
// so a longer timeout is waited out in several polls against one saturated deadline, and an
// interrupted poll resumes with the time that is left.
Result<short> wait_readable(int fd, std::optional<std::chrono::milliseconds> timeout, const char* what) {
  const auto deadline = timeout ? detail::deadline_after(*timeout) : detail::Clock::time_point::max();
  for (;;) {
    pollfd entry{fd, POLLIN | POLLRDHUP, 0};
    const int ready = ::poll(&entry, 1, detail::poll_timeout_ms(deadline));
    if (ready > 0) return entry.revents;
    if (ready < 0 && errno != EINTR) return detail::fail_errno(ErrorCode::Io, errno, what, ": poll");
    if (ready == 0 && detail::Clock::now() >= deadline) {
      return detail::fail(ErrorCode::Busy, what, " timed out after ", timeout->count(), " ms");
    }
  }
}

Result<sockaddr_un> socket_address(const std::string& path) {
  sockaddr_un address{};
  if (path.empty() || path.size() >= sizeof address.sun_path) {
    return detail::fail(ErrorCode::InvalidArgument, "socket path '", path, "' is empty or longer than ",
                        sizeof address.sun_path - 1, " bytes");
  }
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

}  // namespace

Result<ChannelMessage> parse_channel_message(std::span<const std::byte> bytes, std::size_t fds_received) {
  detail::WireReader in(bytes);
  uint32_t magic = 0, fd_count = 0;
  uint16_t version = 0, type = 0;
  if (!in.get(magic) || !in.get(version) || !in.get(type) || !in.get(fd_count)) {
    return detail::fail(ErrorCode::Protocol, "channel message of ", bytes.size(), " bytes is shorter than its header");
  }
  if (magic != kMagic) return detail::fail(ErrorCode::Protocol, "channel message has magic ", magic, ", not MHCH");
  if (version != kVersion) {
    return detail::fail(ErrorCode::Protocol, "channel message version ", version, "; this build speaks ", kVersion);
  }
  if (type != kTypeTensor) return detail::fail(ErrorCode::Protocol, "channel message type ", type, " is unknown");
  if (fd_count != fds_received || fd_count == 0 || fd_count > kMaxPlanes) {
    return detail::fail(ErrorCode::Protocol, "channel message announces ", fd_count, " fds, ", fds_received,
                        " arrived");
  }
  std::span<const std::byte> encoded;
  in.get_span(in.remaining(), encoded);
  MEMHAL_ASSIGN_OR_RETURN(Descriptor descriptor, Descriptor::decode(encoded));
  if (descriptor.buffer_sizes.size() != fd_count) {
    return detail::fail(ErrorCode::Protocol, "descriptor lists ", descriptor.buffer_sizes.size(), " buffers, ",
                        fd_count, " fds arrived");
  }
  return ChannelMessage{std::move(descriptor), fd_count};
}

Result<std::pair<Channel, Channel>> Channel::pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return detail::fail_errno(ErrorCode::Io, errno, "socketpair for a channel");
  }
  return std::pair<Channel, Channel>(Channel(UniqueFd(fds[0])), Channel(UniqueFd(fds[1])));
}

Result<Channel> Channel::adopt(UniqueFd socket) {
  int type = 0;
  socklen_t length = sizeof type;
  if (::getsockopt(socket.get(), SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_SEQPACKET) {
    return detail::fail(ErrorCode::InvalidArgument, "fd ", socket.get(), " is not a SOCK_SEQPACKET socket");
  }
  return Channel(std::move(socket));
}

Result<Channel> Channel::connect(const std::string& path) {
  MEMHAL_ASSIGN_OR_RETURN(const sockaddr_un address, socket_address(path));
  UniqueFd socket(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!socket.valid()) return detail::fail_errno(ErrorCode::Io, errno, "socket for ", path);
  if (::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const ErrorCode code =
        (errno == ENOENT || errno == ECONNREFUSED) ? ErrorCode::Unavailable : detail::code_for_errno(errno);
    return detail::fail_errno(code, errno, "connect to ", path);
  }
  return Channel(std::move(socket));
}

Result<void> Channel::send(const Tensor& tensor) {
  return send_tensor(tensor, std::nullopt);
}

Result<void> Channel::send(const Frame& frame) {
  MEMHAL_ASSIGN_OR_RETURN(Tensor tensor, frame.payload.to_tensor());
  return send_tensor(tensor, Descriptor::FrameFields{frame.timing, frame.sequence});
}

Result<void> Channel::send_tensor(const Tensor& tensor, const std::optional<Descriptor::FrameFields>& frame) {
  const MemoryKind kind = tensor.memory();
  if (kind == MemoryKind::Mem) {
    return detail::fail(ErrorCode::InvalidArgument, "channel send of mem tensor '", tensor.name(),
                        "': heap memory cannot be shared without a copy; allocate it as shm "
                        "(Tensor::create(shape, dtype, MemoryKind::Shm) or a TensorPool of shm)");
  }
  if (kind != MemoryKind::Shm && kind != MemoryKind::DmaBuf) {
    return detail::fail(ErrorCode::NotImplemented, "channel send of a ", to_string(kind),
                        " tensor: only shm and dmabuf memory has fds to pass");
  }
  MEMHAL_ASSIGN_OR_RETURN(Descriptor descriptor, Descriptor::from_tensor(tensor));
  descriptor.frame = frame;
  MEMHAL_ASSIGN_OR_RETURN(std::vector<std::byte> encoded, descriptor.encode());
  const uint32_t fd_count = tensor.layout().buffer_count();
  detail::WireWriter message;
  message.put(kMagic);
  message.put(kVersion);
  message.put(kTypeTensor);
  message.put(fd_count);
  message.put_bytes(encoded);
  const std::vector<std::byte> bytes = message.take();

  std::array<int, kMaxPlanes> fds{};
  for (uint32_t i = 0; i < fd_count; ++i) fds[i] = tensor.fd(i);
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kMaxPlanes)> control{};
  iovec io{const_cast<std::byte*>(bytes.data()), bytes.size()};
  msghdr header{};
  header.msg_iov = &io;
  header.msg_iovlen = 1;
  header.msg_control = control.data();
  header.msg_controllen = CMSG_SPACE(sizeof(int) * fd_count);
  cmsghdr* rights = CMSG_FIRSTHDR(&header);
  rights->cmsg_level = SOL_SOCKET;
  rights->cmsg_type = SCM_RIGHTS;
  rights->cmsg_len = CMSG_LEN(sizeof(int) * fd_count);
  std::memcpy(CMSG_DATA(rights), fds.data(), sizeof(int) * fd_count);
  for (;;) {
    const ssize_t sent = ::sendmsg(socket_.get(), &header, MSG_NOSIGNAL);
    if (sent >= 0) break;
    if (errno == EINTR) continue;
    const ErrorCode code = (errno == EPIPE || errno == ECONNRESET) ? ErrorCode::Unavailable : ErrorCode::Io;
    return detail::fail_errno(code, errno, "channel send of tensor '", tensor.name(), "'");
  }
  bytes_sent_ += bytes.size();
  return {};
}

Result<Tensor> Channel::receive(std::optional<std::chrono::milliseconds> timeout) {
  MEMHAL_ASSIGN_OR_RETURN(auto message, receive_message(timeout));
  return std::move(message.second);
}

Result<Frame> Channel::receive_frame(std::optional<std::chrono::milliseconds> timeout) {
  MEMHAL_ASSIGN_OR_RETURN(auto message, receive_message(timeout));
  if (!message.first.frame) return detail::fail(ErrorCode::Protocol, "channel received a bare tensor, not a frame");
  MEMHAL_ASSIGN_OR_RETURN(MemoryDomain payload, MemoryDomain::from_tensor(message.second));
  Frame frame{std::move(payload), message.first.frame->timing, message.first.frame->sequence, {}};
  return frame;
}

Result<std::pair<Descriptor, Tensor>> Channel::receive_message(std::optional<std::chrono::milliseconds> timeout) {
  MEMHAL_ASSIGN_OR_RETURN(const short events, wait_readable(socket_.get(), timeout, "channel receive"));
  std::array<std::byte, kMaxChannelMessage> buffer{};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kMaxPlanes)> control{};
  iovec io{buffer.data(), buffer.size()};
  msghdr header{};
  header.msg_iov = &io;
  header.msg_iovlen = 1;
  header.msg_control = control.data();
  header.msg_controllen = control.size();
  ssize_t received = -1;
  do {
    received = ::recvmsg(socket_.get(), &header, MSG_CMSG_CLOEXEC);
  } while (received < 0 && errno == EINTR);
  if (received < 0) {
    // A peer that closed with messages of ours unread leaves ECONNRESET: it is gone all the same.
    const ErrorCode code = errno == ECONNRESET ? ErrorCode::Unavailable : ErrorCode::Io;
    return detail::fail_errno(code, errno, "channel receive");
  }
  // Own every fd that arrived before anything else can fail, so none leaks.
  std::array<UniqueFd, kMaxPlanes> owned{};
  std::size_t fd_count = 0;
  bool too_many = (header.msg_flags & MSG_CTRUNC) != 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (fd_count < owned.size()) {
        owned[fd_count++] = UniqueFd(fd);
      } else {
        ::close(fd);
        too_many = true;
      }
    }
  }
  if (received == 0) {
    // A SOCK_SEQPACKET socket reads 0 bytes both at its end and for an empty message a peer
    // sent. The poll above tells them apart: unless the peer had hung up, a message was queued
    // (only this receiver dequeues). Fds only come with a message, and bytes still queued
    // behind it mean it was a message too (the peer sent more, then hung up).
    const bool hung_up = (events & (POLLRDHUP | POLLHUP)) != 0;
    int queued = 0;
    if (hung_up && fd_count == 0 && !too_many && (::ioctl(socket_.get(), SIOCINQ, &queued) != 0 || queued == 0)) {
      return detail::fail(ErrorCode::Unavailable, "channel receive: the peer closed the channel");
    }
    return detail::fail(ErrorCode::Protocol, "channel receive: an empty message (0 bytes, ", fd_count,
                        " fds) is not a memhal message; the channel stays open");
  }
  bytes_received_ += static_cast<uint64_t>(received);
  if (too_many) return detail::fail(ErrorCode::Protocol, "channel message carried more than ", kMaxPlanes, " fds");
  if (header.msg_flags & MSG_TRUNC) {
    return detail::fail(ErrorCode::Protocol, "channel message longer than ", kMaxChannelMessage, " bytes");
  }
  MEMHAL_ASSIGN_OR_RETURN(ChannelMessage message, parse_channel_message(std::span(buffer.data(), received), fd_count));
  const auto kind = message.descriptor.memory();
  if (kind != MemoryKind::Shm && kind != MemoryKind::DmaBuf) {
    return detail::fail(ErrorCode::Protocol, "channel message names memory ", message.descriptor.memory_description(),
                        "; only shm and dmabuf travel");
  }
  MEMHAL_ASSIGN_OR_RETURN(Layout layout, message.descriptor.layout());
  std::array<int, kMaxPlanes> raw{};
  for (std::size_t i = 0; i < fd_count; ++i) {
    raw[i] = owned[i].get();
  }
  // from_planes checks type (memfd vs DMA-BUF), size against the layout and a memfd's seal
  // against shrinking (a peer could otherwise truncate it under our mapping), and duplicates;
  // our copies close when `owned` goes out of scope.
  MEMHAL_ASSIGN_OR_RETURN(Tensor tensor, Tensor::from_planes(std::span<const int>(raw.data(), fd_count), layout, kind));
  return std::pair<Descriptor, Tensor>(std::move(message.descriptor), std::move(tensor));
}

Result<Listener> Listener::bind(const std::string& path) {
  MEMHAL_ASSIGN_OR_RETURN(const sockaddr_un address, socket_address(path));
  UniqueFd socket(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!socket.valid()) return detail::fail_errno(ErrorCode::Io, errno, "socket for ", path);
  if (::bind(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return detail::fail_errno(detail::code_for_errno(errno), errno, "bind of ", path);
  }
  if (::listen(socket.get(), 8) != 0) return detail::fail_errno(ErrorCode::Io, errno, "listen on ", path);
  return Listener(std::move(socket), path);
}

Result<Channel> Listener::accept(std::optional<std::chrono::milliseconds> timeout) {
  MEMHAL_TRY(wait_readable(socket_.get(), timeout, "accept"));  // a listener never hangs up
  UniqueFd peer(::accept4(socket_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!peer.valid()) return detail::fail_errno(ErrorCode::Io, errno, "accept on ", path_);
  return Channel::adopt(std::move(peer));
}

Listener::~Listener() {
  if (socket_.valid()) ::unlink(path_.c_str());
}

}  // namespace memhal::ipc
