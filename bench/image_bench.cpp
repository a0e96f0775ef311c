// The model-input job every frame: a camera frame (1280x720, 1920x1080 or 3840x2160, NV12 or YUYV) ->
// 640x640 letterboxed, as RGB u8 interleaved or planar normalised f32 / f16 / i8 (NCHW).
// memhal against the OpenCV chain its users write (cvtColor + resize + copyMakeBorder +
// convertTo/subtract/divide/split), the libyuv chain (scale in YUV + convert + pad) and the
// memory bound, all in one run.
//
// Cold frames are the headline: a camera's DMA writes each frame into memory the CPU has not
// touched, so every job (memhal and peers alike) cycles through a ring of at least 16 distinct
// source frames holding far more bytes than the last-level cache (at least 256 MB and 8 x the
// LLC: a cache that is not strictly LRU keeps part of a ring only a few times its size, and a
// VM may not say how big its cache is); the bound is a cold memcpy of the bytes the job reads
// and writes, measured the same way, and the run starts by showing that a ring that size is
// cold here (memcpy from rings of growing size levels off well below it). The warm table
// repeats the jobs on one frame (then everything sits in the caches). The goals of the CPU
// issue are printed at the end as ratios with met / NOT met, each from a run that times its two
// sides in turn (see paired_job), beside the ratio of the tables' separate medians.
#include <benchmark/benchmark.h>
#include <hwy/targets.h>
#include <libyuv.h>

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memhal/image_processor.hpp>
#include <memory>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace memhal;

constexpr int kDst = 640;
constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};

// ---- the last-level cache and the frame rings ----

struct Cache {
  int64_t bytes = 8 << 20;
  std::string source = "assumed (no /sys/devices/system/cpu/cpu0/cache/index3/size)";
};

const Cache& llc() {
  static const Cache cache = [] {
    Cache c;
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index3/size");
    std::string text;
    if (in >> text && !text.empty()) {
      int64_t n = std::atoll(text.c_str());
      const char unit = text.back();
      if (unit == 'K') n <<= 10;
      if (unit == 'M') n <<= 20;
      if (n > 0) c.bytes = n, c.source = "from /sys/devices/system/cpu/cpu0/cache/index3/size";
    }
    return c;
  }();
  return cache;
}

// The bytes a cold ring holds at least. Twice an 8 MB LLC was not cold on this project's
// Zen 5 VM (no cache sizes in /sys): a 4 MB memcpy from a ring of 64 MB took 150 us, from
// 128 MB and more 175 us, and the 1080p jobs read 15-30 % faster from 16-frame rings than from
// rings of 256 MB.
int64_t cold_bytes() {
  return std::max<int64_t>(int64_t{256} << 20, 8 * llc().bytes);
}

// Distinct buffers of `bytes` each: at least 16, and at least cold_bytes() in all.
int ring_size(int64_t bytes) {
  return static_cast<int>(std::max<int64_t>(16, (cold_bytes() + bytes - 1) / bytes));
}

// One arena of cold_bytes() that the bound's copies read from, a different stretch each time.
struct Arena {
  std::vector<char> bytes;
  // Every page different, so that nothing below the process can share them.
  Arena() : bytes(static_cast<std::size_t>(cold_bytes()) + (64 << 20)) {
    for (std::size_t i = 0; i + 8 <= bytes.size(); i += 8) {
      const uint64_t word = i * 0x9E3779B97F4A7C15u;
      std::memcpy(bytes.data() + i, &word, 8);
    }
  }
  // Source k of a ring of buffers of `n` bytes, page-aligned, cycling through cold_bytes().
  const char* slot(std::size_t n, std::size_t k) const {
    const std::size_t stride = (n + 4095) & ~std::size_t{4095};
    const std::size_t count = std::max<std::size_t>(16, static_cast<std::size_t>(cold_bytes()) / stride);
    const auto base = reinterpret_cast<uintptr_t>(bytes.data());
    const uintptr_t aligned = (base + 4095) & ~uintptr_t{4095};
    const std::size_t offset = (k % count) * stride % (bytes.size() - stride - 4096);
    return reinterpret_cast<const char*>(aligned + offset);
  }
};

const Arena& arena() {
  static const Arena a;
  return a;
}

// The evidence that rings of cold_bytes() are cold on this machine: a 4 MB memcpy from rings
// of growing size, medians in microseconds.
void print_coldness() {
  constexpr std::size_t kBytes = 4 << 20;
  std::vector<char> dst(kBytes, 1);
  std::printf("cold check, median of a 4 MB memcpy from a ring of:");
  for (int64_t ring = 4 << 20; ring <= cold_bytes(); ring *= 2) {
    const std::size_t count = static_cast<std::size_t>(ring) / kBytes;
    std::vector<double> us;
    for (std::size_t k = 0; k < std::max<std::size_t>(200, 3 * count); ++k) {
      const char* from = arena().slot(kBytes, k % count);
      const auto t0 = std::chrono::steady_clock::now();
      std::memcpy(dst.data(), from, kBytes);
      benchmark::DoNotOptimize(dst.data());
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
    std::printf(" %lld MB %.0f us%s", static_cast<long long>(ring >> 20), us[us.size() / 2],
                ring * 2 <= cold_bytes() ? "," : "\n");
  }
}

template <typename T>
T must(Result<T> result) {
  if (!result) {
    std::fprintf(stderr, "bench setup failed: %s\n", result.error().to_string().c_str());
    std::abort();
  }
  return std::move(*result);
}

// Camera-like frames: a gradient with noise, packed (pitch = row bytes) like V4L2 buffers;
// each frame of a ring differs.
Tensor frame(PixelFormat format, int w, int h, uint32_t seed) {
  Tensor t = must(Tensor::image(w, h, format, MemoryKind::Mem, DType::U8, 1));
  auto map = *t.map(CpuAccess::Write);
  std::byte* first = t.layout().is_multi_plane() ? map.plane(0) : map.data();
  uint32_t x = 2463534242u ^ (seed * 2654435761u);
  for (int64_t i = 0; i < t.nbytes(); ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    first[i] = std::byte((i * 7 + (x & 15) + seed) & 0xFF);
  }
  return t;
}

struct Source {
  PixelFormat format;
  int w, h;
  bool operator<(const Source& o) const { return std::tie(format, w, h) < std::tie(o.format, o.w, o.h); }
  bool operator==(const Source&) const = default;
};

// The cold ring of a source kind, made once; its first frame doubles as the warm frame.
// A run that visits fewer frames (--profile under valgrind) makes only 16 (each is cold once):
// the same 16 for any count up to 16, so that the difference of two such runs is conversions.
std::vector<Tensor>& ring(const Source& s, int64_t visits = INT64_MAX) {
  static std::map<Source, std::vector<Tensor>> rings;
  auto& r = rings[s];
  if (r.empty()) {
    const int64_t bytes = must(Tensor::image(s.w, s.h, s.format, MemoryKind::Mem, DType::U8, 1)).nbytes();
    const int n = static_cast<int>(std::min<int64_t>(ring_size(bytes), std::max<int64_t>(visits, 16)));
    for (int i = 0; i < n; ++i) r.push_back(frame(s.format, s.w, s.h, static_cast<uint32_t>(i)));
  }
  return r;
}

// The next source of a run: frame k of the ring in turn (cold), or always frame 0 (warm).
struct Cycle {
  std::vector<Tensor>* frames;
  bool cold;
  std::size_t k = 0;
  const Tensor& next() {
    const Tensor& t = (*frames)[cold ? k : 0];
    k = (k + 1) % frames->size();
    return t;
  }
};

// ---- timing ----

// Per repetition: per-iteration CPU time of the calling thread, and wall time; tables use
// medians over repetitions. The wall clock is read inside the CPU clock: reading the thread's
// CPU time is a system call here (1.4 us; the wall clock's 0.03 us), and two of them in every
// wall time were 1 % of a 1080p conversion on one thread and 2.5 % on two.
std::map<std::string, std::vector<double>> g_cpu, g_wall, g_ratio;

double median(std::map<std::string, std::vector<double>>& runs, const std::string& name) {
  std::vector<double>& v = runs[name];
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 != 0 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void timed(benchmark::State& state, const std::string& name, const std::function<void()>& fn) {
  (void)name;  // the registered name; the reporter files the figures under it
  double wall = 0, cpu = 0;
  int64_t n = 0;
  // One call before the clock starts: each run makes its own processor and destination, whose
  // first call pays for plans and for faulting in fresh pages (4.9 MB for planar f32); a user
  // reuses both. Short repetitions paid it as a visible share of their few iterations.
  fn();
  for (auto _ : state) {
    const double c0 = thread_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    cpu += thread_cpu_seconds() - c0;
    wall += std::chrono::duration<double>(t1 - t0).count();
    ++n;
  }
  state.counters["cpu_ms"] = 1e3 * cpu / static_cast<double>(n);
  state.counters["wall_ms"] = 1e3 * wall / static_cast<double>(n);
}

// Files the figures of each finished run (one per repetition; not Google Benchmark's trial
// runs that size the iteration count, nor its aggregates) for the tables.
class Recorder : public benchmark::ConsoleReporter {
 public:
  // Colour only on a terminal: the tables are meant to be saved and pasted.
  Recorder() : ConsoleReporter(isatty(STDOUT_FILENO) != 0 ? OO_Defaults : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      const std::string name = run.run_name.function_name;
      const auto cpu = run.counters.find("cpu_ms");
      const auto wall = run.counters.find("wall_ms");
      if (cpu != run.counters.end()) g_cpu[name].push_back(1e-3 * cpu->second.value);
      if (wall != run.counters.end()) g_wall[name].push_back(1e-3 * wall->second.value);
      const auto ratio = run.counters.find("a_per_b");  // the paired runs
      if (ratio != run.counters.end()) g_ratio[name].push_back(ratio->second.value);
      const auto registers = run.counters.find("registers_1t_per_2t");
      if (registers != run.counters.end()) g_ratio[name + "/registers"].push_back(registers->second.value);
      for (const char* threads : {"1t", "2t"}) {  // the paced rows time two processors in turn
        const auto each = run.counters.find(std::string("wall_") + threads + "_ms");
        if (each != run.counters.end()) g_wall[name + "/" + threads].push_back(1e-3 * each->second.value);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

// ---- the jobs ----

enum class Out { RgbU8, F32, F16, I8 };

const char* out_name(Out o) {
  switch (o) {
    case Out::RgbU8: return "rgb_u8";
    case Out::F32: return "f32_planar";
    case Out::F16: return "f16_planar";
    case Out::I8: return "i8_planar";
  }
  return "?";
}

int64_t out_bytes(Out o) {
  const int64_t px = int64_t{kDst} * kDst;
  switch (o) {
    case Out::RgbU8:
    case Out::I8: return 3 * px;
    case Out::F16: return 6 * px;
    case Out::F32: return 12 * px;
  }
  return 0;
}

struct Job {
  Source src;
  Out out;
  Interpolation interpolation = Interpolation::Bilinear;
  std::string key() const {
    return std::string(src.format == PixelFormat::Nv12 ? "nv12" : "yuyv") +
           (src.w > 1920   ? "_4k"
            : src.w < 1920 ? "_720p"
                           : "_1080p") +
           "/" + out_name(out) + (interpolation == Interpolation::Area ? "_area" : "");
  }
  int64_t in_bytes() const { return int64_t{src.w} * src.h * (src.format == PixelFormat::Nv12 ? 3 : 4) / 2; }
  int content_h() const { return kDst * src.h / src.w; }
};

std::string run_name(const std::string& who, const Job& job, bool cold) {
  return std::string(cold ? "cold/" : "warm/") + who + "/" + job.key();
}

ConvertOptions memhal_options(const Job& job) {
  ConvertOptions o;
  o.resize = ResizeMode::Letterbox;
  o.interpolation = job.interpolation;
  if (job.out != Out::RgbU8) {
    o.mean = {kMean[0], kMean[1], kMean[2], 0};
    o.std = {kStd[0], kStd[1], kStd[2], 1};
  }
  return o;
}

// The pages every memhal run, every bound's memcpy and the peers' outputs (PeerOutputs) write,
// from their first byte on (the largest, the bound of 4K YUYV -> f32, writes 10.7 MB). On the Zen 3 VM the same job ran
// up to a fifth faster or slower from one destination allocation to the next, steadily within a process (2 MB pages no
// different): jobs with destinations of their own drew different lots, and the ratio of two jobs carried them (f16 /
// f32 0.72x with a destination each, 0.93x on the same pages twenty minutes later).
std::byte* destination_pages() {
  static const Tensor pages = must(Tensor::create({int64_t{16} << 20}, DType::U8, MemoryKind::Mem));
  static std::byte* const data = (*pages.map(CpuAccess::Write)).data();  // heap memory: outlives the map
  return data;
}

Tensor memhal_dst(Out out) {
  const DType dtype = out == Out::F32   ? DType::F32
                      : out == Out::F16 ? DType::F16
                      : out == Out::I8  ? DType::I8
                                        : DType::U8;
  const Layout layout =
      must(Layout::image(kDst, kDst, out == Out::RgbU8 ? PixelFormat::Rgb : PixelFormat::PlanarRgb, dtype, 1));
  return must(Tensor::wrap(static_cast<void*>(destination_pages()), layout, [] {}));
}

// What every memhal run of a job sets up: a destination, a processor on `threads` threads and
// the job's options (its frames come from a Cycle of the caller's).
struct MemhalRun {
  MemhalRun(const Job& job, unsigned threads)
      : dst(memhal_dst(job.out)),
        proc(std::move(*ImageProcessor::create({.threads = threads, .backend = ImageBackend::Cpu}))),
        options(memhal_options(job)) {}
  void convert(const Tensor& frame) {
    if (!proc.convert(frame, dst, options)) std::abort();
  }
  Tensor dst;
  ImageProcessor proc;
  ConvertOptions options;
};

// One call of a job: a conversion of the next frame of `frames` (which two calls of a paired run
// may share), what the tables time over and over and the paired runs in turn.
using Call = std::function<void()>;

Call memhal_call(const Job& job, const std::shared_ptr<Cycle>& frames, unsigned threads) {
  auto run = std::make_shared<MemhalRun>(job, threads);
  return [run, frames] { run->convert(frames->next()); };
}

// Frames at a camera's pace, 33 ms apart (30 fps) with the CPU idle in between, as in a live
// pipeline; the tables convert back to back. Between paced frames the caches fill with other
// work, the pool's workers stop polling and block, and an idle vCPU may be descheduled by its
// host. Wall time of the conversion only, cold ring. The one-thread and two-thread processors
// take frames in turn, so that a slow spell of the host meets both alike (run one after the
// other, their medians differed by more than the hand-off they are there to show).
constexpr auto kFrameGap = std::chrono::milliseconds(33);
constexpr int kPacedFrames = 30;  // of each processor, a repetition

std::string paced_name(const Job& job) {
  return "paced/memhal1_memhal2/" + job.key();
}

void paced_job(benchmark::State& state, Job job) {
  MemhalRun one(job, 1), two(job, 2);
  Cycle frames{&ring(job.src), true};  // one ring for both, each frame converted once
  one.convert(frames.next());          // plans and fresh pages, as in `timed`
  two.convert(frames.next());
  double wall[2] = {0, 0};
  int64_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();  // so that the console's time column is the two conversions'
    for (int t = 0; t < 2; ++t) {
      MemhalRun& run = t == 0 ? one : two;
      std::this_thread::sleep_for(kFrameGap);
      const Tensor& frame = frames.next();
      state.ResumeTiming();
      const auto t0 = std::chrono::steady_clock::now();
      run.convert(frame);
      wall[t] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      state.PauseTiming();
    }
    state.ResumeTiming();
    ++n;
  }
  state.counters["wall_1t_ms"] = 1e3 * wall[0] / static_cast<double>(n);
  state.counters["wall_2t_ms"] = 1e3 * wall[1] / static_cast<double>(n);
}

// Planar normalised output from interleaved RGB u8, the way OpenCV users write it.
void opencv_normalise(const cv::Mat& rgb, float* out) {
  cv::Mat f;
  rgb.convertTo(f, CV_32FC3, 1.0 / 255.0);
  cv::subtract(f, cv::Scalar(kMean[0], kMean[1], kMean[2]), f);
  cv::divide(f, cv::Scalar(kStd[0], kStd[1], kStd[2]), f);
  std::vector<cv::Mat> planes{cv::Mat(kDst, kDst, CV_32F, out), cv::Mat(kDst, kDst, CV_32F, out + kDst * kDst),
                              cv::Mat(kDst, kDst, CV_32F, out + 2 * kDst * kDst)};
  cv::split(f, planes);
}

// Where a peer writes its outputs: on destination_pages() as memhal does, so that their lot is
// memhal's. The job's output from the first byte (rgb u8, or the f32 planes), and on the way to
// f32 the 8-bit RGB image after the planes.
struct PeerOutputs {
  explicit PeerOutputs(Out o)
      : out(reinterpret_cast<float*>(destination_pages())),
        rgb(reinterpret_cast<uint8_t*>(destination_pages() + (o == Out::RgbU8 ? 0 : out_bytes(Out::F32)))) {}
  float* out;
  uint8_t* rgb;
};

Call opencv_call(const Job& job, const std::shared_ptr<Cycle>& frames) {
  cv::setNumThreads(1);
  struct Mats {
    cv::Mat rgb, small, boxed;
  };
  const PeerOutputs peer(job.out);
  auto m = std::make_shared<Mats>();
  m->boxed = cv::Mat(kDst, kDst, CV_8UC3, peer.rgb);  // copyMakeBorder keeps a matching Mat's memory
  return [job, frames, peer, m] {
    const int w = job.src.w, h = job.src.h, ch = job.content_h(), top = (kDst - ch) / 2;
    const bool nv12 = job.src.format == PixelFormat::Nv12;
    auto map = *frames->next().map(CpuAccess::Read);
    const cv::Mat in = nv12 ? cv::Mat(h * 3 / 2, w, CV_8UC1, map.data()) : cv::Mat(h, w, CV_8UC2, map.data());
    cv::cvtColor(in, m->rgb, nv12 ? cv::COLOR_YUV2RGB_NV12 : cv::COLOR_YUV2RGB_YUYV);
    cv::resize(m->rgb, m->small, cv::Size(kDst, ch), 0, 0,
               job.interpolation == Interpolation::Area ? cv::INTER_AREA : cv::INTER_LINEAR);
    cv::copyMakeBorder(m->small, m->boxed, top, kDst - ch - top, 0, 0, cv::BORDER_CONSTANT, cv::Scalar(114, 114, 114));
    if (m->boxed.data != peer.rgb) std::abort();
    if (job.out == Out::F32) opencv_normalise(m->boxed, peer.out);
    benchmark::DoNotOptimize(m->boxed.data);
  };
}

Call libyuv_call(const Job& job, const std::shared_ptr<Cycle>& frames) {
  const int w = job.src.w, h = job.src.h, ch = job.content_h();
  struct Buffers {
    std::vector<uint8_t> nv12, small;
  };
  auto buffers = std::make_shared<Buffers>(
      Buffers{std::vector<uint8_t>(static_cast<std::size_t>(w) * h * 3 / 2), std::vector<uint8_t>(kDst * ch * 3 / 2)});
  const PeerOutputs peer(job.out);
  return [job, frames, peer, buffers, w, h, ch] {
    const int top = (kDst - ch) / 2;
    std::vector<uint8_t>& nv12 = buffers->nv12;
    std::vector<uint8_t>& small = buffers->small;
    uint8_t* const rgb = peer.rgb;
    auto map = *frames->next().map(CpuAccess::Read);
    const auto* p = reinterpret_cast<const uint8_t*>(map.data());
    const uint8_t* y = p;
    const uint8_t* uv = p + w * h;
    if (job.src.format == PixelFormat::Yuyv) {
      libyuv::YUY2ToNV12(p, w * 2, nv12.data(), w, nv12.data() + w * h, w, w, h);
      y = nv12.data(), uv = nv12.data() + w * h;
    }
    // Scaling in YUV first is the cheap order libyuv users pick.
    libyuv::NV12Scale(y, w, uv, w, w, h, small.data(), kDst, small.data() + kDst * ch, kDst, kDst, ch,
                      libyuv::kFilterBilinear);
    std::memset(rgb, 114, 3 * kDst * top);
    libyuv::NV12ToRAW(small.data(), kDst, small.data() + kDst * ch, kDst, rgb + 3 * kDst * top, 3 * kDst, kDst, ch);
    std::memset(rgb + 3 * kDst * (top + ch), 114, 3 * kDst * (kDst - top - ch));
    if (job.out == Out::F32) {
      for (int c = 0; c < 3; ++c) {
        const float scale = 1.0f / (255.0f * kStd[c]), bias = -kMean[c] / kStd[c];
        float* plane = peer.out + c * kDst * kDst;
        for (int i = 0; i < kDst * kDst; ++i) plane[i] = rgb[3 * i + c] * scale + bias;
      }
    }
    benchmark::DoNotOptimize(rgb);
    benchmark::DoNotOptimize(peer.out);
  };
}

// The bound: a memcpy reading and writing as many bytes as the job, (in + out) / 2 each way,
// from a ring of cold buffers (stretches of the arena: cold) or one buffer (warm) into the
// pages memhal's destinations take (as the jobs reuse theirs).
Call bound_call(const Job& job, bool cold) {
  const auto bytes = static_cast<std::size_t>((job.in_bytes() + out_bytes(job.out)) / 2);
  auto k = std::make_shared<std::size_t>(0);
  return [bytes, cold, k] {
    std::byte* const dst = destination_pages();
    std::memcpy(dst, arena().slot(bytes, cold ? (*k)++ : 0), bytes);
    benchmark::DoNotOptimize(dst);
  };
}

// A call of `who` (memhal1, memhal2, opencv, libyuv or bound) doing `job` on `frames`.
Call make_call(const std::string& who, const Job& job, const std::shared_ptr<Cycle>& frames) {
  if (who == "memhal1" || who == "memhal2") return memhal_call(job, frames, who == "memhal1" ? 1 : 2);
  if (who == "opencv") return opencv_call(job, frames);
  if (who == "libyuv") return libyuv_call(job, frames);
  if (who == "bound") return bound_call(job, frames->cold);
  std::fprintf(stderr, "bench: no such caller %s\n", who.c_str());
  std::abort();
}

std::shared_ptr<Cycle> frames_of(const Job& job, bool cold) {
  return std::make_shared<Cycle>(Cycle{&ring(job.src), cold});
}

// A second thread that runs `work` each time the caller posts, waiting in between spinning: the
// cheapest hand-off there is, so the two-thread yardsticks carry less hand-off cost than any
// pool.
class SpinningHelper {
 public:
  explicit SpinningHelper(std::function<void(uint64_t call)> work)
      : work_(std::move(work)), thread_([this] {
          for (uint64_t seen = 0;;) {
            while (posted_.load(std::memory_order_acquire) == seen) {
              if (stop_.load(std::memory_order_relaxed)) return;
            }
            seen = posted_.load(std::memory_order_acquire);
            work_(seen);
            done_.store(seen, std::memory_order_release);
          }
        }) {}
  ~SpinningHelper() {
    stop_.store(true);
    thread_.join();
  }
  // Starts call `call` (1, 2, ...) on the helper; `wait` returns when it is done.
  void post(uint64_t call) { posted_.store(call, std::memory_order_release); }
  void wait(uint64_t call) const {
    while (done_.load(std::memory_order_acquire) != call) {
    }
  }

 private:
  std::function<void(uint64_t)> work_;
  std::atomic<uint64_t> posted_{0}, done_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: it starts once the rest is built
};

// The same memcpy split in halves over two threads (wall time): what the memory side gives two
// threads in this run, the yardstick for memhal's two-thread figure on a host whose memory
// bandwidth is shared with other guests.
void bound2_job(benchmark::State& state, Job job, bool cold) {
  const auto bytes = static_cast<std::size_t>((job.in_bytes() + out_bytes(job.out)) / 2);
  const std::size_t half = bytes / 2 & ~std::size_t{63};
  std::byte* const dst = destination_pages();
  std::atomic<const char*> from{nullptr};
  SpinningHelper helper(
      [&](uint64_t) { std::memcpy(dst + half, from.load(std::memory_order_relaxed) + half, bytes - half); });
  std::size_t k = 0;
  uint64_t n = 0;
  timed(state, run_name("bound2", job, cold), [&] {
    const char* src = arena().slot(bytes, cold ? k++ : 0);
    from.store(src, std::memory_order_relaxed);
    helper.post(++n);
    std::memcpy(dst, src, half);
    helper.wait(n);
    benchmark::DoNotOptimize(dst);
  });
}

// Work in registers only (four xorshift chains, about 0.12 ms a call here), on one thread and
// split over two (wall time): what the CPU side gave two threads in this run, beside what the
// memory side gave them. Near 2 when the two vCPUs ran on two cores; lower when the host ran
// them on one core's two hardware threads, or lent one to another guest for a while.
constexpr int64_t kRegisterSteps = 1 << 16;

uint64_t register_work(uint64_t seed, int64_t steps) {
  uint64_t x[4] = {seed | 1, seed * 3 + 1, seed * 5 + 3, seed * 7 + 5};
  for (int64_t i = 0; i < steps; ++i) {
    for (uint64_t& v : x) v ^= v << 13, v ^= v >> 7, v ^= v << 17;
  }
  return x[0] ^ x[1] ^ x[2] ^ x[3];
}

// A helper thread's half of registers-only call `call`.
uint64_t register_other_half(uint64_t call) {
  return register_work(call * 11, kRegisterSteps / 2);
}

// Registers-only call `call` (1, 2, ...): all of it on the calling thread, or its half there and
// the other half (register_other_half) on `helper`.
uint64_t register_call(SpinningHelper* helper, uint64_t call) {
  if (helper == nullptr) return register_work(call, kRegisterSteps);
  helper->post(call);
  const uint64_t mine = register_work(call, kRegisterSteps / 2);
  helper->wait(call);
  return mine;
}

void register_job(benchmark::State& state, Job job, unsigned threads) {
  std::atomic<uint64_t> sink{0};
  std::optional<SpinningHelper> helper;
  if (threads == 2) helper.emplace([&](uint64_t call) { sink += register_other_half(call); });
  uint64_t n = 0;
  timed(state, run_name(threads == 1 ? "registers1" : "registers2", job, true),
        [&] { sink += register_call(helper ? &*helper : nullptr, ++n); });
  benchmark::DoNotOptimize(sink.load());
}

// N = 4 1080p frames into one {4, 3, 640, 640} f32 batch: one convert_batch against 4 convert
// calls into the batch's images, cold frames.
constexpr int kBatch = 4;

void batch_job(benchmark::State& state, bool batched, bool cold) {
  Cycle frames{&ring({PixelFormat::Nv12, 1920, 1080}), cold};
  Tensor batch = must(Tensor::create({kBatch, 3, kDst, kDst}, DType::F32, MemoryKind::Mem));
  std::vector<Tensor> images;
  for (int i = 0; i < kBatch; ++i) images.push_back(must(batch.slice(0, i, i + 1)));
  auto proc = std::move(*ImageProcessor::create({.threads = 1, .backend = ImageBackend::Cpu}));
  const ConvertOptions o = memhal_options(Job{{PixelFormat::Nv12, 1920, 1080}, Out::F32});
  std::vector<Tensor> srcs;
  timed(state, std::string(cold ? "cold/" : "warm/") + (batched ? "batch" : "singles"), [&] {
    srcs.clear();
    for (int i = 0; i < kBatch; ++i) srcs.push_back(frames.next());
    if (batched) {
      if (!proc.convert_batch(srcs, batch, o)) std::abort();
    } else {
      for (int i = 0; i < kBatch; ++i) {
        if (!proc.convert(srcs[static_cast<std::size_t>(i)], images[static_cast<std::size_t>(i)], o)) std::abort();
      }
    }
  });
}

// ---- paired ratios ----

// Every goal is also measured by a paired run: one benchmark times its two sides (memhal and a
// peer, memhal and the bound, or two memhal jobs) in alternate blocks of calls (which goes first
// alternates too) and files each repetition's ratio of A's time per call to B's; the goal is the
// median of those ratios. The host's slow spells last tens of seconds: the separate runs of the
// tables, 0.2 s each in random order, can each meet a different one (on the Zen 3 host the same
// job's median moved by a third between runs), where A and B in alternate blocks meet it alike;
// and both write destination_pages(), as every job does. Blocks of calls, not single calls:
// within a block a job keeps its destination in the cache and a pool its workers awake, as in
// the tables' runs (with blocks of 16 the two-thread job took 0.119 ms a call in one run, where
// the table's run of it took 0.108 ms). A block is kBlockSeconds of calls, 1 to kBlock of them.
constexpr int kBlock = 64;
constexpr double kBlockSeconds = 0.016;

struct Side {
  std::string who;  // as make_call takes it
  Job job;
};

struct Pair {
  std::string goal;  // the goal's words for A's time / B's
  double target;     // at most, or at least with `at_least`
  Side a, b;
  bool at_least = false;
  bool wall = false;       // wall time (the two-thread goal), else CPU time of the calling thread
  bool registers = false;  // also the registers-only yardstick, one thread / two, in blocks between
  std::string name() const { return "cold/paired/" + a.who + "/" + a.job.key() + "_vs_" + b.who + "/" + b.job.key(); }
};

// The goals, in its order.
std::vector<Pair> pairs() {
  const Source nv12{PixelFormat::Nv12, 1920, 1080}, yuyv{PixelFormat::Yuyv, 1920, 1080};
  const Job u8{nv12, Out::RgbU8}, f32{nv12, Out::F32};
  const Job area{{PixelFormat::Nv12, 3840, 2160}, Out::RgbU8, Interpolation::Area};
  return {
      {"u8: libyuv chain / memhal (nv12 1080p -> rgb u8)", 1.5, {"libyuv", u8}, {"memhal1", u8}, true},
      {"u8: memhal / cold memory bound", 2.0, {"memhal1", u8}, {"bound", u8}},
      {"f32: memhal / cold memory bound (nv12 1080p -> planar f32)", 1.3, {"memhal1", f32}, {"bound", f32}},
      {"f32: libyuv chain / memhal", 2.0, {"libyuv", f32}, {"memhal1", f32}, true},
      {"f16: memhal f16 / memhal f32", 1.0, {"memhal1", {nv12, Out::F16}}, {"memhal1", f32}},
      {"i8: memhal i8 / memhal f32", 1.0, {"memhal1", {nv12, Out::I8}}, {"memhal1", f32}},
      {"yuyv / nv12, rgb u8", 1.2, {"memhal1", {yuyv, Out::RgbU8}}, {"memhal1", u8}},
      {"yuyv / nv12, planar f32", 1.2, {"memhal1", {yuyv, Out::F32}}, {"memhal1", f32}},
      {"4K -> 640x640 Area: OpenCV INTER_AREA chain / memhal", 3.0, {"opencv", area}, {"memhal1", area}, true},
      {"two threads: 1 thread / 2 threads, wall time, nv12 1080p -> planar f32",
       1.7,
       {"memhal1", f32},
       {"memhal2", f32},
       true,
       true,
       true},
  };
}

void paired_job(benchmark::State& state, const Pair& p) {
  // One ring for both where the sources are alike, so that B never meets a frame A just read.
  const auto frames_a = frames_of(p.a.job, true);
  const auto frames_b = p.a.job.src == p.b.job.src ? frames_a : frames_of(p.b.job, true);
  const Call call[2] = {make_call(p.a.who, p.a.job, frames_a), make_call(p.b.who, p.b.job, frames_b)};
  const auto now = [&] {
    return p.wall ? std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count()
                  : thread_cpu_seconds();
  };
  int per_block[2];
  for (int i = 0; i < 2; ++i) {
    call[i]();  // plans and fresh pages, as in `timed`
    const double t0 = now();
    call[i]();
    per_block[i] = std::clamp(static_cast<int>(kBlockSeconds / std::max(now() - t0, 1e-6)), 1, kBlock);
  }
  double seconds[2] = {0, 0};
  int64_t calls[2] = {0, 0};
  const auto block = [&](int which) {
    // A block's first call is not timed, as in `timed`: it finds its destination evicted by the
    // other side's block, and a pool's workers asleep; the calls after it run back to back.
    call[which]();
    const double t0 = now();
    for (int i = 0; i < per_block[which]; ++i) call[which]();
    seconds[which] += now() - t0;
    calls[which] += per_block[which];
  };
  // The two-thread pair also times the work in registers only (register_job) on one thread and
  // on two, in blocks of their own between memhal's: what the CPU side gave two threads in the
  // same seconds. Its helper spins while it lives, so it lives through its own block only.
  double registers[2] = {0, 0};
  std::atomic<uint64_t> sink{0};
  uint64_t call_number = 0;
  const auto register_block = [&](unsigned threads) {
    std::optional<SpinningHelper> helper;
    if (threads == 2) helper.emplace([&](uint64_t c) { sink += register_other_half(c); });
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBlock; ++i) sink += register_call(helper ? &*helper : nullptr, ++call_number);
    registers[threads - 1] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  int64_t n = 0;
  for (auto _ : state) {
    block(n % 2 == 0 ? 0 : 1);
    block(n % 2 == 0 ? 1 : 0);
    if (p.registers) {
      register_block(n % 2 == 0 ? 1 : 2);
      register_block(n % 2 == 0 ? 2 : 1);
    }
    ++n;
  }
  benchmark::DoNotOptimize(sink.load());
  const double a = seconds[0] / static_cast<double>(calls[0]), b = seconds[1] / static_cast<double>(calls[1]);
  state.counters["a_ms"] = 1e3 * a;
  state.counters["b_ms"] = 1e3 * b;
  state.counters["a_per_b"] = a / b;
  if (registers[1] > 0) state.counters["registers_1t_per_2t"] = registers[0] / registers[1];
}

// ---- the table ----

struct Row {
  Job job;
  bool peers;    // OpenCV and libyuv chains
  bool threads;  // memhal on two threads too
};

std::vector<Row> rows() {
  const Source nv12{PixelFormat::Nv12, 1920, 1080}, yuyv{PixelFormat::Yuyv, 1920, 1080};
  const Source nv12_4k{PixelFormat::Nv12, 3840, 2160}, yuyv_4k{PixelFormat::Yuyv, 3840, 2160};
  // 720p -> 640 is a true two-tap bilinear downscale (2:1, samples between source pixels), where
  // 1080p's 3:1 lands on source pixels.
  const Source nv12_720p{PixelFormat::Nv12, 1280, 720}, yuyv_720p{PixelFormat::Yuyv, 1280, 720};
  return {
      {{nv12, Out::RgbU8}, true, false},
      {{nv12, Out::F32}, true, true},
      {{nv12, Out::F16}, false, false},
      {{nv12, Out::I8}, false, false},
      {{yuyv, Out::RgbU8}, true, false},
      {{yuyv, Out::F32}, true, false},
      {{nv12_720p, Out::RgbU8}, true, false},
      {{nv12_720p, Out::F32}, true, false},
      {{yuyv_720p, Out::RgbU8}, true, false},  // what USB webcams send
      {{yuyv_720p, Out::F32}, true, false},
      {{nv12_4k, Out::RgbU8}, true, false},
      {{nv12_4k, Out::F32}, true, false},
      {{yuyv_4k, Out::RgbU8}, true, false},
      {{yuyv_4k, Out::F32}, true, false},
      {{nv12_4k, Out::RgbU8, Interpolation::Area}, true, false},
      // Not goals' jobs: the area downscale of the packed source, and into floats.
      {{yuyv_4k, Out::RgbU8, Interpolation::Area}, true, false},
      {{nv12_4k, Out::F32, Interpolation::Area}, true, false},
  };
}

// The paced jobs: the two-thread goal's job, and 720p's two-tap bilinear.
std::vector<Job> paced_jobs() {
  return {{{PixelFormat::Nv12, 1920, 1080}, Out::F32}, {{PixelFormat::Nv12, 1280, 720}, Out::F32}};
}

void register_all() {
  for (bool cold : {true, false}) {
    for (const Row& row : rows()) {
      const Job job = row.job;
      const auto add = [&](const std::string& who, auto fn) {
        benchmark::RegisterBenchmark(run_name(who, job, cold).c_str(), fn)->Unit(benchmark::kMillisecond);
      };
      const auto add_call = [&](const std::string& who) {
        add(who, [=](benchmark::State& s) {
          timed(s, run_name(who, job, cold), make_call(who, job, frames_of(job, cold)));
        });
      };
      add_call("bound");
      add_call("memhal1");
      if (row.threads) {
        add("bound2", [=](benchmark::State& s) { bound2_job(s, job, cold); });
        add_call("memhal2");
        if (cold) {
          add("registers1", [=](benchmark::State& s) { register_job(s, job, 1); });
          add("registers2", [=](benchmark::State& s) { register_job(s, job, 2); });
        }
      }
      if (row.peers) {
        add_call("opencv");
        // libyuv has no area filter matching INTER_AREA's chain here; its box filter would be
        // another job.
        if (job.interpolation != Interpolation::Area) add_call("libyuv");
      }
    }
    for (bool batched : {true, false}) {
      benchmark::RegisterBenchmark((std::string(cold ? "cold/" : "warm/") + (batched ? "batch" : "singles")).c_str(),
                                   [=](benchmark::State& s) { batch_job(s, batched, cold); })
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (const Pair& pair : pairs()) {
    benchmark::RegisterBenchmark(pair.name().c_str(), [=](benchmark::State& s) {
      paired_job(s, pair);
    })->Unit(benchmark::kMillisecond);
  }
  for (const Job& job : paced_jobs()) {
    benchmark::RegisterBenchmark(paced_name(job).c_str(), [=](benchmark::State& s) { paced_job(s, job); })
        ->Iterations(kPacedFrames)
        ->Unit(benchmark::kMillisecond);
  }
}

double ms(std::map<std::string, std::vector<double>>& runs, const std::string& who, const Job& job, bool cold) {
  return 1e3 * median(runs, run_name(who, job, cold));
}

void print_table(bool cold) {
  std::printf(
      "\n%s frames: CPU time of one thread (memhal 2t: wall time, two threads), medians; bound = %s memcpy "
      "of (in + out) / 2 bytes\n",
      cold ? "COLD" : "WARM", cold ? "cold" : "warm");
  std::printf("%-28s %9s %9s %9s %9s %9s %8s %8s %8s\n", "source -> output", "memhal1t", "memhal2t", "opencv", "libyuv",
              "bound", "cv/1t", "yuv/1t", "1t/bound");
  for (const Row& row : rows()) {
    const Job& j = row.job;
    const double one = ms(g_cpu, "memhal1", j, cold), two = ms(g_wall, "memhal2", j, cold);
    const double cv = ms(g_cpu, "opencv", j, cold), yuv = ms(g_cpu, "libyuv", j, cold);
    const double bound = ms(g_cpu, "bound", j, cold);
    const auto cell = [](double v) {
      static char buf[8][16];
      static int i = 0;
      char* b = buf[i++ % 8];
      if (v > 0) {
        std::snprintf(b, 16, "%7.3fms", v);
      } else {
        std::snprintf(b, 16, "%9s", "-");
      }
      return b;
    };
    const auto ratio = [](double a, double b) {
      static char buf[8][16];
      static int i = 0;
      char* r = buf[i++ % 8];
      if (a > 0 && b > 0) {
        std::snprintf(r, 16, "%7.2fx", a / b);
      } else {
        std::snprintf(r, 16, "%8s", "-");
      }
      return r;
    };
    std::printf("%-28s %9s %9s %9s %9s %9s %8s %8s %8s\n", j.key().c_str(), cell(one), cell(two), cell(cv), cell(yuv),
                cell(bound), ratio(cv, one), ratio(yuv, one), ratio(one, bound));
  }
  const double batch = 1e3 * median(g_cpu, std::string(cold ? "cold/" : "warm/") + "batch");
  const double singles = 1e3 * median(g_cpu, std::string(cold ? "cold/" : "warm/") + "singles");
  if (batch > 0 && singles > 0) {  // a --benchmark_filter may leave them out
    std::printf("%d x nv12_1080p -> {4,3,640,640} f32: convert_batch %.3f ms, %d convert calls %.3f ms (%.2fx)\n",
                kBatch, batch, kBatch, singles, singles / batch);
  }
}

// Not goals: what a live 30 fps pipeline sees against the back-to-back cold figures above.
void print_paced() {
  std::printf(
      "\nPACED frames (cold ring, %lld ms idle before each conversion, as a 30 fps camera; wall time, medians)\n",
      static_cast<long long>(kFrameGap.count()));
  std::printf("%-28s %9s %9s %12s %12s\n", "source -> output", "memhal1t", "memhal2t", "1t/2t", "1t/cold 1t");
  for (const Job& job : paced_jobs()) {
    const double one = 1e3 * median(g_wall, paced_name(job) + "/1t"),
                 two = 1e3 * median(g_wall, paced_name(job) + "/2t");
    const double back_to_back = ms(g_wall, "memhal1", job, true);
    if (one <= 0 || two <= 0) continue;
    char cold[16] = "-";
    if (back_to_back > 0) std::snprintf(cold, sizeof cold, "%.2fx", one / back_to_back);
    std::printf("%-28s %7.3fms %7.3fms %11.2fx %12s\n", job.key().c_str(), one, two, one / two, cold);
  }
}

void goal(const std::string& what, double value, bool at_least, double target, const std::string& aside = "") {
  if (!std::isfinite(value) || value <= 0) {  // a --benchmark_filter left out one of its rows
    std::printf("  %-72s %7s (goal %s %.2fx)  not measured in this run\n", what.c_str(), "-",
                at_least ? ">=" : "<=", target);
    return;
  }
  const bool met = at_least ? value >= target : value <= target;
  // Three decimals where two would round a miss onto the line (1.699 printed 1.70, NOT met).
  const int decimals = std::fabs(value - target) < 0.005 ? 3 : 2;
  std::printf("  %-72s %6.*fx (goal %s %.2fx)  %s%s\n", what.c_str(), decimals, value, at_least ? ">=" : "<=", target,
              met ? "met" : "NOT met", aside.c_str());
}

// A goal: the median of its paired run's ratios where it ran, with the ratio of the tables'
// separate medians beside it; else that ratio alone.
void paired_goal(const Pair& p) {
  const auto time = [&](const Side& side) { return ms(p.wall ? g_wall : g_cpu, side.who, side.job, true); };
  const double separate = time(p.a) / time(p.b);
  const double paired = median(g_ratio, p.name());
  if (paired <= 0) return goal(p.goal, separate, p.at_least, p.target, "  (separate runs)");
  char aside[48] = "";
  if (std::isfinite(separate) && separate > 0) std::snprintf(aside, sizeof aside, "  (separate runs: %.2fx)", separate);
  goal(p.goal, paired, p.at_least, p.target, aside);
}

void print_goals() {
  const Job f32{{PixelFormat::Nv12, 1920, 1080}, Out::F32};
  std::printf(
      "\nGoals (cold frames, one thread, this run: the median of the ratios of paired runs, the two sides in\n"
      "alternate blocks of up to %d calls, with the ratio of the tables' separate medians beside it):\n",
      kBlock);
  const std::vector<Pair> goals = pairs();
  for (const Pair& p : goals) paired_goal(p);
  // Not goals: the yardsticks for the one above. On two threads memhal runs at about the cold
  // bound's memcpy split over two threads, so the ratio above is what the memory side gives two
  // threads on this host, times how far below its one-thread bound memhal runs on one thread.
  const double one = ms(g_wall, "bound", f32, true), two = ms(g_wall, "bound2", f32, true);
  const double memhal2 = ms(g_wall, "memhal2", f32, true);
  if (one > 0 && two > 0 && memhal2 > 0) {
    std::printf("  %-72s %6.2fx (%.3f / %.3f ms: what the memory side gave two threads)\n",
                "  the cold bound's memcpy: 1 thread / 2 threads, wall time", one / two, one, two);
    std::printf("  %-72s %6.2fx (memhal at the two-thread memory bound when near 1)\n",
                "  memhal on two threads / that memcpy on two threads, wall time", memhal2 / two);
  }
  const double reg1 = ms(g_wall, "registers1", f32, true), reg2 = ms(g_wall, "registers2", f32, true);
  if (reg1 > 0 && reg2 > 0) {
    std::printf("  %-72s %6.2fx (what the CPU side gave two threads: 2 = two whole cores)\n",
                "  work in registers only: 1 thread / 2 threads, wall time", reg1 / reg2);
  }
  const double paired_registers = median(g_ratio, goals.back().name() + "/registers");
  if (paired_registers > 0) {
    std::printf("  %-72s %6.2fx (the same, in the seconds of the goal's figure)\n",
                "  work in registers only, in blocks between the paired run's: 1t / 2t", paired_registers);
  }
}

// `--profile=KEY [--frames=N] [--target=NAME]`: no benchmark, only N memhal conversions of job
// KEY (e.g. nv12_1080p/f32_planar) through its cold ring, on Highway target NAME if given (as
// hwy::TargetName spells it): what bench/where-the-time-goes.sh runs under perf and valgrind.
int profile(const std::string& key, long frames, const std::string& target) {
  if (!target.empty()) {
    int64_t chosen = 0;
    for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
      if (target == hwy::TargetName(t)) chosen = t;
    }
    if (chosen == 0) {
      std::fprintf(stderr, "--target=%s: not a compiled target this CPU supports\n", target.c_str());
      return 2;
    }
    hwy::SetSupportedTargetsForTest(chosen);
  }
  for (const Row& row : rows()) {
    if (row.job.key() != key) continue;
    MemhalRun run(row.job, 1);
    Cycle cycle{&ring(row.job.src, frames), true};
    for (long i = 0; i < frames; ++i) run.convert(cycle.next());
    std::printf("profiled %s: %ld conversions, cold frames, one thread\n", key.c_str(), frames);
    return 0;
  }
  std::fprintf(stderr, "--profile=%s: no such job (see the table's first column)\n", key.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string key, target;
  long frames = 2000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--profile=", 0) == 0) key = arg.substr(10);
    if (arg.rfind("--frames=", 0) == 0) frames = std::atol(arg.c_str() + 9);
    if (arg.rfind("--target=", 0) == 0) target = arg.substr(9);
  }
  if (!key.empty()) return profile(key, frames, target);
  benchmark::Initialize(&argc, argv);
  std::printf(
      "last-level cache: %lld bytes, %s; cold rings hold at least 16 frames and %lld MB (max(256 MB, 8 x LLC); "
      "1080p NV12: %d frames)\n",
      static_cast<long long>(llc().bytes), llc().source.c_str(), static_cast<long long>(cold_bytes() >> 20),
      ring_size(1920 * 1080 * 3 / 2));
  print_coldness();
  register_all();
  Recorder recorder;
  benchmark::RunSpecifiedBenchmarks(&recorder);
  benchmark::Shutdown();
  print_table(true);
  print_table(false);
  print_paced();
  print_goals();
  return 0;
}
