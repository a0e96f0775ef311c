// memhal demo: the project's main job. A synthetic camera fills NV12 frames taken from a
// TensorPool; a Tee fans each frame out to an in-process consumer and, over a Channel, to a
// second process; both checksum what they see. No payload byte is copied on the way.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memhal/memhal.hpp>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "commands.hpp"

extern char** environ;

namespace memhal::cli {
namespace {

constexpr std::string_view kUsage =
    "usage: memhal demo [--seconds N | --frames N] [--size WxH] [--fps N] [--memory shm|dmabuf]\n"
    "                   [--record FILE.mhrec]\n"
    "  A synthetic NV12 camera fans frames out to an in-process consumer and a second process\n"
    "  without copying them; prints per-second figures and a final summary line.\n";

std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop = true;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What the second process reports for each frame.
struct PeerResult {
  uint64_t sequence;
  uint64_t checksum;
  int64_t done_ns;
};

// A 64-bit checksum of a tensor's bytes (its whole extent, planes and padding included).
Result<uint64_t> checksum(const Tensor& tensor) {
  MEMHAL_ASSIGN_OR_RETURN(TensorMap map, tensor.map(CpuAccess::Read));
  const ByteExtent extent = tensor.layout().byte_extent(0);
  const std::byte* base = map.data() - tensor.layout().offset();
  uint64_t hash = 1469598103934665603ull;
  const int64_t words = (extent.end - extent.begin) / 8;
  for (int64_t i = 0; i < words; ++i) {
    uint64_t word;
    std::memcpy(&word, base + extent.begin + i * 8, 8);
    hash = (hash ^ word) * 1099511628211ull;
  }
  return hash;
}

Result<uint64_t> checksum(const Frame& frame) {
  MEMHAL_ASSIGN_OR_RETURN(Tensor tensor, frame.payload.to_tensor());
  return checksum(tensor);
}

// A moving test pattern: diagonal luma ramps, a bright box crossing the frame, slow chroma.
Result<void> draw(const Tensor& image, uint64_t n) {
  MEMHAL_ASSIGN_OR_RETURN(TensorMap map, image.map(CpuAccess::Write));
  const auto planes = image.layout().planes();
  const int64_t w = planes[0].width, h = planes[0].height;
  const int64_t box = (static_cast<int64_t>(n) * 8) % std::max<int64_t>(w - h / 4, 1);
  for (int64_t y = 0; y < h; ++y) {
    auto* row = reinterpret_cast<uint8_t*>(map.plane(0) + y * planes[0].pitch);
    for (int64_t x = 0; x < w; ++x) {
      const bool in_box = x >= box && x < box + h / 4 && y >= h / 3 && y < h / 3 + h / 4;
      row[x] = in_box ? 235 : static_cast<uint8_t>(16 + ((x + y + 4 * static_cast<int64_t>(n)) & 0x7f));
    }
  }
  for (int64_t y = 0; y < planes[1].height; ++y) {
    auto* row = reinterpret_cast<uint8_t*>(map.plane(1) + y * planes[1].pitch);
    for (int64_t x = 0; x < planes[1].width; ++x) {
      row[2 * x] = static_cast<uint8_t>(128 + ((x + static_cast<int64_t>(n)) & 0x3f) - 32);
      row[2 * x + 1] = static_cast<uint8_t>(128 + ((y - static_cast<int64_t>(n)) & 0x3f) - 32);
    }
  }
  return {};
}

// ---- the second process ----

int run_peer() {
  auto channel = ipc::Channel::adopt(UniqueFd(3));
  if (!channel) {
    std::fprintf(stderr, "demo peer: %s\n", channel.error().to_string().c_str());
    return 1;
  }
  for (;;) {
    auto frame = channel->receive_frame(std::chrono::milliseconds(10000));
    if (!frame) {
      if (frame.error().code() == ErrorCode::Unavailable) return 0;  // the camera is done
      std::fprintf(stderr, "demo peer: %s\n", frame.error().to_string().c_str());
      return 1;
    }
    auto sum = checksum(*frame);
    PeerResult result{frame->sequence, sum ? *sum : 0, now_ns()};
    if (::write(4, &result, sizeof result) != static_cast<ssize_t>(sizeof result)) return 1;
  }
}

// ---- the camera side ----

struct Options {
  std::optional<double> seconds;
  std::optional<uint64_t> frames;
  int64_t width = 1280, height = 720;
  double fps = 30;
  std::optional<MemoryKind> memory;
  std::string record;
};

std::optional<Options> parse(std::span<const std::string_view> args) {
  Options options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    const bool has_value = i + 1 < args.size();
    const std::string value = has_value ? std::string(args[i + 1]) : "";
    try {
      if (arg == "--seconds" && has_value) {
        options.seconds = std::stod(value);
      } else if (arg == "--frames" && has_value) {
        options.frames = std::stoull(value);
      } else if (arg == "--fps" && has_value) {
        options.fps = std::stod(value);
      } else if (arg == "--size" && has_value) {
        const auto x = value.find('x');
        if (x == std::string::npos) return std::nullopt;
        options.width = std::stoll(value.substr(0, x));
        options.height = std::stoll(value.substr(x + 1));
      } else if (arg == "--memory" && has_value) {
        options.memory = from_string<MemoryKind>(value);
        if (!options.memory) return std::nullopt;
      } else if (arg == "--record" && has_value) {
        options.record = value;
      } else {
        return std::nullopt;
      }
    } catch (const std::exception&) {
      return std::nullopt;
    }
    ++i;
  }
  if (options.fps <= 0 || options.width <= 0 || options.height <= 0) return std::nullopt;
  if (!options.seconds && !options.frames) options.seconds = 3;
  return options;
}

struct Stats {
  std::mutex mutex;
  std::map<uint64_t, std::pair<uint64_t, Frame>> in_flight;  // sequence -> expected checksum, frame held
  std::vector<int64_t> latencies_us;
  uint64_t checksum_errors = 0;
  uint64_t peer_frames = 0;
};

// Reads the peer's results; releases each frame (back to the pool) once the peer is done.
void collect(int pipe, Stats& stats) {
  PeerResult result{};
  while (::read(pipe, &result, sizeof result) == static_cast<ssize_t>(sizeof result)) {
    std::lock_guard lock(stats.mutex);
    auto it = stats.in_flight.find(result.sequence);
    if (it == stats.in_flight.end()) continue;
    if (it->second.first != result.checksum) ++stats.checksum_errors;
    stats.latencies_us.push_back((result.done_ns - *it->second.second.timing.pts) / 1000);
    ++stats.peer_frames;
    stats.in_flight.erase(it);
  }
}

int64_t percentile(std::vector<int64_t> values, double p) {
  if (values.empty()) return 0;
  const auto at = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(at), values.end());
  return values[at];
}

int fail(const char* what, const Error& error) {
  std::fprintf(stderr, "memhal demo: %s: %s\n", what, error.to_string().c_str());
  return 1;
}

pid_t spawn_peer(int socket, int pipe) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, socket, 3);
  posix_spawn_file_actions_adddup2(&actions, pipe, 4);
  const char* argv[] = {"memhal", "demo", "--peer", nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

}  // namespace

int run_demo(std::span<const std::string_view> args) {
  if (args.size() == 1 && args[0] == "--peer") return run_peer();
  if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
    std::cout << kUsage;
    return 0;
  }
  const auto options = parse(args);
  if (!options) {
    std::cerr << "memhal demo: bad arguments\n" << kUsage;
    return 2;
  }
  const MemoryKind memory =
      options->memory.value_or(is_available(MemoryKind::DmaBuf) ? MemoryKind::DmaBuf : MemoryKind::Shm);
  auto layout = Layout::image(options->width, options->height, PixelFormat::Nv12);
  if (!layout) return fail("frame layout", layout.error());
  auto pool = TensorPool::create(*layout, 8, memory);
  if (!pool) return fail("frame pool", pool.error());
  auto tee = Tee::create(2);
  auto channel = ipc::Channel::pair();
  if (!channel) return fail("channel", channel.error());
  int results[2];
  if (::pipe2(results, O_CLOEXEC) != 0) return 1;
  const pid_t peer = spawn_peer(channel->second.fd(), results[1]);
  if (peer < 0) return 1;
  ::close(results[1]);
  { auto peer_end = std::move(channel->second); }  // the child has its copy
  std::optional<Recorder> recorder;
  if (!options->record.empty()) {
    auto created = Recorder::create(options->record);
    if (!created) return fail("recording", created.error());
    recorder.emplace(std::move(*created));
  }

  std::printf("memhal demo: %lldx%lld nv12 at %.0f fps, %zu %s buffers, second process pid %d\n",
              static_cast<long long>(options->width), static_cast<long long>(options->height), options->fps,
              pool->capacity(), std::string(to_string(pool->memory())).c_str(), peer);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  Stats stats;
  std::thread collector(collect, results[0], std::ref(stats));

  const int64_t start = now_ns();
  const auto period = std::chrono::nanoseconds(static_cast<int64_t>(1e9 / options->fps));
  auto next_frame = std::chrono::steady_clock::now();
  uint64_t frames = 0, bytes_shared = 0, bytes_copied = 0, local_errors = 0, second = 1;
  uint64_t frames_at_second = 0;
  int status = 0;
  while (!g_stop) {
    if (options->frames && frames >= *options->frames) break;
    if (options->seconds && static_cast<double>(now_ns() - start) / 1e9 >= *options->seconds) break;
    std::this_thread::sleep_until(next_frame);
    next_frame += period;
    auto image = pool->acquire(std::chrono::seconds(2));
    if (!image) {
      status = fail("camera", image.error());
      break;
    }
    if (auto drawn = draw(*image, frames); !drawn) {
      status = fail("camera", drawn.error());
      break;
    }
    auto expected_sum = checksum(*image);
    if (!expected_sum) {
      status = fail("camera", expected_sum.error());
      break;
    }
    const uint64_t expected = *expected_sum;
    auto payload = MemoryDomain::from_tensor(*image);
    if (!payload) {
      status = fail("frame", payload.error());
      break;
    }
    Frame frame{std::move(*payload), {now_ns(), std::nullopt, static_cast<int64_t>(1e9 / options->fps)}, frames, {}};
    if (recorder) {
      if (auto written = recorder->write(*image, *frame.timing.pts - start); !written) {
        status = fail("recording", written.error());
        break;
      }
    }
    auto branches = tee->push(std::move(frame));
    if (!branches) {
      status = fail("tee", branches.error());
      break;
    }
    // Branch (a): read in this process. The bytes it reads must be the camera's own.
    auto local = (*branches)[0].payload.to_tensor();
    if (!local || checksum(*local).value_or(0) != expected) ++local_errors;
    if (local && !same_storage(*local, *image)) bytes_copied += static_cast<uint64_t>(image->nbytes());
    // Branch (b): the second process. The frame is held until the peer says it is done.
    {
      std::lock_guard lock(stats.mutex);
      stats.in_flight.emplace((*branches)[1].sequence, std::make_pair(expected, (*branches)[1]));
    }
    if (auto sent = channel->first.send((*branches)[1]); !sent) {
      status = fail("channel", sent.error());
      break;
    }
    bytes_shared += 2 * static_cast<uint64_t>(image->layout().nbytes());
    ++frames;
    if (now_ns() - start >= static_cast<int64_t>(second) * 1'000'000'000) {
      std::lock_guard lock(stats.mutex);
      std::printf("t=%llus frames=%llu bytes_shared=%llu bytes_copied=%llu p50_latency_us=%lld in_flight=%zu\n",
                  static_cast<unsigned long long>(second), static_cast<unsigned long long>(frames - frames_at_second),
                  static_cast<unsigned long long>(bytes_shared), static_cast<unsigned long long>(bytes_copied),
                  static_cast<long long>(percentile(stats.latencies_us, 0.5)), stats.in_flight.size());
      std::fflush(stdout);
      frames_at_second = frames;
      ++second;
    }
  }
  { auto done = std::move(channel->first); }  // the peer sees the end of the stream
  int peer_status = 0;
  ::waitpid(peer, &peer_status, 0);
  collector.join();
  ::close(results[0]);
  std::lock_guard lock(stats.mutex);
  const uint64_t lost = stats.in_flight.size();
  const uint64_t errors = local_errors + stats.checksum_errors + lost;
  std::printf(
      "summary: frames=%llu bytes_shared=%llu bytes_copied=%llu p50_latency_us=%lld p99_latency_us=%lld "
      "checksum_errors=%llu\n",
      static_cast<unsigned long long>(frames), static_cast<unsigned long long>(bytes_shared),
      static_cast<unsigned long long>(bytes_copied), static_cast<long long>(percentile(stats.latencies_us, 0.5)),
      static_cast<long long>(percentile(stats.latencies_us, 0.99)), static_cast<unsigned long long>(errors));
  if (!WIFEXITED(peer_status) || WEXITSTATUS(peer_status) != 0) {
    std::fprintf(stderr, "memhal demo: the second process failed\n");
    return 1;
  }
  return status != 0 ? status : (errors ? 1 : 0);
}

}  // namespace memhal::cli
