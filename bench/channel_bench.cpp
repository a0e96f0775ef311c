// Passing a tensor to another process: memhal's Channel (descriptor + fd, the payload stays
// put) against writing the same bytes through a socket, at 4 KiB, 1 MiB and 64 MiB. Each
// iteration is a round trip: send, the child receives (and reads one byte of the payload),
// the child acknowledges. Then a camera's ring: frames from a TensorPool of 8 1080p NV12 Shm
// images to a second (forked) process, send -> receive_frame -> release, with the buffer
// registry (each buffer crosses once) against the full per-frame path (fds, import and mmap
// every frame). Ratios are printed after the table.
#include <benchmark/benchmark.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memhal/channel.hpp>
#include <memhal/tensor_pool.hpp>
#include <string>
#include <vector>

#include "support/ratio_reporter.hpp"

namespace {

using memhal::Tensor;

constexpr int64_t kSizes[] = {4 << 10, 1 << 20, 64 << 20};

void must(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "channel_bench: %s failed\n", what);
    std::exit(1);
  }
}

// The child of the Channel benchmark: receive, touch, acknowledge, until the channel closes.
[[noreturn]] void channel_child(memhal::ipc::Channel channel, int ack) {
  for (;;) {
    auto tensor = channel.receive();
    if (!tensor) _exit(0);
    auto map = tensor->map(memhal::CpuAccess::Read);
    const char seen = map ? static_cast<char>(map->data()[0]) : 0;
    if (::write(ack, &seen, 1) != 1) _exit(1);
  }
}

void BM_ChannelRoundTrip(benchmark::State& state) {
  auto ends = memhal::ipc::Channel::pair();
  int acks[2];
  must(ends.has_value() && ::pipe(acks) == 0, "setup");
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(acks[0]);
    { auto unused = std::move(ends->first); }
    channel_child(std::move(ends->second), acks[1]);
  }
  ::close(acks[1]);
  { auto unused = std::move(ends->second); }
  auto tensor = Tensor::create({state.range(0)}, memhal::DType::U8, memhal::MemoryKind::Shm);
  must(tensor.has_value(), "shm tensor");
  for (auto _ : state) {
    must(ends->first.send(*tensor).has_value(), "send");
    char seen;
    must(::read(acks[0], &seen, 1) == 1, "ack");
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
  state.counters["socket_bytes_per_send"] =
      static_cast<double>(ends->first.bytes_sent()) / static_cast<double>(std::max<int64_t>(state.iterations(), 1));
  { auto closed = std::move(ends->first); }
  ::waitpid(child, nullptr, 0);
  ::close(acks[0]);
}

// The peer: the same bytes written through a stream socket and read in full by the child.
void BM_SocketCopyRoundTrip(benchmark::State& state) {
  const std::size_t size = static_cast<std::size_t>(state.range(0));
  int sockets[2], acks[2];
  must(::socketpair(AF_UNIX, SOCK_STREAM, 0, sockets) == 0 && ::pipe(acks) == 0, "setup");
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(sockets[0]);
    ::close(acks[0]);
    std::vector<char> buffer(size);
    for (;;) {
      std::size_t got = 0;
      while (got < size) {
        const ssize_t n = ::read(sockets[1], buffer.data() + got, size - got);
        if (n <= 0) _exit(0);
        got += static_cast<std::size_t>(n);
      }
      if (::write(acks[1], buffer.data(), 1) != 1) _exit(1);
    }
  }
  ::close(sockets[1]);
  ::close(acks[1]);
  std::vector<char> payload(size, 7);
  for (auto _ : state) {
    std::size_t sent = 0;
    while (sent < size) {
      const ssize_t n = ::write(sockets[0], payload.data() + sent, size - sent);
      must(n > 0, "write");
      sent += static_cast<std::size_t>(n);
    }
    char seen;
    must(::read(acks[0], &seen, 1) == 1, "ack");
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
  ::close(sockets[0]);
  ::waitpid(child, nullptr, 0);
  ::close(acks[0]);
}

// The child of the ring benchmark: receive a frame, read a byte of its chroma, drop it (which
// releases it to the sender), acknowledge; until the channel closes.
[[noreturn]] void frame_child(memhal::ipc::Channel channel, int ack) {
  for (;;) {
    char seen = 0;
    {
      auto frame = channel.receive_frame();
      if (!frame) _exit(0);
      auto tensor = frame->payload.to_tensor();
      if (!tensor) _exit(2);
      auto map = tensor->map(memhal::CpuAccess::Read);
      if (!map) _exit(3);
      seen = static_cast<char>(map->const_data()[tensor->nbytes() - 1]);
    }
    if (::write(ack, &seen, 1) != 1) _exit(1);
  }
}

// state.range(0): 1 with the buffer registry, 0 with the full per-frame path.
void BM_PoolRingRoundTrip(benchmark::State& state) {
  auto ends = memhal::ipc::Channel::pair();
  int acks[2];
  must(ends.has_value() && ::pipe(acks) == 0, "setup");
  auto pool = memhal::TensorPool::create(memhal::Layout::image(1920, 1080, memhal::PixelFormat::Nv12).value(), 8,
                                         memhal::MemoryKind::Shm);
  must(pool.has_value(), "pool of 8 1080p nv12 shm images");
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(acks[0]);
    { auto unused = std::move(ends->first); }
    frame_child(std::move(ends->second), acks[1]);
  }
  ::close(acks[1]);
  { auto unused = std::move(ends->second); }
  ends->first.set_buffer_registry(state.range(0) == 1);
  uint64_t sequence = 0;
  for (auto _ : state) {
    auto tensor = pool->acquire(std::chrono::seconds(10));
    must(tensor.has_value(), "acquire");
    auto payload = memhal::MemoryDomain::from_tensor(*tensor);
    must(payload.has_value(), "from_tensor");
    must(ends->first
             .send(memhal::Frame{
                 std::move(*payload), {static_cast<int64_t>(sequence) * 33'333'333, {}, {}}, sequence, {}})
             .has_value(),
         "send");
    ++sequence;
    char seen;
    must(::read(acks[0], &seen, 1) == 1, "ack");
  }
  state.counters["socket_bytes_per_frame"] =
      static_cast<double>(ends->first.bytes_sent()) / static_cast<double>(std::max<int64_t>(state.iterations(), 1));
  { auto closed = std::move(ends->first); }
  ::waitpid(child, nullptr, 0);
  ::close(acks[0]);
}

BENCHMARK(BM_PoolRingRoundTrip)->ArgName("registry")->Arg(1)->Arg(0)->UseRealTime();
BENCHMARK(BM_ChannelRoundTrip)->Arg(kSizes[0])->Arg(kSizes[1])->Arg(kSizes[2])->UseRealTime();
BENCHMARK(BM_SocketCopyRoundTrip)->Arg(kSizes[0])->Arg(kSizes[1])->Arg(kSizes[2])->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  return memhal::bench::run_benchmarks(argc, argv, [](const memhal::bench::RatioReporter& r) {
    std::printf("\n%-10s %16s %16s %14s\n", "size", "channel (us)", "socket copy (us)", "copy/channel");
    for (int64_t size : kSizes) {
      const std::string arg = "/" + std::to_string(size) + "/real_time";
      const double channel = r.real_seconds("BM_ChannelRoundTrip" + arg);
      const double copy = r.real_seconds("BM_SocketCopyRoundTrip" + arg);
      std::printf("%-10lld %16.1f %16.1f %13.1fx\n", static_cast<long long>(size), channel * 1e6, copy * 1e6,
                  copy / channel);
    }
    const double small = r.real_seconds("BM_ChannelRoundTrip/" + std::to_string(kSizes[0]) + "/real_time");
    const double large = r.real_seconds("BM_ChannelRoundTrip/" + std::to_string(kSizes[2]) + "/real_time");
    std::printf("channel 64 MiB vs 4 KiB: %.2fx (size-independent if within 1.5x)\n", large / small);
    const double registry = r.real_seconds("BM_PoolRingRoundTrip/registry:1/real_time");
    const double full = r.real_seconds("BM_PoolRingRoundTrip/registry:0/real_time");
    std::printf(
        "pool ring of 8 1080p nv12 shm frames, send -> receive -> release: registry %.1f us, full path "
        "%.1f us per frame: %.1fx less time (goal >= 3x)\n",
        registry * 1e6, full * 1e6, registry > 0 ? full / registry : 0.0);
  });
}
