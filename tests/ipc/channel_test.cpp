#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memhal/channel.hpp>
#include <numeric>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "test_support.hpp"

extern char** environ;

namespace memhal::ipc {
namespace {

int open_fd_count() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (dirent* entry = ::readdir(dir)) count += entry->d_name[0] != '.';
  ::closedir(dir);
  return count - 1;  // the directory's own fd
}

// Starts channel_peer with `socket` as its fd 3.
pid_t spawn_peer(int socket, const char* mode) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, socket, 3);  // dup2 clears close-on-exec
  const char* argv[] = {MEMHAL_CHANNEL_PEER, mode, nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, MEMHAL_CHANNEL_PEER, &actions, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void send_raw(int socket, std::span<const std::byte> bytes, std::span<const int> fds) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)] = {};
  iovec io{const_cast<std::byte*>(bytes.data()), bytes.size()};
  msghdr header{};
  header.msg_iov = &io;
  header.msg_iovlen = 1;
  if (!fds.empty()) {
    header.msg_control = control;
    header.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* rights = CMSG_FIRSTHDR(&header);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(rights), fds.data(), sizeof(int) * fds.size());
  }
  ASSERT_GE(::sendmsg(socket, &header, 0), 0);
}

// A valid message for a {n} u8 shm tensor, for tests that then damage it.
std::vector<std::byte> message_for(int64_t n, uint32_t fds = 1) {
  Descriptor d;
  d.memory_code = code(MemoryKind::Shm);
  d.memory_name = "shm";
  d.dtype_code = code(DType::U8);
  d.shape = {n};
  d.strides = {1};
  d.buffer_sizes.assign(fds, static_cast<uint64_t>(n));
  const auto encoded = *d.encode();
  const uint8_t header[] = {'M', 'H', 'C', 'H', 2, 0, 1, 0, static_cast<uint8_t>(fds), 0, 0, 0};
  std::vector<std::byte> out;
  out.reserve(sizeof header + encoded.size());
  for (uint8_t b : header) out.push_back(std::byte{b});
  for (std::byte b : encoded) out.push_back(b);
  return out;
}

int make_memfd(std::size_t size, unsigned seals) {
  const int fd = ::memfd_create("test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
  if (seals) {
    EXPECT_EQ(::fcntl(fd, F_ADD_SEALS, seals), 0);
  }
  return fd;
}

TEST(Channel, AnotherProcessSeesTheSameMemoryAndNoPayloadCrossesTheSocket) {
  constexpr int64_t kBytes = 16 << 20;
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  const pid_t peer = spawn_peer(ends.second.fd(), "receive-and-write");
  ASSERT_GT(peer, 0);
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({kBytes}, DType::U8, MemoryKind::Shm, "payload"));
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Write));
    auto bytes = *map.span<uint8_t>();
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i % 251);
  }
  ASSERT_OK(ends.first.send(tensor));
  ASSERT_EQ(wait_exit(peer), 0) << "the peer did not see pattern A or failed";
  ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Read));
  auto bytes = *map.span<const uint8_t>();
  for (std::size_t i = 0; i < bytes.size(); i += 4099) ASSERT_EQ(bytes[i], static_cast<uint8_t>(255 - i % 251)) << i;
  EXPECT_LT(ends.first.bytes_sent(), 512u) << "a message, not the " << kBytes << " payload bytes";
}

TEST(Channel, ReceivedTensorMapsTheSenderMemory) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::image(32, 16, PixelFormat::Nv12, MemoryKind::Shm));
  ASSERT_OK(ends.first.send(image));
  ASSERT_OK_AND_ASSIGN(Tensor received, ends.second.receive(std::chrono::milliseconds(1000)));
  EXPECT_EQ(received.memory(), MemoryKind::Shm);
  EXPECT_TRUE(received.layout() == image.layout());
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, received.map(CpuAccess::Write));
    map.plane(1)[5] = std::byte{77};
  }
  ASSERT_OK_AND_ASSIGN(TensorMap map, image.map(CpuAccess::Read));
  EXPECT_EQ(map.plane(1)[5], std::byte{77});
}

TEST(Channel, MemTensorsAreRefusedWithAdviceToUseShm) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({16}, DType::U8, MemoryKind::Mem));
  auto sent = ends.first.send(tensor);
  EXPECT_ERROR(ErrorCode::InvalidArgument, sent);
  EXPECT_NE(sent.error().message().find("allocate it as shm"), std::string::npos) << sent.error().message();
}

TEST(Channel, TimeoutIsBusyAndAClosedPeerIsUnavailable) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  EXPECT_ERROR(ErrorCode::Busy, ends.second.receive(std::chrono::milliseconds(10)));
  { auto gone = std::move(ends.first); }
  EXPECT_ERROR(ErrorCode::Unavailable, ends.second.receive(std::chrono::milliseconds(1000)));
}

// Two Channels over a raw SOCK_SEQPACKET socketpair, so that a test can also write to the
// socket directly.
std::pair<Channel, Channel> raw_pair() {
  int fds[2] = {-1, -1};
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
  return {Channel::adopt(UniqueFd(fds[0])).value(), Channel::adopt(UniqueFd(fds[1])).value()};
}

TEST(Channel, AnEmptyMessageIsAProtocolErrorAndTheChannelKeepsWorking) {
  auto [sender, receiver] = raw_pair();
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({64}, DType::U8, MemoryKind::Shm, "after"));
  ASSERT_EQ(::send(sender.fd(), "", 0, 0), 0);
  ASSERT_OK(sender.send(tensor));
  const auto empty = receiver.receive(std::chrono::milliseconds(1000));
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().code(), ErrorCode::Protocol) << empty.error().to_string();
  EXPECT_NE(empty.error().message().find("empty message"), std::string::npos) << empty.error().message();
  ASSERT_OK_AND_ASSIGN(Tensor received, receiver.receive(std::chrono::milliseconds(1000)));
  EXPECT_EQ(received.name(), "after");
  // Twice more, the second time with the peer gone behind the messages: both are still read,
  // and only then is the channel closed.
  ASSERT_EQ(::send(sender.fd(), "", 0, 0), 0);
  ASSERT_OK(sender.send(tensor));
  { auto gone = std::move(sender); }
  EXPECT_ERROR(ErrorCode::Protocol, receiver.receive(std::chrono::milliseconds(1000)));
  EXPECT_OK(receiver.receive(std::chrono::milliseconds(1000)));
  EXPECT_ERROR(ErrorCode::Unavailable, receiver.receive(std::chrono::milliseconds(1000)));
  EXPECT_ERROR(ErrorCode::Unavailable, receiver.receive(std::chrono::milliseconds(1000)));
}

TEST(Channel, APeerThatShutsDownItsEndReadsAsClosed) {
  auto [sender, receiver] = raw_pair();
  ASSERT_EQ(::shutdown(sender.fd(), SHUT_WR), 0);
  EXPECT_ERROR(ErrorCode::Unavailable, receiver.receive(std::chrono::milliseconds(1000)));
}

TEST(Channel, LongTimeoutsWaitForTheMessage) {
  // 2^32 ms wrapped to 0 (Busy at once) when cast to poll's int; the others are waits of
  // ~49 days and ~292 million years.
  for (const auto timeout : {std::chrono::milliseconds(int64_t{1} << 32), std::chrono::milliseconds(INT64_C(1) << 31),
                             std::chrono::milliseconds::max()}) {
    ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
    ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({64}, DType::U8, MemoryKind::Shm));
    const auto start = std::chrono::steady_clock::now();
    std::thread sender([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      EXPECT_OK(ends.first.send(tensor));
    });
    auto received = ends.second.receive(timeout);
    sender.join();
    EXPECT_TRUE(received.has_value()) << timeout.count() << ": " << received.error().to_string();
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200)) << timeout.count();
  }
}

TEST(Channel, ATimeoutOfZeroOrLessDoesNotWait) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  for (const auto timeout :
       {std::chrono::milliseconds(0), std::chrono::milliseconds(-1), std::chrono::milliseconds::min()}) {
    EXPECT_ERROR(ErrorCode::Busy, ends.second.receive(timeout));
  }
}

TEST(Channel, ListenerAcceptWaitsOutALongTimeout) {
  const std::string path = "/tmp/memhal_long_accept_" + std::to_string(::getpid());
  ::unlink(path.c_str());
  ASSERT_OK_AND_ASSIGN(Listener listener, Listener::bind(path));
  std::optional<Channel> client;
  std::thread connector([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto connected = Channel::connect(path);
    EXPECT_OK(connected);
    if (connected) client.emplace(std::move(*connected));
  });
  auto accepted = listener.accept(std::chrono::milliseconds(int64_t{1} << 32));
  connector.join();
  EXPECT_OK(accepted);
}

TEST(Channel, ASenderThatDiesMidMessageLeavesAnErrorAndNoFd) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  const int before = open_fd_count();
  const pid_t peer = spawn_peer(ends.second.fd(), "die-mid-message");
  ASSERT_GT(peer, 0);
  ASSERT_EQ(wait_exit(peer), 0);
  auto received = ends.first.receive(std::chrono::milliseconds(2000));
  EXPECT_ERROR(ErrorCode::Protocol, received);
  EXPECT_EQ(open_fd_count(), before);
}

TEST(Channel, BadMessagesAndFdsAreRefusedWithoutLeaks) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  const int raw = ends.first.fd();
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  const int small = make_memfd(100, F_SEAL_SHRINK | F_SEAL_GROW);
  const int unsealable = make_memfd(4096, F_SEAL_SEAL);
  const int good = make_memfd(4096, F_SEAL_SHRINK);
  char path[] = "/tmp/memhal_channel_XXXXXX";
  const int regular = ::mkstemp(path);
  ::unlink(path);
  ASSERT_EQ(::ftruncate(regular, 4096), 0);
  const int before = open_fd_count();

  struct Case {
    const char* what;
    std::vector<std::byte> bytes;
    std::vector<int> fds;
    ErrorCode expected;
  };
  auto garbage = message_for(4096);
  garbage[0] = std::byte{'X'};
  auto newer = message_for(4096);
  newer[4] = std::byte{9};
  auto truncated = message_for(4096);
  truncated.resize(truncated.size() - 3);
  auto header_only = message_for(1);
  header_only.resize(5);
  std::vector<Case> cases{
      {"bad magic", garbage, {good}, ErrorCode::Protocol},
      {"newer version", newer, {good}, ErrorCode::Protocol},
      {"truncated descriptor", truncated, {good}, ErrorCode::Corrupt},
      {"no fds", message_for(4096), {}, ErrorCode::Protocol},
      {"two fds for one", message_for(4096), {good, good}, ErrorCode::Protocol},
      {"a pipe", message_for(4096), {pipe_fds[0]}, ErrorCode::InvalidArgument},
      {"a socket", message_for(4096), {raw}, ErrorCode::InvalidArgument},
      {"a regular file", message_for(4096), {regular}, ErrorCode::InvalidArgument},
      {"too small", message_for(4096), {small}, ErrorCode::OutOfRange},
      {"unsealable memfd", message_for(4096), {unsealable}, ErrorCode::InvalidArgument},
      {"huge dimension", message_for(int64_t{1} << 62), {good}, ErrorCode::OutOfRange},
      {"header only", header_only, {good}, ErrorCode::Protocol},
  };
  for (const auto& c : cases) {
    send_raw(ends.second.fd(), c.bytes, c.fds);
    auto received = ends.first.receive(std::chrono::milliseconds(1000));
    ASSERT_FALSE(received.has_value()) << c.what;
    EXPECT_EQ(received.error().code(), c.expected) << c.what << ": " << received.error().to_string();
    EXPECT_EQ(open_fd_count(), before) << c.what << " leaked an fd";
  }
  send_raw(ends.second.fd(), message_for(4096), std::vector<int>{good});
  EXPECT_OK(ends.first.receive(std::chrono::milliseconds(1000)));
  for (int fd : {pipe_fds[0], pipe_fds[1], small, unsealable, good, regular}) ::close(fd);
}

TEST(Channel, CompressedOrTiledBytesAreRefusedBeforeTheFdIsLookedAt) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  // The fd is too small for the layout: were it imported (mapped), the error would be OutOfRange.
  const int small = make_memfd(100, F_SEAL_SHRINK | F_SEAL_GROW);
  const int before = open_fd_count();
  for (const auto& [compression, modifier, named] :
       {std::tuple<uint32_t, uint64_t, const char*>{code(Compression::Ubwc), 0, "compression ubwc"},
        {999, 0, "compression code 999"},
        {0, (uint64_t{1} << 56) | 1, "I915_FORMAT_MOD_X_TILED"},
        {0, (uint64_t{1} << 56) - 1, "DRM_FORMAT_MOD_INVALID"}}) {
    Descriptor d;
    d.memory_code = code(MemoryKind::Shm);
    d.memory_name = "shm";
    d.dtype_code = code(DType::U8);
    d.compression_code = compression;
    d.drm_modifier = modifier;
    d.shape = {4096};
    d.strides = {1};
    d.buffer_sizes = {4096};
    const auto encoded = *d.encode();
    std::vector<std::byte> bytes{std::byte{'M'}, std::byte{'H'}, std::byte{'C'}, std::byte{'H'},
                                 std::byte{2},   std::byte{0},   std::byte{1},   std::byte{0},
                                 std::byte{1},   std::byte{0},   std::byte{0},   std::byte{0}};
    bytes.insert(bytes.end(), encoded.begin(), encoded.end());
    send_raw(ends.second.fd(), bytes, std::vector<int>{small});
    const auto received = ends.first.receive(std::chrono::milliseconds(1000));
    ASSERT_FALSE(received.has_value()) << named;
    EXPECT_EQ(received.error().code(), ErrorCode::NotImplemented) << received.error().to_string();
    EXPECT_NE(received.error().message().find(named), std::string::npos) << received.error().message();
    EXPECT_EQ(open_fd_count(), before) << named << " leaked an fd";
  }
  ::close(small);
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({64}, DType::U8, MemoryKind::Shm));
  ASSERT_OK(ends.second.send(tensor));
  EXPECT_OK(ends.first.receive(std::chrono::milliseconds(1000)));
}

TEST(Channel, NamedSocketsConnect) {
  const std::string path = "/tmp/memhal_listener_" + std::to_string(::getpid());
  ::unlink(path.c_str());
  {
    ASSERT_OK_AND_ASSIGN(Listener listener, Listener::bind(path));
    ASSERT_OK_AND_ASSIGN(Channel client, Channel::connect(path));
    ASSERT_OK_AND_ASSIGN(Channel server, listener.accept(std::chrono::milliseconds(1000)));
    ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({64}, DType::F32, MemoryKind::Shm));
    ASSERT_OK(client.send(tensor));
    ASSERT_OK_AND_ASSIGN(Tensor received, server.receive(std::chrono::milliseconds(1000)));
    EXPECT_EQ(received.dtype(), DType::F32);
    EXPECT_ERROR(ErrorCode::Busy, listener.accept(std::chrono::milliseconds(5)));
  }
  EXPECT_ERROR(ErrorCode::Unavailable, Channel::connect(path));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Channel::connect(std::string(200, 'x')));
}

TEST(Channel, AdoptRefusesWhatIsNotASeqpacketSocket) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  ::close(pipe_fds[1]);
  EXPECT_ERROR(ErrorCode::InvalidArgument, Channel::adopt(UniqueFd(pipe_fds[0])));
}

}  // namespace
}  // namespace memhal::ipc

namespace memhal::ipc {
namespace {

TEST(Channel, FramesFromAShmPoolTravelWithTheirTiming) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::image(32, 16, PixelFormat::Nv12, MemoryKind::Shm));
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, image.map(CpuAccess::Write));
    map.plane(0)[0] = std::byte{201};
  }
  ASSERT_OK_AND_ASSIGN(MemoryDomain payload, MemoryDomain::from_tensor(image));
  Frame frame{std::move(payload), {123456, std::nullopt, 33}, 42, {}};
  ASSERT_OK(ends.first.send(frame));
  ASSERT_OK_AND_ASSIGN(Frame received, ends.second.receive_frame(std::chrono::milliseconds(1000)));
  EXPECT_EQ(received.sequence, 42u);
  EXPECT_EQ(received.timing.pts, 123456);
  EXPECT_EQ(received.timing.dts, std::nullopt);
  ASSERT_OK_AND_ASSIGN(auto bytes, received.payload.require_system_bytes("channel test"));
  EXPECT_EQ(bytes.data()[0], std::byte{201});
  ASSERT_OK(ends.first.send(image));
  EXPECT_ERROR(ErrorCode::Protocol, ends.second.receive_frame(std::chrono::milliseconds(1000)));
}

}  // namespace
}  // namespace memhal::ipc
