// The model-input job every frame: 1920x1080 NV12 or YUYV -> 640x640 letterboxed, as
// (a) RGB u8 interleaved and (b) f32 planar normalised (NCHW). memhal (1 thread and all
// threads) against the OpenCV chain its users write (cvtColor + resize + copyMakeBorder +
// convertTo/subtract/divide/split), the libyuv chain (scale in YUV + convert + pad) and the
// memory bound (bytes read + written over the memcpy bandwidth measured in this run).
//
// Ratios are printed after the Google Benchmark table, from the same run.
#include <benchmark/benchmark.h>
#include <libyuv.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memhal/image_processor.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace memhal;

constexpr int kSrcW = 1920, kSrcH = 1080, kDst = 640;
constexpr int kContentH = 360, kTop = (kDst - kContentH) / 2;
constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};

// Per repetition (--benchmark_repetitions): per-iteration CPU time of the calling thread,
// and wall time. The ratios use the median over repetitions.
std::map<std::string, std::vector<double>> g_seconds;
std::map<std::string, std::vector<double>> g_wall;

double median(std::map<std::string, std::vector<double>>& runs, const std::string& name) {
  std::vector<double>& v = runs[name];
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 != 0 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

Tensor must(Result<Tensor> result) {
  if (!result) {
    std::fprintf(stderr, "bench setup failed: %s\n", result.error().to_string().c_str());
    std::abort();
  }
  return std::move(*result);
}

// Camera-like frames: a gradient with noise, packed (pitch = row bytes) like V4L2 buffers.
Tensor frame(PixelFormat format) {
  Tensor t = must(Tensor::image(kSrcW, kSrcH, format, MemoryKind::Mem, DType::U8, 1));
  auto map = *t.map(CpuAccess::Write);
  // Packed (row_align 1): the planes follow one another from the first.
  std::byte* first = t.layout().is_multi_plane() ? map.plane(0) : map.data();
  std::mt19937 rng(1);
  for (int64_t i = 0; i < t.nbytes(); ++i) first[i] = std::byte((i * 7 + (rng() & 15)) & 0xFF);
  return t;
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Records wall time, and the calling thread's CPU time: on a shared, loaded host the CPU time
// of a single-threaded job is the steadier measure (the table uses it for every 1-thread
// entry; the all-threads column is wall time).
template <class Fn>
void timed(benchmark::State& state, const std::string& name, Fn&& fn) {
  double wall = 0, cpu = 0;
  int64_t n = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    fn();
    cpu += thread_cpu_seconds() - c0;
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++n;
  }
  g_seconds[name].push_back(cpu / static_cast<double>(n));
  g_wall[name].push_back(wall / static_cast<double>(n));
  state.counters["cpu_ms"] = 1e3 * cpu / static_cast<double>(n);
}

const char* fmt_name(PixelFormat f) {
  return f == PixelFormat::Nv12 ? "nv12" : "yuyv";
}
const char* job_name(bool planar_f32) {
  return planar_f32 ? "f32_planar" : "rgb_u8";
}

void memhal_job(benchmark::State& state, PixelFormat format, bool planar_f32, unsigned threads) {
  Tensor src = frame(format);
  Tensor dst = must(Tensor::image(kDst, kDst, planar_f32 ? PixelFormat::PlanarRgb : PixelFormat::Rgb, MemoryKind::Mem,
                                  planar_f32 ? DType::F32 : DType::U8, 1));
  auto proc = std::move(*ImageProcessor::create({.threads = threads, .backend = ImageBackend::Cpu}));
  ConvertOptions o;
  o.resize = ResizeMode::Letterbox;
  if (planar_f32) {
    o.mean = {kMean[0], kMean[1], kMean[2], 0};
    o.std = {kStd[0], kStd[1], kStd[2], 1};
  }
  const std::string name =
      std::string("memhal_") + (threads == 1 ? "1t" : "all") + "/" + fmt_name(format) + "/" + job_name(planar_f32);
  timed(state, name, [&] {
    if (!proc.convert(src, dst, o)) std::abort();
  });
  state.SetLabel(std::to_string(proc.threads()) + " threads");
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

void opencv_job(benchmark::State& state, PixelFormat format, bool planar_f32) {
  cv::setNumThreads(1);
  Tensor src = frame(format);
  auto map = *src.map(CpuAccess::Read);
  const cv::Mat in = format == PixelFormat::Nv12 ? cv::Mat(kSrcH * 3 / 2, kSrcW, CV_8UC1, map.data())
                                                 : cv::Mat(kSrcH, kSrcW, CV_8UC2, map.data());
  cv::Mat rgb, small, boxed;
  std::vector<float> out(3 * kDst * kDst);
  const int code = format == PixelFormat::Nv12 ? cv::COLOR_YUV2RGB_NV12 : cv::COLOR_YUV2RGB_YUYV;
  timed(state, std::string("opencv/") + fmt_name(format) + "/" + job_name(planar_f32), [&] {
    cv::cvtColor(in, rgb, code);
    cv::resize(rgb, small, cv::Size(kDst, kContentH), 0, 0, cv::INTER_LINEAR);
    cv::copyMakeBorder(small, boxed, kTop, kDst - kContentH - kTop, 0, 0, cv::BORDER_CONSTANT,
                       cv::Scalar(114, 114, 114));
    if (planar_f32) opencv_normalise(boxed, out.data());
    benchmark::DoNotOptimize(boxed.data);
  });
}

void libyuv_job(benchmark::State& state, PixelFormat format, bool planar_f32) {
  Tensor src = frame(format);
  auto map = *src.map(CpuAccess::Read);
  const auto* p = reinterpret_cast<const uint8_t*>(map.data());
  std::vector<uint8_t> nv12(kSrcW * kSrcH * 3 / 2), small(kDst * kContentH * 3 / 2), rgb(kDst * kDst * 3);
  std::vector<float> out(3 * kDst * kDst);
  timed(state, std::string("libyuv/") + fmt_name(format) + "/" + job_name(planar_f32), [&] {
    const uint8_t* y = p;
    const uint8_t* uv = p + kSrcW * kSrcH;
    if (format == PixelFormat::Yuyv) {
      libyuv::YUY2ToNV12(p, kSrcW * 2, nv12.data(), kSrcW, nv12.data() + kSrcW * kSrcH, kSrcW, kSrcW, kSrcH);
      y = nv12.data(), uv = nv12.data() + kSrcW * kSrcH;
    }
    // Scaling in YUV first is the cheap order libyuv users pick.
    libyuv::NV12Scale(y, kSrcW, uv, kSrcW, kSrcW, kSrcH, small.data(), kDst, small.data() + kDst * kContentH, kDst,
                      kDst, kContentH, libyuv::kFilterBilinear);
    std::memset(rgb.data(), 114, 3 * kDst * kTop);
    libyuv::NV12ToRAW(small.data(), kDst, small.data() + kDst * kContentH, kDst, rgb.data() + 3 * kDst * kTop, 3 * kDst,
                      kDst, kContentH);
    std::memset(rgb.data() + 3 * kDst * (kTop + kContentH), 114, 3 * kDst * (kDst - kTop - kContentH));
    if (planar_f32) {
      for (int c = 0; c < 3; ++c) {
        const float scale = 1.0f / (255.0f * kStd[c]), bias = -kMean[c] / kStd[c];
        float* plane = out.data() + c * kDst * kDst;
        for (int i = 0; i < kDst * kDst; ++i) plane[i] = rgb[3 * i + c] * scale + bias;
      }
    }
    benchmark::DoNotOptimize(rgb.data());
    benchmark::DoNotOptimize(out.data());
  });
}

void memcpy_bandwidth(benchmark::State& state) {
  const std::size_t bytes = 64u << 20;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  timed(state, "memcpy_64MiB", [&] {
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::DoNotOptimize(b.data());
  });
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

void print_ratios() {
  const double copy = median(g_seconds, "memcpy_64MiB");
  if (copy <= 0) return;
  // A memcpy of N bytes reads N and writes N.
  const double bandwidth = 2.0 * (64u << 20) / copy;
  std::printf(
      "\nmemcpy bandwidth (read + write): %.1f GB/s; times are CPU time of one thread, except\n"
      "memhalN* (wall time, all threads); medians over repetitions\n",
      bandwidth / 1e9);
  std::printf("%-6s %-11s %9s %9s %9s %9s %9s %8s %8s %8s\n", "src", "output", "memhal1t", "memhalN*", "opencv",
              "libyuv", "bound", "cv/1t", "yuv/1t", "1t/bound");
  for (PixelFormat f : {PixelFormat::Nv12, PixelFormat::Yuyv}) {
    for (bool planar : {false, true}) {
      const std::string key = std::string(fmt_name(f)) + "/" + job_name(planar);
      const double one = median(g_seconds, "memhal_1t/" + key), all = median(g_wall, "memhal_all/" + key);
      const double cv = median(g_seconds, "opencv/" + key), yuv = median(g_seconds, "libyuv/" + key);
      const double in = f == PixelFormat::Nv12 ? kSrcW * kSrcH * 1.5 : kSrcW * kSrcH * 2.0;
      const double out = planar ? 3.0 * 4 * kDst * kDst : 3.0 * kDst * kDst;
      const double bound = (in + out) / bandwidth;
      std::printf("%-6s %-11s %8.3fms %8.3fms %8.3fms %8.3fms %8.3fms %7.2fx %7.2fx %7.2fx\n", fmt_name(f),
                  job_name(planar), one * 1e3, all * 1e3, cv * 1e3, yuv * 1e3, bound * 1e3, cv / one, yuv / one,
                  one / bound);
    }
  }
}

}  // namespace

BENCHMARK(memcpy_bandwidth)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(memhal_job, nv12_rgb_1t, PixelFormat::Nv12, false, 1u)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(memhal_job, nv12_f32_1t, PixelFormat::Nv12, true, 1u)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(memhal_job, yuyv_rgb_1t, PixelFormat::Yuyv, false, 1u)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(memhal_job, yuyv_f32_1t, PixelFormat::Yuyv, true, 1u)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(memhal_job, nv12_rgb_all, PixelFormat::Nv12, false, 0u)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(memhal_job, nv12_f32_all, PixelFormat::Nv12, true, 0u)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(memhal_job, yuyv_rgb_all, PixelFormat::Yuyv, false, 0u)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(memhal_job, yuyv_f32_all, PixelFormat::Yuyv, true, 0u)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(opencv_job, nv12_rgb, PixelFormat::Nv12, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(opencv_job, nv12_f32, PixelFormat::Nv12, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(opencv_job, yuyv_rgb, PixelFormat::Yuyv, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(opencv_job, yuyv_f32, PixelFormat::Yuyv, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(libyuv_job, nv12_rgb, PixelFormat::Nv12, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(libyuv_job, nv12_f32, PixelFormat::Nv12, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(libyuv_job, yuyv_rgb, PixelFormat::Yuyv, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(libyuv_job, yuyv_f32, PixelFormat::Yuyv, true)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_ratios();
  return 0;
}
