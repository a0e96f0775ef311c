// The Channel's buffer registry: each buffer crosses once, shares come back as releases, and a
// pooled buffer is never handed out again while the other side holds a frame of it.
#include <dirent.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memhal/channel.hpp>
#include <memhal/tensor_pool.hpp>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace memhal::ipc {
namespace {

using std::chrono::milliseconds;

int open_fd_count() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (dirent* entry = ::readdir(dir)) count += entry->d_name[0] != '.';
  ::closedir(dir);
  return count - 1;  // the directory's own fd
}

// Open fds on the file behind `fd` (an import is a duplicate of the sender's fd): exact,
// whatever other tests' channels are still closing.
int fds_on_file_of(int fd) {
  struct stat file {};
  if (::fstat(fd, &file) != 0) return -1;
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (dirent* entry = ::readdir(dir)) {
    struct stat other {};
    const std::string link = std::string("/proc/self/fd/") + entry->d_name;
    count += ::stat(link.c_str(), &other) == 0 && other.st_ino == file.st_ino && other.st_dev == file.st_dev;
  }
  ::closedir(dir);
  return count;
}

// Shared mappings (a memfd or DMA-BUF import is one; the heap growing is not).
int shared_mapping_count() {
  std::ifstream maps("/proc/self/maps");
  int shared = 0;
  for (std::string range, perms, rest; maps >> range >> perms && std::getline(maps, rest);) {
    shared += perms.size() == 4 && perms[3] == 's';
  }
  return shared;
}

// read(2)-family calls this thread has made (/proc/thread-self/io `syscr`): an fdinfo read is
// one, a recvmsg is none.
long read_calls() {
  std::ifstream io("/proc/thread-self/io");
  for (std::string key; io >> key;) {
    long value = 0;
    io >> value;
    if (key == "syscr:") return value;
  }
  return -1;
}

// Waits (up to 5 s) until `done` holds: releases are taken by the sender's reader thread.
template <class F>
bool eventually(F done) {
  for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(milliseconds(10));
  return done();
}

Tensor shm_image(int64_t w, int64_t h, PixelFormat format) {
  return Tensor::image(w, h, format, MemoryKind::Shm).value();
}

TEST(ChannelRegistry, ABufferCrossesOnceThenEachShareIsAFewBytes) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  ASSERT_OK_AND_ASSIGN(TensorPool pool,
                       TensorPool::create(Layout::image(64, 32, PixelFormat::Nv12).value(), 4, MemoryKind::Shm));
  std::vector<uint64_t> received_ids(4, 0);
  uint64_t last_bytes = 0;
  for (int i = 0; i < 12; ++i) {
    ASSERT_OK_AND_ASSIGN(Tensor sent, pool.acquire(milliseconds(2000)));
    {
      ASSERT_OK_AND_ASSIGN(TensorMap map, sent.map(CpuAccess::Write));
      map.plane(1)[3] = std::byte(i);
    }
    const uint64_t before = ends.first.bytes_sent();
    ASSERT_OK(ends.first.send(sent));
    last_bytes = ends.first.bytes_sent() - before;
    ASSERT_OK_AND_ASSIGN(Tensor received, ends.second.receive(milliseconds(2000)));
    EXPECT_TRUE(received.layout() == sent.layout()) << i;
    ASSERT_OK_AND_ASSIGN(TensorMap map, received.map(CpuAccess::Read));
    EXPECT_EQ(map.const_plane(1)[3], std::byte(i));
    // The pool hands its slots out in some order; the receiver sees each slot as one buffer.
    const auto slot = static_cast<std::size_t>(
        std::find(received_ids.begin(), received_ids.end(), received.buffer_id()) - received_ids.begin());
    if (slot == received_ids.size()) {
      const auto empty = std::find(received_ids.begin(), received_ids.end(), 0u);
      ASSERT_NE(empty, received_ids.end()) << "a fifth buffer id for a pool of 4 at frame " << i;
      *empty = received.buffer_id();
    }
  }
  EXPECT_LT(last_bytes, 40u) << "a share of a registered buffer: token and buffer id, no descriptor";
}

TEST(ChannelRegistry, APooledBufferIsNotHandedOutAgainWhileTheReceiverHoldsIt) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  ASSERT_OK_AND_ASSIGN(TensorPool pool,
                       TensorPool::create(Layout::image(32, 16, PixelFormat::Rgb).value(), 1, MemoryKind::Shm));
  std::optional<Tensor> received;
  {
    ASSERT_OK_AND_ASSIGN(Tensor sent, pool.acquire(milliseconds(0)));
    ASSERT_OK(ends.first.send(sent));
    ASSERT_OK_AND_ASSIGN(received, ends.second.receive(milliseconds(2000)));
  }
  // The sender dropped its tensor, but the channel holds the share for the receiver.
  EXPECT_ERROR(ErrorCode::Busy, pool.acquire(milliseconds(50)));
  auto view = received->crop(0, 0, 8, 8);  // a view keeps the share too
  received.reset();
  EXPECT_ERROR(ErrorCode::Busy, pool.acquire(milliseconds(50)));
  std::thread consumer([&] {
    std::this_thread::sleep_for(milliseconds(100));
    view = unexpected(Error(ErrorCode::Internal, "dropped"));
  });
  // A producer blocked in acquire is woken by the release, with nothing else to call.
  EXPECT_OK(pool.acquire(milliseconds(5000)));
  consumer.join();
}

TEST(ChannelRegistry, AProducerAndAConsumerThreadRunAPoolOfTwoWithoutDeadlock) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  ASSERT_OK_AND_ASSIGN(TensorPool pool,
                       TensorPool::create(Layout::contiguous({4096}, DType::U8).value(), 2, MemoryKind::Shm));
  constexpr int kFrames = 500;
  std::atomic<int> bad{0};
  std::thread consumer([&] {
    std::optional<Frame> previous;  // holds one frame while it takes the next
    for (int i = 0; i < kFrames; ++i) {
      auto frame = ends.second.receive_frame(milliseconds(5000));
      if (!frame) {
        ++bad;
        return;
      }
      auto bytes = frame->payload.require_system_bytes("consumer");
      if (!bytes || bytes->data()[100] != std::byte(frame->sequence & 0xff) || frame->sequence != uint64_t(i)) ++bad;
      previous = std::move(*frame);
    }
  });
  for (int i = 0; i < kFrames; ++i) {
    ASSERT_OK_AND_ASSIGN(Tensor tensor, pool.acquire(std::chrono::seconds(5)));
    {
      ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Write));
      std::memset(map.data(), i & 0xff, 4096);
    }
    ASSERT_OK_AND_ASSIGN(MemoryDomain payload, MemoryDomain::from_tensor(tensor));
    ASSERT_OK(ends.first.send(Frame{std::move(payload), {}, static_cast<uint64_t>(i), {}}));
  }
  consumer.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(ChannelRegistry, FramesCarryTheirImageTimingSequenceAndTypedMetadata) {
  for (const bool registry : {true, false}) {
    SCOPED_TRACE(registry ? "registry" : "full path");
    ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
    ends.first.set_buffer_registry(registry);
    const Tensor image = shm_image(48, 20, PixelFormat::I420);
    ASSERT_OK_AND_ASSIGN(MemoryDomain payload, MemoryDomain::from_tensor(image));
    Frame frame{std::move(payload), {1000, 900, 33}, 77, {}};
    frame.metadata.set("flag", true);
    frame.metadata.set("exposure", int32_t{-8000});
    frame.metadata.set("gain", uint32_t{3});
    frame.metadata.set("sensor_ns", int64_t{-5});
    frame.metadata.set("id", uint64_t{1} << 63);
    frame.metadata.set("ev", 0.5f);
    frame.metadata.set("lux", 1e300);
    frame.metadata.set("camera", std::string("front\0left", 10));
    frame.metadata.set("blob", std::vector<uint8_t>{0, 1, 255});
    for (int round = 0; round < 2; ++round) {  // the second share of the buffer has no view
      ASSERT_OK(ends.first.send(frame));
      ASSERT_OK_AND_ASSIGN(Frame received, ends.second.receive_frame(milliseconds(2000)));
      EXPECT_EQ(received.sequence, 77u);
      EXPECT_TRUE(received.timing == frame.timing);
      EXPECT_TRUE(Descriptor::FrameFields::of(received) == Descriptor::FrameFields::of(frame));
      ASSERT_NE(received.metadata.get<std::string>("camera"), nullptr);
      EXPECT_EQ(*received.metadata.get<std::string>("camera"), std::string("front\0left", 10));
      EXPECT_EQ(*received.metadata.get<float>("ev"), 0.5f);
      EXPECT_EQ(*received.metadata.get<uint64_t>("id"), uint64_t{1} << 63);
      ASSERT_OK_AND_ASSIGN(Tensor tensor, received.payload.to_tensor());
      EXPECT_EQ(tensor.pixel_format(), PixelFormat::I420);
      EXPECT_TRUE(tensor.layout().planes().size() == 3);
      for (std::size_t p = 0; p < 3; ++p) {
        EXPECT_EQ(tensor.layout().planes()[p].pitch, image.layout().planes()[p].pitch) << p;
        EXPECT_EQ(tensor.layout().planes()[p].offset, image.layout().planes()[p].offset) << p;
      }
    }
    struct Local {
      int x;
    };
    frame.metadata.set("detector", Local{1});
    const auto refused = ends.first.send(frame);
    EXPECT_ERROR(ErrorCode::InvalidArgument, refused);
    EXPECT_NE(refused.error().message().find("'detector'"), std::string::npos) << refused.error().message();
  }
}

TEST(ChannelRegistry, ViewsOfARegisteredBufferTravelAsLayoutsAndWiderOnesReattach) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  ASSERT_OK_AND_ASSIGN(Tensor base, Tensor::create({16, 256}, DType::U8, MemoryKind::Shm, "base"));
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, base.map(CpuAccess::Write));
    for (int i = 0; i < 16 * 256; ++i) map.data()[i] = std::byte(i / 256);
  }
  ASSERT_OK_AND_ASSIGN(UniqueFd watch, base.clone_fd());
  ASSERT_OK_AND_ASSIGN(Tensor top, base.slice(0, 0, 2));
  ASSERT_OK_AND_ASSIGN(Tensor bottom, base.slice(0, 14, 16));  // reaches further: its fd again
  ASSERT_OK_AND_ASSIGN(Tensor middle, base.slice(0, 7, 8));
  for (const auto& [view, row] : {std::pair{&top, 0}, {&bottom, 14}, {&middle, 7}, {&top, 0}}) {
    ASSERT_OK(ends.first.send(*view));
    ASSERT_OK_AND_ASSIGN(Tensor received, ends.second.receive(milliseconds(2000)));
    EXPECT_TRUE(received.layout() == view->layout());
    ASSERT_OK_AND_ASSIGN(TensorMap map, received.map(CpuAccess::Read));
    EXPECT_EQ(map.const_data()[0], std::byte(row));
  }
  // base's, ours and one import: the second (wider) replaced the first, which closed with its
  // tensor.
  EXPECT_EQ(fds_on_file_of(watch.get()), 3);
}

TEST(ChannelRegistry, ABufferWhoseStorageIsGoneIsRetiredAndTheReceiverDropsItsImport) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  ASSERT_OK_AND_ASSIGN(Tensor keep, Tensor::create({64}, DType::U8, MemoryKind::Shm));
  std::optional<TensorPool> pool(
      TensorPool::create(Layout::contiguous({4096}, DType::U8).value(), 1, MemoryKind::Shm).value());
  UniqueFd watch;  // an fd on the pool's buffer, to count who else has it open
  {
    ASSERT_OK_AND_ASSIGN(Tensor sent, pool->acquire(milliseconds(0)));
    ASSERT_OK_AND_ASSIGN(watch, sent.clone_fd());
    EXPECT_EQ(fds_on_file_of(watch.get()), 2) << "the pool's and ours";
    ASSERT_OK(ends.first.send(sent));
    ASSERT_OK(ends.second.receive(milliseconds(2000)));
  }
  ASSERT_TRUE(eventually([&] { return pool->available() == 1; })) << "the release came back";
  EXPECT_EQ(fds_on_file_of(watch.get()), 3) << "the receiver keeps its import while the buffer lives";
  pool.reset();
  EXPECT_EQ(fds_on_file_of(watch.get()), 2) << "the pool's fd closed; the import stays";
  ASSERT_OK(ends.first.send(keep));  // tells the receiver first that the buffer is gone
  ASSERT_OK(ends.second.receive(milliseconds(2000)));
  EXPECT_EQ(fds_on_file_of(watch.get()), 1) << "the import closed with the retire";
}

TEST(ChannelRegistry, ADroppedConnectionReleasesEverythingButNotWhatTheReceiverStillHolds) {
  ASSERT_OK_AND_ASSIGN(TensorPool pool,
                       TensorPool::create(Layout::contiguous({4096}, DType::U8).value(), 2, MemoryKind::Shm));
  std::optional<Tensor> kept;
  {
    ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
    for (int i = 0; i < 2; ++i) {
      ASSERT_OK_AND_ASSIGN(Tensor sent, pool.acquire(milliseconds(0)));
      ASSERT_OK(ends.first.send(sent));
    }
    ASSERT_OK_AND_ASSIGN(kept, ends.second.receive(milliseconds(2000)));  // the second stays unread
    { auto receiver_gone = std::move(ends.second); }
    // The unread share is released with the connection; the one the receiver holds is not.
    ASSERT_TRUE(eventually([&] { return pool.available() == 1; }));
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_EQ(pool.available(), 1u);
    EXPECT_ERROR(ErrorCode::Unavailable, ends.first.send(*pool.acquire(milliseconds(0))));
  }
  EXPECT_EQ(pool.available(), 1u) << "a sending channel destroyed with a share out keeps it";
  kept.reset();
  EXPECT_TRUE(eventually([&] { return pool.available() == 2; }));
}

TEST(ChannelRegistry, RawSharesOfUnknownOrTooSmallBuffersAreRefused) {
  int raw[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, raw), 0);
  UniqueFd sender(raw[0]);
  ASSERT_OK_AND_ASSIGN(Channel receiver, Channel::adopt(UniqueFd(raw[1])));
  auto send = [&](std::vector<uint8_t> bytes, std::vector<int> fds) {
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
    iovec io{bytes.data(), bytes.size()};
    msghdr header{};
    header.msg_iov = &io;
    header.msg_iovlen = 1;
    if (!fds.empty()) {
      header.msg_control = control;
      header.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* rights = CMSG_FIRSTHDR(&header);
      *rights = {CMSG_LEN(sizeof(int) * fds.size()), SOL_SOCKET, SCM_RIGHTS};
      std::memcpy(CMSG_DATA(rights), fds.data(), sizeof(int) * fds.size());
    }
    ASSERT_GE(::sendmsg(sender.get(), &header, 0), 0);
  };
  const std::vector<uint8_t> share_of_unknown{'M', 'H', 'C', 'H', 2, 0, 3, 0, 0, 0, 0, 0,  // header, no fds
                                              1,   0,   0,   0,   0, 0, 0, 0,              // token 1
                                              0,   1,                                      // no view, 1 buffer
                                              9,   0,   0,   0,   0, 0, 0, 0, 0};          // id 9, no fd
  send(share_of_unknown, {});
  EXPECT_ERROR(ErrorCode::Protocol, receiver.receive(milliseconds(1000)));  // no back channel yet
  int back[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, back), 0);
  UniqueFd ours(back[0]);
  send({'M', 'H', 'C', 'H', 2, 0, 2, 0, 1, 0, 0, 0}, {back[1]});
  ::close(back[1]);
  send(share_of_unknown, {});
  const auto unknown = receiver.receive(milliseconds(1000));
  EXPECT_ERROR(ErrorCode::Protocol, unknown);
  // The refused share is released all the same, so that the sender does not hold it forever.
  uint8_t release[16] = {};
  ASSERT_EQ(::recv(ours.get(), release, sizeof release, MSG_DONTWAIT), 16);
  EXPECT_EQ(release[8], 1);
  // A second back channel is refused; the channel keeps working.
  send({'M', 'H', 'C', 'H', 2, 0, 2, 0, 1, 0, 0, 0}, {back[0]});
  EXPECT_ERROR(ErrorCode::Protocol, receiver.receive(milliseconds(1000)));
  auto [a, b] = Channel::pair().value();
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({64}, DType::U8, MemoryKind::Shm));
  ASSERT_OK(a.send(tensor));
  EXPECT_OK(b.receive(milliseconds(1000)));
}

TEST(ChannelRegistry, AMovedFromChannelRefusesToSendOrReceive) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  Channel moved = std::move(ends.first);
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({64}, DType::U8, MemoryKind::Shm));
  EXPECT_ERROR(ErrorCode::InvalidArgument, ends.first.send(tensor));  // NOLINT(bugprone-use-after-move)
  EXPECT_ERROR(ErrorCode::InvalidArgument, ends.first.receive(milliseconds(0)));
  ASSERT_OK(moved.send(tensor));
  EXPECT_OK(ends.second.receive(milliseconds(1000)));
}

TEST(ChannelRegistry, AReceiverKeepsAtMostkMaxRegisteredBuffers) {
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  if (files.rlim_cur < kMaxRegisteredBuffers + 256) {
    files.rlim_cur = std::min<rlim_t>(files.rlim_max, kMaxRegisteredBuffers + 256);
    ::setrlimit(RLIMIT_NOFILE, &files);
    if (files.rlim_cur < kMaxRegisteredBuffers + 256) GTEST_SKIP() << "too few fds allowed (RLIMIT_NOFILE)";
  }
  int raw[2], back[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, raw), 0);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, back), 0);
  UniqueFd sender(raw[0]), releases(back[0]);
  ASSERT_OK_AND_ASSIGN(Channel receiver, Channel::adopt(UniqueFd(raw[1])));
  auto send = [&](std::span<const std::byte> bytes, int fd) {
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    iovec io{const_cast<std::byte*>(bytes.data()), bytes.size()};
    msghdr header{};
    header.msg_iov = &io;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = sizeof control;
    cmsghdr* rights = CMSG_FIRSTHDR(&header);
    *rights = {CMSG_LEN(sizeof(int)), SOL_SOCKET, SCM_RIGHTS};
    std::memcpy(CMSG_DATA(rights), &fd, sizeof fd);
    return ::sendmsg(sender.get(), &header, 0) >= 0;
  };
  const std::byte back_channel[] = {std::byte{'M'}, std::byte{'H'}, std::byte{'C'}, std::byte{'H'},
                                    std::byte{2},   std::byte{0},   std::byte{2},   std::byte{0},
                                    std::byte{1},   std::byte{0},   std::byte{0},   std::byte{0}};
  ASSERT_TRUE(send(back_channel, back[1]));
  ::close(back[1]);
  Descriptor view;
  view.memory_code = code(MemoryKind::Shm);
  view.memory_name = "shm";
  view.dtype_code = code(DType::U8);
  view.shape = {4096};
  view.strides = {1};
  view.buffer_sizes = {4096};
  ASSERT_OK_AND_ASSIGN(const std::vector<std::byte> encoded, view.encode());
  for (uint64_t id = 1; id <= kMaxRegisteredBuffers + 1; ++id) {
    std::vector<std::byte> message;
    auto put = [&](uint64_t value, int bytes) {
      for (int i = 0; i < bytes; ++i) message.push_back(std::byte((value >> (8 * i)) & 0xff));
    };
    put(0x4843484d, 4), put(2, 2), put(3, 2), put(1, 4);  // MHCH v2, share, one fd
    put(id, 8), put(1, 1), put(1, 1), put(id, 8), put(1, 1), put(encoded.size(), 4);
    message.insert(message.end(), encoded.begin(), encoded.end());
    UniqueFd memfd(::memfd_create("registered", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    ASSERT_EQ(::ftruncate(memfd.get(), 4096), 0);
    ASSERT_TRUE(send(message, memfd.get()));
    const auto received = receiver.receive(milliseconds(1000));
    if (id <= kMaxRegisteredBuffers) {
      ASSERT_TRUE(received.has_value()) << id << ": " << received.error().to_string();
    } else {
      EXPECT_ERROR(ErrorCode::Protocol, received);
    }
    std::byte drained[64];
    while (::recv(releases.get(), drained, sizeof drained, MSG_DONTWAIT) > 0) {
    }
  }
}

// The receiver's per-frame path, in a second process: after the buffers are registered, 100
// frames held at once add no fd, no shared mapping and no read(2) (the full path adds a dup
// and an mmap per frame, and for a DMA-BUF an fdinfo read).
struct PathCost {
  int fds = 0, mappings = 0;
  long reads = 0;
};

PathCost receiver_cost(bool registry) {
  auto ends = Channel::pair().value();
  ends.first.set_buffer_registry(registry);
  int report[2];
  EXPECT_EQ(::pipe(report), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(report[0]);
    { auto sender_end = std::move(ends.first); }
    PathCost cost{-1, -1, -1};
    std::vector<Frame> held;
    held.reserve(200);
    bool ok = true;
    for (int i = 0; i < 8 && ok; ++i) ok = ends.second.receive_frame(milliseconds(5000)).has_value();
    const int fds = open_fd_count(), maps = shared_mapping_count();
    const long reads = read_calls();
    for (int i = 0; i < 100 && ok; ++i) {
      auto frame = ends.second.receive_frame(milliseconds(5000));
      ok = frame.has_value();
      if (ok) held.push_back(std::move(*frame));
    }
    const long reads_after = read_calls();
    const long probe = read_calls() - reads_after;  // what reading the counter costs
    if (ok) cost = {open_fd_count() - fds, shared_mapping_count() - maps, reads_after - reads - probe};
    _exit(::write(report[1], &cost, sizeof cost) == sizeof cost ? 0 : 1);
  }
  ::close(report[1]);
  { auto receiver_end = std::move(ends.second); }
  std::vector<Tensor> ring;
  for (int i = 0; i < 8; ++i) ring.push_back(shm_image(64, 32, PixelFormat::Nv12));
  for (int i = 0; i < 108; ++i) {
    auto payload = MemoryDomain::from_tensor(ring[i % 8]);
    EXPECT_TRUE(payload.has_value());
    EXPECT_OK(ends.first.send(Frame{std::move(*payload), {i * 1000, {}, {}}, static_cast<uint64_t>(i), {}}));
  }
  PathCost cost{-1, -1, -1};
  EXPECT_EQ(::read(report[0], &cost, sizeof cost), static_cast<ssize_t>(sizeof cost));
  ::close(report[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return cost;
}

TEST(ChannelRegistry, TheReceiversPerFramePathReadsNoFdinfoDupsNoFdAndMapsNothing) {
  if (read_calls() < 0) GTEST_SKIP() << "/proc/thread-self/io is not readable here";
  const PathCost registry = receiver_cost(true);
  EXPECT_EQ(registry.fds, 0);
  EXPECT_EQ(registry.mappings, 0);
  EXPECT_EQ(registry.reads, 0);
  // The same count catches the full path: one fd, one mapping and a read of fdinfo per frame.
  const PathCost full = receiver_cost(false);
  EXPECT_GE(full.fds, 100);
  EXPECT_GE(full.mappings, 100);
}

}  // namespace
}  // namespace memhal::ipc
