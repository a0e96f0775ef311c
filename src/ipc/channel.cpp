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
#include <mutex>
#include <thread>
#include <unordered_map>

#include "core/deadline.hpp"
#include "core/strings.hpp"
#include "ipc/frame_wire.hpp"
#include "storage/import.hpp"
#include "tensor/tensor_access.hpp"

namespace memhal::ipc {
namespace {

constexpr uint32_t kMagic = 0x4843484d;         // "MHCH" in wire order
constexpr uint32_t kReleaseMagic = 0x4c52484d;  // "MHRL"
constexpr uint32_t kClosedMagic = 0x4352484d;   // "MHRC"
constexpr uint16_t kVersion = 2;
constexpr uint8_t kShareView = 1;
constexpr uint8_t kShareFrame = 2;
constexpr std::size_t kHeaderBytes = 12;
constexpr std::size_t kMaxRetired = (kMaxChannelMessage - kHeaderBytes - 4) / 8;
using Type = ChannelMessage::Type;

// Waits until `fd` is readable or its peer hung up, and returns poll's events for it; Busy
// when `deadline` (from `timeout`) passes first (at once for 0 or less). poll(2) takes an int
// of milliseconds, so a longer timeout is waited out in several polls against one saturated
// deadline, and an interrupted poll resumes with the time that is left.
Result<short> wait_readable(int fd, detail::Clock::time_point deadline,
                            std::optional<std::chrono::milliseconds> timeout, const char* what) {
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

detail::Clock::time_point deadline_of(std::optional<std::chrono::milliseconds> timeout) {
  return timeout ? detail::deadline_after(*timeout) : detail::Clock::time_point::max();
}

void put_header(detail::WireWriter& out, Type type, uint32_t fd_count) {
  out.put(kMagic);
  out.put(kVersion);
  out.put(static_cast<uint16_t>(type));
  out.put(fd_count);
}

Result<void> send_all(int socket, std::span<const std::byte> bytes, std::span<const int> fds, int flags,
                      const std::string& what) {
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kMaxPlanes)> control{};
  iovec io{const_cast<std::byte*>(bytes.data()), bytes.size()};
  msghdr header{};
  header.msg_iov = &io;
  header.msg_iovlen = 1;
  if (!fds.empty()) {
    header.msg_control = control.data();
    header.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* rights = CMSG_FIRSTHDR(&header);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(rights), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    if (::sendmsg(socket, &header, MSG_NOSIGNAL | flags) >= 0) return {};
    if (errno == EINTR) continue;
    const ErrorCode code = (errno == EPIPE || errno == ECONNRESET) ? ErrorCode::Unavailable : ErrorCode::Io;
    return detail::fail_errno(code, errno, what);
  }
}

// What a receiver imported of one registered buffer.
struct Registered {
  std::weak_ptr<const detail::Storage> origin;  // sender: tells when the buffer is gone
  int64_t extent = 0;                           // sender: bytes the receiver mapped
};

// The shares a sending channel holds until the receiver releases them; shared with the reader
// thread, which outlives the channel while shares are out.
struct Holds {
  UniqueFd back;  // this end of the back channel
  std::mutex mutex;
  std::unordered_map<uint64_t, Tensor> held;  // by share token
  bool closing = false;                       // the channel is gone: end once nothing is held

  // The reader thread: takes releases until the receiver's end closes (then drops everything)
  // or, after the channel is gone, until nothing is held. Tensors are dropped unlocked.
  static void read_releases(std::shared_ptr<Holds> self) {
    std::array<std::byte, 8 + 8 * 512> buffer{};
    for (;;) {
      const ssize_t n = ::recv(self->back.get(), buffer.data(), buffer.size(), 0);
      if (n < 0 && errno == EINTR) continue;
      std::vector<Tensor> dropped;
      std::unique_lock lock(self->mutex);
      detail::WireReader in(std::span(buffer.data(), n > 0 ? static_cast<std::size_t>(n) : 0));
      uint32_t magic = 0, count = 0;
      uint64_t token = 0;
      const bool valid = in.get(magic) && in.get(count) && in.remaining() == count * 8u &&
                         (magic == kReleaseMagic || (magic == kClosedMagic && count == 1));
      // A receiver gone, or one that speaks garbage, releases everything it held; one that
      // closed its channel, every share it never read (tokens after the last it read).
      if (!valid || magic == kClosedMagic) {
        const uint64_t last_read = valid && in.get(token) ? token : 0;
        std::erase_if(self->held, [&](auto& entry) {
          if (entry.first <= last_read) return false;
          dropped.push_back(std::move(entry.second));
          return true;
        });
        if (!valid) {
          lock.unlock();
          return;
        }
      }
      for (uint32_t i = 0; magic == kReleaseMagic && i < count; ++i) {
        in.get(token);
        if (auto it = self->held.find(token); it != self->held.end()) {
          dropped.push_back(std::move(it->second));
          self->held.erase(it);
        }
      }
      if (self->closing && self->held.empty()) return;
    }
  }
};

// The receiver's end of a back channel: every received share tells the sender when it drops.
struct Releaser {
  UniqueFd back;
  void release(uint64_t token, uint32_t magic = kReleaseMagic) const noexcept {
    detail::WireWriter out;
    out.put(magic);
    out.put(uint32_t{1});
    out.put(token);
    const auto bytes = out.take();
    // Blocks at most while the sender's reader thread catches up; a sender that is gone is
    // nothing to tell.
    (void)send_all(back.get(), bytes, {}, 0, "channel release");
  }
};

// One received share: the tensor's buffers alias it, so it drops with the last of them.
struct Share {
  std::shared_ptr<const Releaser> releaser;
  uint64_t token = 0;
  std::array<std::shared_ptr<detail::Storage>, kMaxPlanes> imports;
  ~Share() { releaser->release(token); }
};

}  // namespace
}  // namespace memhal::ipc

namespace memhal::detail {

struct ChannelState {
  // Sending.
  std::shared_ptr<ipc::Holds> holds;
  std::thread reader;
  std::unordered_map<uint64_t, ipc::Registered> registered;  // by buffer id
  std::unordered_map<uint64_t, Layout> views;                // view last sent, by buffer 0's id
  uint64_t next_token = 0;
  // Receiving.
  std::shared_ptr<const ipc::Releaser> releaser;
  std::unordered_map<uint64_t, std::shared_ptr<Storage>> imports;  // by the sender's buffer id
  std::unordered_map<uint64_t, Layout> received_views;             // by buffer 0's id
  std::vector<std::byte> buffer;                                   // one message
  uint64_t last_read = 0;                                          // token of the last share read

  void drop_imports() {
    imports.clear();
    received_views.clear();
  }

  ~ChannelState() {
    if (releaser) releaser->release(last_read, ipc::kClosedMagic);  // the rest was never read
    if (!holds) return;
    bool idle = false;
    {
      std::lock_guard lock(holds->mutex);
      holds->closing = true;
      idle = holds->held.empty();
    }
    if (idle) {
      ::shutdown(holds->back.get(), SHUT_RDWR);  // wakes the reader thread, which ends
      reader.join();
    } else {
      reader.detach();  // it ends when the last share is released or the receiver goes
    }
  }
};

}  // namespace memhal::detail

namespace memhal::ipc {

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
  if (type < 1 || type > 4) return detail::fail(ErrorCode::Protocol, "channel message type ", type, " is unknown");
  ChannelMessage message;
  message.type = static_cast<Type>(type);
  message.fd_count = fd_count;
  if (fd_count != fds_received || fd_count > kMaxPlanes) {
    return detail::fail(ErrorCode::Protocol, "channel message announces ", fd_count, " fds, ", fds_received,
                        " arrived");
  }
  auto protocol = [&](auto... why) { return detail::fail(ErrorCode::Protocol, "channel message: ", why...); };
  std::span<const std::byte> encoded;
  switch (message.type) {
    case Type::Tensor: {
      in.get_span(in.remaining(), encoded);
      MEMHAL_ASSIGN_OR_RETURN(message.descriptor, Descriptor::decode(encoded));
      if (fd_count == 0 || message.descriptor->buffer_sizes.size() != fd_count) {
        return protocol("descriptor lists ", message.descriptor->buffer_sizes.size(), " buffers, ", fd_count,
                        " fds arrived");
      }
      message.frame = std::move(message.descriptor->frame);
      message.descriptor->frame.reset();
      return message;
    }
    case Type::BackChannel:
      if (fd_count != 1 || in.remaining() != 0) return protocol("a back channel is one fd and no bytes");
      return message;
    case Type::Retire: {
      uint32_t count = 0;
      if (fd_count != 0 || !in.get(count) || count > kMaxRetired || in.remaining() != count * 8u) {
        return protocol("a retire of ", count, " buffers in ", bytes.size(), " bytes with ", fd_count, " fds");
      }
      message.retired.resize(count);
      for (auto& id : message.retired) in.get(id);
      return message;
    }
    case Type::Share: break;
  }
  uint8_t flags = 0, count = 0;
  if (!in.get(message.token) || !in.get(flags) || !in.get(count)) return protocol("a share ends inside its header");
  if (message.token == 0 || (flags & ~(kShareView | kShareFrame)) != 0 || count == 0 || count > kMaxPlanes) {
    return protocol("a share with token ", message.token, ", flags ", int(flags), " and ", int(count), " buffers");
  }
  uint32_t attached = 0;
  message.buffers.resize(count);
  for (auto& buffer : message.buffers) {
    uint8_t with_fd = 0;
    if (!in.get(buffer.id) || !in.get(with_fd) || with_fd > 1 || buffer.id == 0) {
      return protocol("a share's buffer list is cut short or names buffer 0");
    }
    buffer.attached = with_fd == 1;
    for (const auto& other : message.buffers) {
      if (&other == &buffer) break;
      if (buffer.attached && other.id == buffer.id) return protocol("buffer ", buffer.id, " attached twice");
    }
    attached += buffer.attached;
  }
  if (attached != fd_count) return protocol("a share attaches ", attached, " buffers, ", fd_count, " fds arrived");
  if (flags & kShareView) {
    uint32_t length = 0;
    if (!in.get(length) || !in.get_span(length, encoded)) return protocol("a share ends inside its view");
    MEMHAL_ASSIGN_OR_RETURN(message.descriptor, Descriptor::decode(encoded));
    if (message.descriptor->buffer_sizes.size() != count || message.descriptor->frame) {
      return protocol("a share's view lists ", message.descriptor->buffer_sizes.size(), " buffers for ", int(count),
                      (message.descriptor->frame ? " and frame fields" : ""));
    }
  } else if (attached != 0) {
    return protocol("a share attaches a buffer without its view");
  }
  if (flags & kShareFrame) {
    MEMHAL_ASSIGN_OR_RETURN(message.frame, get_frame_fields(in, kDescriptorVersion, "a channel share"));
  }
  if (in.remaining() != 0) return protocol("a share has ", in.remaining(), " stray bytes");
  return message;
}

Channel::Channel(UniqueFd socket) : socket_(std::move(socket)), state_(std::make_unique<detail::ChannelState>()) {}
Channel::Channel(Channel&&) noexcept = default;
Channel& Channel::operator=(Channel&&) noexcept = default;
Channel::~Channel() = default;

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
  return send_tensor(tensor, Descriptor::FrameFields::of(frame));
}

Result<void> Channel::send_message(std::span<const std::byte> bytes, std::span<const int> fds,
                                   const std::string& what) {
  if (bytes.size() > kMaxChannelMessage) {
    return detail::fail(ErrorCode::InvalidArgument, "channel send of ", what, ": a message of ", bytes.size(),
                        " bytes (at most ", kMaxChannelMessage, "; metadata makes most of it)");
  }
  MEMHAL_TRY(send_all(socket_.get(), bytes, fds, 0, detail::cat("channel send of ", what)));
  bytes_sent_ += bytes.size();
  return {};
}

Result<void> Channel::send_tensor(const Tensor& tensor, const std::optional<Descriptor::FrameFields>& frame) {
  const MemoryKind kind = tensor.memory();
  if (kind == MemoryKind::Mem) {
    return detail::fail(ErrorCode::InvalidArgument, "channel send of mem tensor '", tensor.name(),
                        "': heap memory cannot be shared without a copy; allocate it as shm "
                        "(Tensor::create(shape, dtype, MemoryKind::Shm) or a TensorPool of shm), or copy it "
                        "there with materialize(MemoryKind::Shm)");
  }
  if (kind != MemoryKind::Shm && kind != MemoryKind::DmaBuf) {
    return detail::fail(ErrorCode::NotImplemented, "channel send of a ", to_string(kind),
                        " tensor: only shm and dmabuf memory has fds to pass");
  }
  if (!state_) return detail::fail(ErrorCode::InvalidArgument, "channel send on a moved-from channel");
  if (registry_) return send_share(tensor, frame);
  MEMHAL_ASSIGN_OR_RETURN(Descriptor descriptor, Descriptor::from_tensor(tensor));
  descriptor.frame = frame;
  MEMHAL_ASSIGN_OR_RETURN(std::vector<std::byte> encoded, descriptor.encode());
  const uint32_t fd_count = tensor.layout().buffer_count();
  detail::WireWriter message;
  put_header(message, Type::Tensor, fd_count);
  message.put_bytes(encoded);
  std::array<int, kMaxPlanes> fds{};
  for (uint32_t i = 0; i < fd_count; ++i) fds[i] = tensor.fd(i);
  return send_message(message.take(), std::span(fds.data(), fd_count), detail::cat("tensor '", tensor.name(), "'"));
}

Result<void> Channel::send_share(const Tensor& tensor, const std::optional<Descriptor::FrameFields>& frame) {
  detail::ChannelState& s = *state_;
  const std::string what = frame ? detail::cat("frame ", frame->sequence) : detail::cat("tensor '", tensor.name(), "'");
  if (!s.holds) {
    // The back channel for releases goes over first, and its reader starts with it.
    int ends[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
      return detail::fail_errno(ErrorCode::Io, errno, "socketpair for a channel's back channel");
    }
    UniqueFd ours(ends[0]), theirs(ends[1]);
    detail::WireWriter message;
    put_header(message, Type::BackChannel, 1);
    const int fd = theirs.get();
    MEMHAL_TRY(send_message(message.take(), std::span(&fd, 1), what));
    s.holds = std::make_shared<Holds>();
    s.holds->back = std::move(ours);
    s.reader = std::thread(&Holds::read_releases, s.holds);
  }
  // Buffers whose storage is gone are retired before anything else is sent.
  std::vector<uint64_t> retired;
  std::erase_if(s.registered, [&](const auto& entry) {
    if (!entry.second.origin.expired()) return false;
    retired.push_back(entry.first);
    s.views.erase(entry.first);
    return true;
  });
  for (std::size_t at = 0; at < retired.size(); at += kMaxRetired) {
    const auto batch = std::span(retired).subspan(at, std::min(kMaxRetired, retired.size() - at));
    detail::WireWriter message;
    put_header(message, Type::Retire, 0);
    message.put(static_cast<uint32_t>(batch.size()));
    for (uint64_t id : batch) message.put(id);
    MEMHAL_TRY(send_message(message.take(), {}, what));
  }

  const Layout& layout = tensor.layout();
  const uint32_t count = layout.buffer_count();
  const auto& buffers = detail::TensorAccess::buffers(tensor);
  std::array<uint64_t, kMaxPlanes> ids{};
  std::array<int64_t, kMaxPlanes> needed{};
  std::array<bool, kMaxPlanes> attached{};
  std::array<int, kMaxPlanes> fds{};
  uint32_t fd_count = 0;
  for (uint32_t i = 0; i < count; ++i) ids[i] = tensor.buffer_id(i);
  for (uint32_t i = 0; i < count; ++i) {
    // A buffer named twice is registered once, as far as the furthest of its planes reaches.
    for (uint32_t j = 0; j < count; ++j) {
      if (ids[j] == ids[i]) needed[i] = std::max(needed[i], layout.byte_extent(j).end);
    }
    bool first = true;
    for (uint32_t j = 0; j < i; ++j) first = first && ids[j] != ids[i];
    const auto known = s.registered.find(ids[i]);
    attached[i] = first && (known == s.registered.end() || known->second.extent < needed[i]);
    if (attached[i]) fds[fd_count++] = tensor.fd(i);
  }
  const auto last_view = s.views.find(ids[0]);
  const bool view = fd_count > 0 || last_view == s.views.end() || !(last_view->second == layout);

  const uint64_t token = ++s.next_token;
  detail::WireWriter message;
  put_header(message, Type::Share, fd_count);
  message.put(token);
  message.put(static_cast<uint8_t>((view ? kShareView : 0) | (frame ? kShareFrame : 0)));
  message.put(static_cast<uint8_t>(count));
  for (uint32_t i = 0; i < count; ++i) {
    message.put(ids[i]);
    message.put(static_cast<uint8_t>(attached[i]));
  }
  if (view) {
    MEMHAL_ASSIGN_OR_RETURN(const Descriptor descriptor, Descriptor::from_tensor(tensor));
    MEMHAL_ASSIGN_OR_RETURN(const std::vector<std::byte> encoded, descriptor.encode());
    message.put(static_cast<uint32_t>(encoded.size()));
    message.put_bytes(encoded);
  }
  if (frame) {
    MEMHAL_TRY(put_frame_fields(message, *frame));
  }
  // Held before it is sent, so that a release can never come first.
  {
    std::lock_guard lock(s.holds->mutex);
    s.holds->held.emplace(token, tensor);
  }
  if (auto sent = send_message(message.take(), std::span(fds.data(), fd_count), what); !sent) {
    std::unique_lock lock(s.holds->mutex);
    auto node = s.holds->held.extract(token);
    lock.unlock();
    return sent;
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (attached[i]) s.registered[ids[i]] = {buffers[i]->weak_from_this(), needed[i]};
  }
  if (view) s.views.insert_or_assign(ids[0], layout);
  return {};
}

Result<Tensor> Channel::receive(std::optional<std::chrono::milliseconds> timeout) {
  MEMHAL_ASSIGN_OR_RETURN(auto message, receive_message(timeout));
  return std::move(message.first);
}

Result<Frame> Channel::receive_frame(std::optional<std::chrono::milliseconds> timeout) {
  MEMHAL_ASSIGN_OR_RETURN(auto message, receive_message(timeout));
  if (!message.second) return detail::fail(ErrorCode::Protocol, "channel received a bare tensor, not a frame");
  MEMHAL_ASSIGN_OR_RETURN(MemoryDomain payload, MemoryDomain::from_tensor(message.first));
  return Frame{std::move(payload), message.second->timing, message.second->sequence,
               std::move(message.second->metadata)};
}

Result<std::pair<Tensor, std::optional<Descriptor::FrameFields>>> Channel::receive_message(
    std::optional<std::chrono::milliseconds> timeout) {
  if (!state_) return detail::fail(ErrorCode::InvalidArgument, "channel receive on a moved-from channel");
  detail::ChannelState& s = *state_;
  if (s.buffer.empty()) s.buffer.resize(kMaxChannelMessage);
  const auto deadline = deadline_of(timeout);
  for (;;) {
    MEMHAL_ASSIGN_OR_RETURN(const short events, wait_readable(socket_.get(), deadline, timeout, "channel receive"));
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kMaxPlanes)> control{};
    iovec io{s.buffer.data(), s.buffer.size()};
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
      if (code == ErrorCode::Unavailable) s.drop_imports();
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
        s.drop_imports();
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
    MEMHAL_ASSIGN_OR_RETURN(ChannelMessage message,
                            parse_channel_message(std::span(s.buffer.data(), received), fd_count));
    if (message.type == Type::BackChannel) {
      int type = 0, domain = 0;
      socklen_t length = sizeof type;
      if (s.releaser || ::getsockopt(owned[0].get(), SOL_SOCKET, SO_TYPE, &type, &length) != 0 ||
          ::getsockopt(owned[0].get(), SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0 || type != SOCK_SEQPACKET ||
          domain != AF_UNIX) {
        return detail::fail(ErrorCode::Protocol, "channel receive: a back channel that is ",
                            s.releaser ? "a second one" : "not a SOCK_SEQPACKET Unix socket");
      }
      auto releaser = std::make_shared<Releaser>();
      releaser->back = std::move(owned[0]);
      s.releaser = std::move(releaser);
      continue;
    }
    if (message.type == Type::Retire) {
      for (uint64_t id : message.retired) {
        s.imports.erase(id);
        s.received_views.erase(id);
      }
      continue;
    }
    // A share is released whatever fails from here on, so that the sender does not hold it.
    std::shared_ptr<Share> share;
    if (message.type == Type::Share) {
      if (!s.releaser) return detail::fail(ErrorCode::Protocol, "channel receive: a share before its back channel");
      share = std::make_shared<Share>();
      share->releaser = s.releaser;
      share->token = message.token;
      s.last_read = message.token;
    }
    const Descriptor* descriptor = message.descriptor ? &*message.descriptor : nullptr;
    if (descriptor) {
      const auto kind = descriptor->memory();
      if (kind != MemoryKind::Shm && kind != MemoryKind::DmaBuf) {
        return detail::fail(ErrorCode::Protocol, "channel message names memory ", descriptor->memory_description(),
                            "; only shm and dmabuf travel");
      }
    }
    std::optional<Layout> sent_layout;
    if (descriptor) {
      MEMHAL_ASSIGN_OR_RETURN(sent_layout, descriptor->layout());
    }
    if (message.type == Type::Tensor) {
      std::array<int, kMaxPlanes> raw{};
      for (std::size_t i = 0; i < fd_count; ++i) raw[i] = owned[i].get();
      // from_planes checks type (memfd vs DMA-BUF), size against the layout and a memfd's seal
      // against shrinking (a peer could otherwise truncate it under our mapping), and
      // duplicates; our copies close when `owned` goes out of scope.
      MEMHAL_ASSIGN_OR_RETURN(Tensor tensor, Tensor::from_planes(std::span<const int>(raw.data(), fd_count),
                                                                 *sent_layout, descriptor->memory()));
      return std::pair(std::move(tensor), std::move(message.frame));
    }
    // A share: import what is attached (checked as from_planes checks), then build the tensor
    // from the imports alone.
    const uint64_t first = message.buffers[0].id;
    const auto stored = s.received_views.find(first);
    if (!sent_layout && stored == s.received_views.end()) {
      return detail::fail(ErrorCode::Protocol, "channel receive: a share of buffer ", first,
                          " without a view, and none was registered");
    }
    const Layout& layout = sent_layout ? *sent_layout : stored->second;
    const std::size_t count = message.buffers.size();
    if (layout.buffer_count() != count) {
      return detail::fail(ErrorCode::Protocol, "channel receive: a share of ", count, " buffers for a layout of ",
                          layout.buffer_count());
    }
    // The kind the view names, or without a view the kind buffer 0 was registered as.
    MemoryKind kind = MemoryKind::Shm;
    if (descriptor) {
      kind = *descriptor->memory();
    } else if (const auto it = s.imports.find(first); it != s.imports.end()) {
      kind = it->second->kind();
    }
    std::size_t next_fd = 0;
    detail::TensorAccess::Buffers buffers{};
    for (std::size_t i = 0; i < count; ++i) {
      const auto& buffer = message.buffers[i];
      if (buffer.attached) {
        if (s.imports.size() >= kMaxRegisteredBuffers && !s.imports.contains(buffer.id)) {
          return detail::fail(ErrorCode::Protocol, "channel receive: the sender registers a buffer beyond ",
                              kMaxRegisteredBuffers, " live ones");
        }
        int64_t needed = 0;
        for (std::size_t j = 0; j < count; ++j) {
          if (message.buffers[j].id == buffer.id) {
            needed = std::max(needed, layout.byte_extent(static_cast<uint32_t>(j)).end);
          }
        }
        MEMHAL_ASSIGN_OR_RETURN(auto imported,
                                detail::import_fd(owned[next_fd++].get(), kind, static_cast<std::size_t>(needed),
                                                  detail::cat("channel import of buffer ", buffer.id)));
        s.imports.insert_or_assign(buffer.id, std::move(imported));
      }
      const auto known = s.imports.find(buffer.id);
      if (known == s.imports.end()) {
        return detail::fail(ErrorCode::Protocol, "channel receive: buffer ", buffer.id,
                            " was never registered, or was retired");
      }
      if (known->second->kind() != kind) {
        return detail::fail(ErrorCode::Protocol, "channel receive: buffer ", buffer.id, " was registered as ",
                            to_string(known->second->kind()), ", the share names ", to_string(kind));
      }
      share->imports[i] = known->second;
      buffers[i] = std::shared_ptr<detail::Storage>(share, share->imports[i].get());
    }
    MEMHAL_TRY(detail::check_layout_fits(layout, buffers));
    if (sent_layout) s.received_views.insert_or_assign(first, *sent_layout);
    Tensor tensor = detail::TensorAccess::make(layout, std::move(buffers));
    return std::pair(std::move(tensor), std::move(message.frame));
  }
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
  MEMHAL_TRY(wait_readable(socket_.get(), deadline_of(timeout), timeout, "accept"));  // a listener never hangs up
  UniqueFd peer(::accept4(socket_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!peer.valid()) return detail::fail_errno(ErrorCode::Io, errno, "accept on ", path_);
  return Channel::adopt(std::move(peer));
}

Listener::~Listener() {
  if (socket_.valid()) ::unlink(path_.c_str());
}

}  // namespace memhal::ipc
