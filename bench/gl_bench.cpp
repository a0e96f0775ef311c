// The GL backend against the CPU backend on the model-input job of image_bench: 1920x1080
// NV12 -> 640x640 letterboxed, (a) RGB u8 and (b) f32 planar normalised.
//   gl_pbo:   source and destination are Pbo images of the processor: GL reads and writes them
//             in place (the steady state of a GL pipeline; each iteration maps the result for
//             the CPU, which waits for the GPU).
//   gl_host:  source and destination in host memory: upload + convert + read back, the round
//             trip a CPU-side pipeline pays to use GL.
//   cpu_1t / cpu_all: the CPU backend on host memory.
// On llvmpipe (Mesa's software rasteriser, how CI runs it) GL is slower than the CPU backend:
// the figures guard against regressions. On a real GPU the same binary shows what GL buys.
// Wall time throughout: GL work runs on the processor's GL thread.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memhal/image_processor.hpp>
#include <memhal/tensor_map.hpp>
#include <random>
#include <string>

#include "support/ratio_reporter.hpp"

namespace {

using namespace memhal;

constexpr int kSrcW = 1920, kSrcH = 1080, kDst = 640;
std::string g_renderer = "none";

template <class T>
T must(Result<T> result, const char* what) {
  if (!result) {
    std::fprintf(stderr, "gl_bench: %s failed: %s\n", what, result.error().to_string().c_str());
    std::exit(1);
  }
  return std::move(*result);
}

ConvertOptions job_options(bool planar) {
  ConvertOptions o;
  o.resize = ResizeMode::Letterbox;
  if (planar) {
    o.mean = {0.485f, 0.456f, 0.406f, 0};
    o.std = {0.229f, 0.224f, 0.225f, 1};
  }
  return o;
}

void fill(const Tensor& t) {
  auto map = must(t.map(CpuAccess::Write), "map source");
  std::mt19937 rng(1);
  for (std::size_t i = 0; i < t.layout().planes().size(); ++i) {
    const PlaneLayout& p = t.layout().planes()[i];
    for (int64_t b = 0; b < p.pitch * p.height; ++b) map.plane(i)[b] = std::byte((b * 7 + (rng() & 15)) & 0xFF);
  }
}

// `where`: "pbo" (GL, Pbo images), "host" (GL, Mem images) or "cpu".
void job(benchmark::State& state, const char* where, bool planar, unsigned threads) {
  const bool gl = std::string(where) != "cpu";
  auto processor = ImageProcessor::create({threads, gl ? ImageBackend::Gl : ImageBackend::Cpu});
  if (!processor) {
    state.SkipWithError(processor.error().message().c_str());
    return;
  }
  if (const GlDriverInfo* driver = processor->gl_driver()) g_renderer = driver->renderer;
  const std::optional<MemoryKind> memory = std::string(where) == "pbo" ? MemoryKind::Pbo : MemoryKind::Mem;
  Tensor src = must(processor->create_image(kSrcW, kSrcH, PixelFormat::Nv12, DType::U8, memory), "source");
  Tensor dst = must(processor->create_image(kDst, kDst, planar ? PixelFormat::PlanarRgb : PixelFormat::Rgb,
                                            planar ? DType::F32 : DType::U8, memory),
                    "destination");
  fill(src);
  const ConvertOptions options = job_options(planar);
  for (auto _ : state) {
    if (auto done = processor->convert(src, dst, options); !done) {
      state.SkipWithError(done.error().message().c_str());
      return;
    }
    auto map = dst.map(CpuAccess::Read);  // waits for GL, as a consumer of the result would
    benchmark::DoNotOptimize(map);
  }
  const ImageProcessorStats stats = processor->stats();
  if (gl && stats.fallbacks > 0) state.SkipWithError(("fell back to the CPU: " + stats.last_fallback).c_str());
}

void register_all() {
  for (bool planar : {false, true}) {
    const std::string out = planar ? "f32_planar" : "rgb_u8";
    for (const char* where : {"pbo", "host"}) {
      benchmark::RegisterBenchmark(("gl_" + std::string(where) + "/nv12/" + out).c_str(),
                                   [=](benchmark::State& s) { job(s, where, planar, 1); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
    benchmark::RegisterBenchmark(("cpu_1t/nv12/" + out).c_str(), [=](benchmark::State& s) { job(s, "cpu", planar, 1); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("cpu_all/nv12/" + out).c_str(),
                                 [=](benchmark::State& s) { job(s, "cpu", planar, 0); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
}

void summary(const memhal::bench::RatioReporter& r) {
  std::printf("\nGL renderer: %s\n%-11s %10s %10s %10s %10s %12s %12s\n", g_renderer.c_str(), "output", "gl_pbo",
              "gl_host", "cpu_1t", "cpu_all", "cpu_1t/pbo", "cpu_1t/host");
  for (const char* out : {"rgb_u8", "f32_planar"}) {
    const std::string key = std::string("/nv12/") + out + "/real_time";
    const double pbo = r.real_seconds("gl_pbo" + key), host = r.real_seconds("gl_host" + key);
    const double one = r.real_seconds("cpu_1t" + key), all = r.real_seconds("cpu_all" + key);
    auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    std::printf("%-11s %8.2fms %8.2fms %8.2fms %8.2fms %11.2fx %11.2fx\n", out, pbo * 1e3, host * 1e3, one * 1e3,
                all * 1e3, ratio(one, pbo), ratio(one, host));
  }
  std::printf("(ratios above 1: GL is faster than one CPU thread)\n");
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  return memhal::bench::run_benchmarks(argc, argv, summary);
}
