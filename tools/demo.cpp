// memhal demo: the project's main job. A camera — a synthetic one filling NV12 frames taken
// from a TensorPool, or a real V4L2 device (--camera) whose frames are its capture buffers —
// feeds a Tee that fans each frame out to an in-process consumer, over a Channel to a second
// process (both checksum what they see) and to an ImageProcessor that makes the model input
// (letterboxed planar f32); with --serve PATH every frame also goes to each program connected to
// PATH. No payload byte is copied on the way.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
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
#include <tuple>
#include <utility>
#include <vector>

#include "args.hpp"
#include "commands.hpp"

extern char** environ;

namespace memhal::cli {
namespace {

constexpr std::string_view kUsage =
    "usage: memhal demo [--seconds S | --frames N] [--size WxH] [--fps F] [--memory shm|dmabuf]\n"
    "                   [--record FILE.mhrec] [--camera DEVICE] [--model-input WxH|none]\n"
    "                   [--serve PATH]\n"
    "  A camera fans frames out to an in-process consumer, a second process and a model-input\n"
    "  converter without copying them; prints per-second figures and a final summary line:\n"
    "    summary: frames=N bytes_shared=B bytes_copied=B p50_latency_us=U p99_latency_us=U\n"
    "             checksum_errors=N lost_frames=N preprocess_p50_us=U dropped_frames=N\n"
    "  --seconds S  run time, 0.001..1000000 (default 3)    --frames N  1..1000000000000\n"
    "  --size WxH   even sides up to 16384 (default 1280x720; with --camera: the device's)\n"
    "  --fps F      0.1..1000 (default 30; with --camera: the device's)\n"
    "  --camera DEVICE  a V4L2 capture device (memhal info lists them) instead of the synthetic\n"
    "               NV12 camera; latency counts from the driver's timestamp, dropped_frames are\n"
    "               the gaps in its sequence numbers\n"
    "  --model-input WxH  the third branch's letterboxed planar f32 model input (default\n"
    "               640x640); none leaves the branch out (preprocess_p50_us=0)\n"
    "  --serve PATH  also listen on PATH (a new socket) and send every frame to each program\n"
    "               that connects (memhalsrc socket=PATH, Channel::connect); a consumer that\n"
    "               leaves or fails is dropped and the demo goes on\n"
    "  Options take --name VALUE or --name=VALUE. Ctrl-C (SIGINT, or SIGTERM) stops the camera;\n"
    "  the second process drains what it was sent, the summary is printed, and the exit status\n"
    "  is as for a finished run. Exit status: 0 every frame checked and acknowledged; 1 an\n"
    "  error, a checksum error, or a second process that died or stalled (no frame acknowledged\n"
    "  for 3 s: it is named, killed, and the frames it held are lost_frames); 2 a usage error.\n";

// How long the second process may hold its oldest frame before it counts as stalled.
constexpr std::chrono::seconds kStallTimeout{3};

std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
void on_signal(int) {
  g_stop = true;
}

// SA_RESTART: a Ctrl-C must not turn the reads of the results pipe into errors.
void set_signal(int signal, void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(signal, &action, nullptr);
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
  // The camera process decides when the demo ends. A Ctrl-C reaches the whole process group;
  // this process keeps checking what it was sent until the camera closes the channel. A
  // camera that is gone is an error from write(), not a SIGPIPE.
  set_signal(SIGINT, SIG_IGN);
  set_signal(SIGTERM, SIG_IGN);
  set_signal(SIGPIPE, SIG_IGN);
  auto channel = ipc::Channel::adopt(UniqueFd(3));
  if (!channel) {
    std::fprintf(stderr, "demo peer: %s\n", channel.error().to_string().c_str());
    return 1;
  }
  for (;;) {
    auto frame = channel->receive_frame();
    if (!frame) {
      if (frame.error().code() == ErrorCode::Unavailable) return 0;  // the camera is done
      std::fprintf(stderr, "demo peer: %s\n", frame.error().to_string().c_str());
      return 1;
    }
    auto sum = checksum(*frame);
    PeerResult result{frame->sequence, sum ? *sum : 0, now_ns()};
    ssize_t written;
    do {
      written = ::write(4, &result, sizeof result);
    } while (written < 0 && errno == EINTR);
    if (written != static_cast<ssize_t>(sizeof result)) return 1;
  }
}

// ---- the camera side ----

struct Options {
  std::optional<double> seconds;
  std::optional<uint64_t> frames;
  int64_t width = 1280, height = 720;
  bool size_given = false;
  double fps = 30;
  bool fps_given = false;
  std::optional<MemoryKind> memory;
  std::string record;
  std::string camera;
  std::string serve;
  std::optional<std::pair<int64_t, int64_t>> model_input = std::pair<int64_t, int64_t>{640, 640};
};

Parsed<void> parse_option(const Argument& arg, Options& options) {
  if (arg.name == "--seconds") {
    auto seconds = parse_real(arg.value, 0.001, 1e6);
    if (!seconds) return tl::unexpected(seconds.error());
    options.seconds = *seconds;
  } else if (arg.name == "--frames") {
    auto frames = parse_integer(arg.value, 1, 1'000'000'000'000);
    if (!frames) return tl::unexpected(frames.error());
    options.frames = static_cast<uint64_t>(*frames);
  } else if (arg.name == "--fps") {
    auto fps = parse_real(arg.value, 0.1, 1000);
    if (!fps) return tl::unexpected(fps.error());
    options.fps = *fps;
    options.fps_given = true;
  } else if (arg.name == "--size") {
    auto size = parse_size(arg.value, 16384);
    if (!size) return tl::unexpected(size.error());
    std::tie(options.width, options.height) = *size;
    options.size_given = true;
  } else if (arg.name == "--camera") {
    options.camera = arg.value;
  } else if (arg.name == "--model-input") {
    if (arg.value == "none") {
      options.model_input.reset();
    } else {
      auto size = parse_size(arg.value, 16384);
      if (!size) return tl::unexpected(size.error());
      options.model_input = *size;
    }
  } else if (arg.name == "--memory") {
    options.memory = from_string<MemoryKind>(arg.value);
    if (!options.memory) return tl::unexpected("unknown memory kind '" + std::string(arg.value) + "'");
  } else if (arg.name == "--record") {
    options.record = arg.value;
  } else if (arg.name == "--serve") {
    if (arg.value.empty()) return tl::unexpected(std::string("needs a socket path"));
    options.serve = arg.value;
  } else {
    return tl::unexpected(std::string("unknown option"));
  }
  return {};
}

// The options, or a usage error naming the argument.
Parsed<Options> parse(std::span<const std::string_view> args) {
  auto arguments = split_arguments(args, {});
  if (!arguments) return tl::unexpected(arguments.error());
  Options options;
  for (const Argument& arg : *arguments) {
    if (arg.name.empty()) return tl::unexpected("unexpected argument '" + std::string(arg.value) + "'");
    if (auto parsed = parse_option(arg, options); !parsed) return tl::unexpected(about(arg.name, parsed.error()));
  }
  if (options.seconds && options.frames)
    return tl::unexpected(std::string("--seconds and --frames exclude each other"));
  if (!options.seconds && !options.frames) options.seconds = 3;
  if (!options.camera.empty() && options.memory)
    return tl::unexpected(std::string("--memory and --camera exclude each other (the camera's buffers are its own)"));
  return options;
}

// A frame the second process has not acknowledged yet: held (its pool tensor stays out) until
// it is, so the peer never reads a buffer the camera is drawing into again.
struct InFlight {
  uint64_t expected_checksum;
  Frame frame;
};

struct Stats {
  std::mutex mutex;
  std::map<uint64_t, InFlight> in_flight;  // by sequence: the oldest first
  std::vector<int64_t> latencies_us;
  uint64_t checksum_errors = 0;
  uint64_t peer_frames = 0;
  int64_t last_ack_ns = 0;  // when the second process last acknowledged a frame
};

// Reads the peer's results; releases each frame (back to the pool) once the peer is done.
// Ends when the second process has ended (its end of the pipe closes).
void collect(int pipe, Stats& stats) {
  PeerResult result{};
  for (;;) {
    const ssize_t got = ::read(pipe, &result, sizeof result);
    if (got < 0 && errno == EINTR) continue;
    if (got != static_cast<ssize_t>(sizeof result)) return;
    std::lock_guard lock(stats.mutex);
    stats.last_ack_ns = now_ns();
    auto it = stats.in_flight.find(result.sequence);
    if (it == stats.in_flight.end()) continue;
    if (it->second.expected_checksum != result.checksum) ++stats.checksum_errors;
    stats.latencies_us.push_back((result.done_ns - *it->second.frame.timing.pts) / 1000);
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

// The second process: started with SIGINT and SIGTERM ignored (dispositions that survive
// exec, so a Ctrl-C during its start cannot kill it), SIGPIPE too. Reaped exactly once; one
// still running when this goes out of scope is killed, so no path leaves it behind.
class PeerProcess {
 public:
  static std::optional<PeerProcess> spawn(int socket, int pipe) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, socket, 3);
    posix_spawn_file_actions_adddup2(&actions, pipe, 4);
    const char* argv[] = {"memhal", "demo", "--peer", nullptr};
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, const_cast<char**>(argv), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return std::nullopt;
    return PeerProcess(pid);
  }
  PeerProcess(PeerProcess&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)), status_(other.status_), ended_(other.ended_), killed_(other.killed_) {}
  PeerProcess& operator=(PeerProcess&&) = delete;
  ~PeerProcess() { kill(); }

  pid_t pid() const { return pid_; }
  // True once the process has ended; reaps it without waiting.
  bool ended() {
    if (!ended_ && pid_ > 0 && ::waitpid(pid_, &status_, WNOHANG) == pid_) ended_ = true;
    return ended_ || pid_ <= 0;
  }
  // Waits up to `timeout` for the process to end.
  bool wait_for_end(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!ended() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return ended();
  }
  // Ends a process that will not end by itself (a stopped one included) and reaps it.
  void kill() {
    if (ended()) return;
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
    ended_ = killed_ = true;
  }
  bool succeeded() const { return ended_ && !killed_ && WIFEXITED(status_) && WEXITSTATUS(status_) == 0; }
  // How it ended, for a message: "exited with status 1", "was killed by signal 9".
  std::string how() const {
    if (killed_) return "was killed by the demo";
    if (WIFEXITED(status_)) return "exited with status " + std::to_string(WEXITSTATUS(status_));
    if (WIFSIGNALED(status_)) {
      return "was killed by signal " + std::to_string(WTERMSIG(status_)) + " (" + strsignal(WTERMSIG(status_)) + ")";
    }
    return "ended";
  }

 private:
  explicit PeerProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  int status_ = 0;
  bool ended_ = false;
  bool killed_ = false;
};

// Why the camera stopped.
enum class Stop { Done, Interrupted, PeerGone, PeerStalled, Failed };

Stop failed(const char* what, const Error& error) {
  fail(what, error);
  return Stop::Failed;
}

// Whether the second process still keeps up: `PeerGone` once it has ended, `PeerStalled` when
// it has held its oldest frame for `kStallTimeout`. Says which, by name and pid, on stderr.
std::optional<Stop> check_peer(PeerProcess& peer, Stats& stats) {
  if (peer.ended()) {
    std::fprintf(stderr, "memhal demo: the second process (pid %d) %s while the camera ran\n", peer.pid(),
                 peer.how().c_str());
    return Stop::PeerGone;
  }
  std::lock_guard lock(stats.mutex);
  if (stats.in_flight.empty()) return std::nullopt;
  const auto& [sequence, oldest] = *stats.in_flight.begin();
  const int64_t held_ns = now_ns() - *oldest.frame.timing.pts;
  if (held_ns < std::chrono::nanoseconds(kStallTimeout).count()) return std::nullopt;
  std::fprintf(stderr,
               "memhal demo: the second process (pid %d) stalled: it has not acknowledged frame %llu for %.1f s "
               "(%zu frames held); stopping it\n",
               peer.pid(), static_cast<unsigned long long>(sequence), static_cast<double>(held_ns) / 1e9,
               stats.in_flight.size());
  return Stop::PeerStalled;
}

// Sleeps until `deadline`, or less when a signal asks to stop.
void sleep_until_or_stop(std::chrono::steady_clock::time_point deadline) {
  while (!g_stop && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        deadline - std::chrono::steady_clock::now(), std::chrono::milliseconds(20)));
  }
}

// The third branch: every frame into a letterboxed planar f32 model input.
struct ModelInput {
  ImageProcessor processor;
  Tensor input;
  std::vector<int64_t> preprocess_us;
};

// --serve: the programs connected to the listener, each sent every frame. Each consumer's frames
// are held through its own token (`Tensor::held_by`), so the frames a consumer has not released
// are counted (the token's owners) without asking the channel.
struct Server {
  struct Consumer {
    ipc::Channel channel;
    std::shared_ptr<int> token = std::make_shared<int>(0);
    std::size_t held() const noexcept { return static_cast<std::size_t>(token.use_count() - 1); }
  };
  ipc::Listener listener;
  std::string path;
  std::vector<Consumer> consumers;
  uint64_t connected = 0, frames_sent = 0;

  // Takes whoever connected since the last frame, without waiting.
  void accept_new() {
    for (;;) {
      auto consumer = listener.accept(std::chrono::milliseconds(0));
      if (!consumer) {
        if (consumer.error().code() != ErrorCode::Busy) {
          std::fprintf(stderr, "memhal demo: --serve %s: %s\n", path.c_str(), consumer.error().to_string().c_str());
        }
        return;
      }
      consumers.push_back(Consumer{std::move(*consumer)});
      std::printf("memhal demo: a consumer connected on %s (%zu now)\n", path.c_str(), consumers.size());
      ++connected;
    }
  }
  // Sends `frame` to every consumer, held through its token; one whose send fails is dropped.
  void send(const Frame& frame) {
    auto tensor = frame.payload.to_tensor();
    for (auto it = consumers.begin(); it != consumers.end();) {
      Result<void> sent = tensor ? Result<void>() : Result<void>(unexpected(tensor.error()));
      if (tensor) {
        auto payload = MemoryDomain::from_tensor(tensor->held_by(KeepAlive::of(it->token)));
        sent = payload ? it->channel.send(Frame{std::move(*payload), frame.timing, frame.sequence, frame.metadata})
                       : Result<void>(unexpected(payload.error()));
      }
      if (!sent) {
        std::fprintf(stderr, "memhal demo: --serve %s: dropping a consumer: %s\n", path.c_str(),
                     sent.error().to_string().c_str());
        it = consumers.erase(it);
      } else {
        ++frames_sent;
        ++it;
      }
    }
  }
  // Drops the consumers that hold the most frames, two or more (called once the camera has
  // waited `kStallTimeout` for a buffer: a consumer that keeps up holds one or none); how many.
  std::size_t drop_holders() {
    std::size_t most = 0;
    for (const auto& c : consumers) most = std::max(most, c.held());
    if (most < 2) return 0;
    const auto before = consumers.size();
    std::erase_if(consumers, [&](const Consumer& c) {
      if (c.held() != most) return false;
      std::fprintf(stderr,
                   "memhal demo: --serve %s: a consumer has kept %zu frames while the camera waited %lld s for a "
                   "free buffer; dropping it\n",
                   path.c_str(), most, static_cast<long long>(kStallTimeout.count()));
      return true;
    });
    return before - consumers.size();
  }
};

// Everything the camera loop works with.
struct Camera {
  const Options& options;
  std::optional<TensorPool>& pool;    // the synthetic camera's frames
  std::optional<V4l2Camera>& device;  // or a real camera's
  Tee& tee;
  ipc::Channel& channel;
  std::optional<Recorder>& recorder;
  PeerProcess& peer;
  Stats& stats;
  std::optional<ModelInput>& model;
  std::optional<Server>& server;
  int64_t start = now_ns();
  uint64_t frames = 0, bytes_shared = 0, bytes_copied = 0, local_errors = 0;
};

uint64_t dropped_frames(const Camera& camera) {
  return camera.device ? camera.device->stats().dropped : 0;
}

// A free pool tensor. While the pool is exhausted (the second process holds every frame),
// checks that the peer is alive and keeping up, and that no signal asked to stop. A --serve
// consumer that keeps frames while the camera waits `kStallTimeout` is dropped, and since the
// frames it keeps stay out until its process lets go, the camera goes on with a new pool.
Result<Tensor> acquire(Camera& camera, Stop& stop) {
  const int64_t since = now_ns();
  for (;;) {
    auto image = camera.pool->acquire(std::chrono::milliseconds(100));
    if (image || image.error().code() != ErrorCode::Busy) return image;
    if (g_stop) {
      stop = Stop::Interrupted;
      return image;
    }
    if (auto problem = check_peer(camera.peer, camera.stats)) {
      stop = *problem;
      return image;
    }
    if (camera.server && now_ns() - since >= std::chrono::nanoseconds(kStallTimeout).count() &&
        camera.server->drop_holders() > 0) {
      MEMHAL_ASSIGN_OR_RETURN(
          TensorPool pool, TensorPool::create(camera.pool->layout(), camera.pool->capacity(), camera.pool->memory()));
      camera.pool.emplace(std::move(pool));
    }
  }
}

// The real camera's next frame. While consumers hold every capture buffer (the second process
// is behind), checks that it is alive and keeping up, and that no signal asked to stop; a
// camera that delivers nothing for kStallTimeout is an error.
Result<Frame> capture(Camera& camera, Stop& stop) {
  const int64_t since = now_ns();
  for (;;) {
    auto frame = camera.device->next_frame(std::chrono::milliseconds(100));
    if (frame || frame.error().code() != ErrorCode::Busy) return frame;
    if (now_ns() - since >= std::chrono::nanoseconds(kStallTimeout).count()) return frame;
    if (g_stop) {
      stop = Stop::Interrupted;
      return frame;
    }
    if (auto problem = check_peer(camera.peer, camera.stats)) {
      stop = *problem;
      return frame;
    }
  }
}

// The next frame and its image: drawn into a pool tensor, or captured.
Result<std::pair<Frame, Tensor>> next_frame(Camera& camera, Stop& stop) {
  if (camera.device) {
    MEMHAL_ASSIGN_OR_RETURN(Frame frame, capture(camera, stop));
    MEMHAL_ASSIGN_OR_RETURN(Tensor image, frame.payload.to_tensor());
    return std::pair{std::move(frame), std::move(image)};
  }
  MEMHAL_ASSIGN_OR_RETURN(Tensor image, acquire(camera, stop));
  MEMHAL_TRY(draw(image, camera.frames));
  MEMHAL_ASSIGN_OR_RETURN(auto payload, MemoryDomain::from_tensor(image));
  const auto frame_ns = static_cast<int64_t>(1e9 / camera.options.fps);
  Frame frame{std::move(payload), {now_ns(), std::nullopt, frame_ns}, camera.frames, {}};
  return std::pair{std::move(frame), std::move(image)};
}

// Takes one frame, fans it out, checks branch (a), sends branch (b) to the second process and
// turns branch (c) into the model input.
Stop produce(Camera& camera) {
  Stop stop = Stop::Failed;
  auto next = next_frame(camera, stop);
  if (!next) return stop == Stop::Failed ? failed("camera", next.error()) : stop;
  auto& [frame, image_tensor] = *next;
  const Tensor* image = &image_tensor;
  auto expected_sum = checksum(*image);
  if (!expected_sum) return failed("camera", expected_sum.error());
  const uint64_t expected = *expected_sum;
  if (camera.recorder) {
    if (auto written = camera.recorder->write(*image, *frame.timing.pts - camera.start); !written) {
      return failed("recording", written.error());
    }
  }
  auto branches = camera.tee.push(std::move(frame));
  if (!branches) return failed("tee", branches.error());
  // Branch (a): read in this process. The bytes it reads must be the camera's own.
  auto local = (*branches)[0].payload.to_tensor();
  if (!local || checksum(*local).value_or(0) != expected) ++camera.local_errors;
  if (local && !same_storage(*local, *image)) camera.bytes_copied += static_cast<uint64_t>(image->nbytes());
  // Branch (b): the second process. The frame is held until the peer says it is done.
  {
    std::lock_guard lock(camera.stats.mutex);
    camera.stats.in_flight.emplace((*branches)[1].sequence, InFlight{expected, (*branches)[1]});
  }
  if (auto sent = camera.channel.send((*branches)[1]); !sent) {
    // A peer that has gone closes its socket: say how it ended rather than "broken pipe".
    if (sent.error().code() == ErrorCode::Unavailable && camera.peer.wait_for_end(std::chrono::seconds(1))) {
      return *check_peer(camera.peer, camera.stats);
    }
    return failed("channel", sent.error());
  }
  // --serve: the same frame to every connected consumer (each channel holds it until released).
  if (camera.server) {
    camera.server->accept_new();
    camera.server->send((*branches)[1]);
  }
  // Branch (c): the model input, converted straight from the camera's buffer.
  if (camera.model) {
    auto source = (*branches)[2].payload.to_tensor();
    if (!source) return failed("model input", source.error());
    if (!same_storage(*source, *image)) camera.bytes_copied += static_cast<uint64_t>(image->nbytes());
    ConvertOptions letterbox;
    letterbox.resize = ResizeMode::Letterbox;
    const int64_t begin = now_ns();
    if (auto converted = camera.model->processor.convert(*source, camera.model->input, letterbox); !converted) {
      return failed("model input", converted.error());
    }
    camera.model->preprocess_us.push_back((now_ns() - begin) / 1000);
  }
  camera.bytes_shared += (camera.model ? 3 : 2) * static_cast<uint64_t>(image->layout().nbytes());
  ++camera.frames;
  return Stop::Done;
}

// Runs the camera until the frame count or the time is reached, a signal, or a failure.
Stop run_camera(Camera& camera) {
  const auto period = std::chrono::nanoseconds(static_cast<int64_t>(1e9 / camera.options.fps));
  auto next_frame = std::chrono::steady_clock::now();
  uint64_t second = 1, frames_at_second = 0;
  for (;;) {
    if (camera.options.frames && camera.frames >= *camera.options.frames) return Stop::Done;
    if (camera.options.seconds && static_cast<double>(now_ns() - camera.start) / 1e9 >= *camera.options.seconds) {
      return Stop::Done;
    }
    if (!camera.device) sleep_until_or_stop(next_frame);  // a real camera keeps its own time
    if (g_stop) return Stop::Interrupted;
    if (auto problem = check_peer(camera.peer, camera.stats)) return *problem;
    next_frame += period;
    if (const Stop stop = produce(camera); stop != Stop::Done) return stop;
    if (now_ns() - camera.start >= static_cast<int64_t>(second) * 1'000'000'000) {
      std::lock_guard lock(camera.stats.mutex);
      std::printf(
          "t=%llus frames=%llu bytes_shared=%llu bytes_copied=%llu p50_latency_us=%lld in_flight=%zu "
          "preprocess_p50_us=%lld dropped_frames=%llu\n",
          static_cast<unsigned long long>(second), static_cast<unsigned long long>(camera.frames - frames_at_second),
          static_cast<unsigned long long>(camera.bytes_shared), static_cast<unsigned long long>(camera.bytes_copied),
          static_cast<long long>(percentile(camera.stats.latencies_us, 0.5)), camera.stats.in_flight.size(),
          static_cast<long long>(camera.model ? percentile(camera.model->preprocess_us, 0.5) : 0),
          static_cast<unsigned long long>(dropped_frames(camera)));
      std::fflush(stdout);
      frames_at_second = camera.frames;
      ++second;
    }
  }
}

// After the channel closed: the second process checks what it still holds and exits. One
// that acknowledges nothing for `kStallTimeout` (or was already found stalled) is killed.
Stop finish_peer(PeerProcess& peer, Stats& stats, Stop stop) {
  if (stop == Stop::PeerStalled) {
    peer.kill();
    return stop;
  }
  const int64_t closed_ns = now_ns();
  while (!peer.wait_for_end(std::chrono::milliseconds(20))) {
    int64_t progress_ns;
    std::size_t held;
    {
      std::lock_guard lock(stats.mutex);
      progress_ns = std::max(closed_ns, stats.last_ack_ns);
      held = stats.in_flight.size();
    }
    if (now_ns() - progress_ns >= std::chrono::nanoseconds(kStallTimeout).count()) {
      std::fprintf(stderr,
                   "memhal demo: the second process (pid %d) stalled: it acknowledged nothing for %lld s after the "
                   "camera stopped (%zu frames held); stopping it\n",
                   peer.pid(), static_cast<long long>(kStallTimeout.count()), held);
      peer.kill();
      return Stop::PeerStalled;
    }
  }
  return stop;
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
    std::cerr << "memhal demo: " << options.error() << "\n" << kUsage;
    return 2;
  }
  std::optional<TensorPool> pool;
  std::optional<V4l2Camera> device;
  if (options->camera.empty()) {
    const MemoryKind memory =
        options->memory.value_or(is_available(MemoryKind::DmaBuf) ? MemoryKind::DmaBuf : MemoryKind::Shm);
    auto layout = Layout::image(options->width, options->height, PixelFormat::Nv12);
    if (!layout) return fail("frame layout", layout.error());
    auto created = TensorPool::create(*layout, 8, memory);
    if (!created) return fail("frame pool", created.error());
    pool.emplace(std::move(*created));
  } else {
    // NV12 where the device offers it, else its own format; 8 buffers, as the pool has.
    CameraOptions camera_options;
    camera_options.width = options->size_given ? static_cast<uint32_t>(options->width) : 0;
    camera_options.height = options->size_given ? static_cast<uint32_t>(options->height) : 0;
    camera_options.fps = options->fps_given ? options->fps : 0;
    camera_options.buffers = 8;
    camera_options.format = PixelFormat::Nv12;
    auto opened = V4l2Camera::open(options->camera, camera_options);
    if (!opened && opened.error().code() == ErrorCode::InvalidArgument) {
      camera_options.format.reset();
      opened = V4l2Camera::open(options->camera, camera_options);
    }
    if (!opened) return fail("camera", opened.error());
    device.emplace(std::move(*opened));
  }
  std::optional<ModelInput> model;
  if (options->model_input) {
    auto processor = ImageProcessor::create();
    if (!processor) return fail("model input", processor.error());
    auto input = Tensor::image(options->model_input->first, options->model_input->second, PixelFormat::PlanarRgb,
                               MemoryKind::Mem, DType::F32);
    if (!input) return fail("model input", input.error());
    model.emplace(ModelInput{std::move(*processor), std::move(*input), {}});
  }
  auto tee = Tee::create(model ? 3 : 2);
  if (!tee) return fail("tee", tee.error());
  auto channel = ipc::Channel::pair();
  if (!channel) return fail("channel", channel.error());
  std::optional<Server> server;
  if (!options->serve.empty()) {
    struct stat existing {};
    if (::lstat(options->serve.c_str(), &existing) == 0) {
      std::fprintf(stderr, "memhal demo: --serve %s: the path exists (remove it, or choose another)\n",
                   options->serve.c_str());
      return 1;
    }
    auto listener = ipc::Listener::bind(options->serve);
    if (!listener) return fail("--serve", listener.error());
    server.emplace(Server{std::move(*listener), options->serve, {}});
  }
  int results[2];
  if (::pipe2(results, O_CLOEXEC) != 0) return fail("results pipe", Error(ErrorCode::Io, std::strerror(errno), errno));
  UniqueFd results_read(results[0]);
  // A dead peer is an error from send and write, never a SIGPIPE; and the peer starts with
  // SIGINT and SIGTERM ignored (see PeerProcess) before this process catches them.
  set_signal(SIGPIPE, SIG_IGN);
  set_signal(SIGINT, SIG_IGN);
  set_signal(SIGTERM, SIG_IGN);
  auto peer = PeerProcess::spawn(channel->second.fd(), results[1]);
  ::close(results[1]);
  set_signal(SIGINT, on_signal);
  set_signal(SIGTERM, on_signal);
  if (!peer) return fail("second process", Error(ErrorCode::Io, "posix_spawn of /proc/self/exe failed"));
  { auto peer_end = std::move(channel->second); }  // the child has its copy
  std::optional<Recorder> recorder;
  if (!options->record.empty()) {
    auto created = Recorder::create(options->record);
    if (!created) return fail("recording", created.error());
    recorder.emplace(std::move(*created));
  }

  if (pool) {
    std::printf("memhal demo: %lldx%lld nv12 at %g fps, %zu %s buffers, second process pid %d\n",
                static_cast<long long>(options->width), static_cast<long long>(options->height), options->fps,
                pool->capacity(), std::string(to_string(pool->memory())).c_str(), peer->pid());
  } else {
    const CameraConfig& config = device->config();
    std::printf("memhal demo: camera %s %ux%u %s at %g fps, %u buffers (io %s%s%s), second process pid %d\n",
                config.path.c_str(), config.width, config.height, fourcc_to_string(config.fourcc).c_str(), config.fps,
                config.buffers, to_string(config.io), config.io_notes.empty() ? "" : ": ", config.io_notes.c_str(),
                peer->pid());
  }
  if (server) std::printf("memhal demo: serving every frame on %s\n", server->path.c_str());
  if (model) {
    std::printf("memhal demo: model input %lldx%lld planar_rgb f32, letterboxed, on the %s backend\n",
                static_cast<long long>(options->model_input->first),
                static_cast<long long>(options->model_input->second),
                std::string(to_string(model->processor.backend())).c_str());
  }
  std::fflush(stdout);
  Stats stats;
  std::thread collector(collect, results_read.get(), std::ref(stats));
  Camera camera{*options, pool, device, *tee, channel->first, recorder, *peer, stats, model, server};
  Stop stop = run_camera(camera);
  if (stop == Stop::Interrupted) std::fprintf(stderr, "memhal demo: interrupted; the camera stopped\n");
  { auto done = std::move(channel->first); }  // the peer sees the end of the stream
  if (server) {
    std::printf("memhal demo: served %llu frames to %llu consumers on %s\n",
                static_cast<unsigned long long>(server->frames_sent),
                static_cast<unsigned long long>(server->connected), server->path.c_str());
    server.reset();  // the consumers see the end of the stream; the socket file goes
  }
  stop = finish_peer(*peer, stats, stop);
  collector.join();  // the peer has ended: its end of the pipe is closed

  std::lock_guard lock(stats.mutex);
  const uint64_t lost = stats.in_flight.size();  // sent, never acknowledged: lost to the peer
  const uint64_t errors = camera.local_errors + stats.checksum_errors;
  std::printf(
      "summary: frames=%llu bytes_shared=%llu bytes_copied=%llu p50_latency_us=%lld p99_latency_us=%lld "
      "checksum_errors=%llu lost_frames=%llu preprocess_p50_us=%lld dropped_frames=%llu\n",
      static_cast<unsigned long long>(camera.frames), static_cast<unsigned long long>(camera.bytes_shared),
      static_cast<unsigned long long>(camera.bytes_copied), static_cast<long long>(percentile(stats.latencies_us, 0.5)),
      static_cast<long long>(percentile(stats.latencies_us, 0.99)), static_cast<unsigned long long>(errors),
      static_cast<unsigned long long>(lost), static_cast<long long>(model ? percentile(model->preprocess_us, 0.5) : 0),
      static_cast<unsigned long long>(dropped_frames(camera)));
  std::fflush(stdout);
  stats.in_flight.clear();                                            // back to the pool before it goes
  if (stop == Stop::PeerGone || stop == Stop::PeerStalled) return 1;  // said so when found
  if (!peer->succeeded()) {
    std::fprintf(stderr, "memhal demo: the second process (pid %d) %s\n", peer->pid(), peer->how().c_str());
    return 1;
  }
  return stop == Stop::Failed || errors != 0 || lost != 0 ? 1 : 0;
}

}  // namespace memhal::cli
