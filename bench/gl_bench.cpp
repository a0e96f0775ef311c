// The GL backend against the CPU backend on the model-input job of image_bench: 1920x1080
// NV12 -> 640x640 letterboxed, (a) RGB u8 and (b) f32 planar normalised.
//   gl_pbo:   source and destination are Pbo images of the processor: GL reads and writes them
//             in place (the steady state of a GL pipeline; each iteration maps the result for
//             the CPU, which waits for the GPU).
//   gl_host:  source and destination in host memory: upload + convert + read back, the round
//             trip a CPU-side pipeline pays to use GL.
//   cpu_1t / cpu_all: the CPU backend on host memory.
// and, for the f32 planar output, where the frame and the result live (GL throughout):
//   gl_import: the source is a DMA-BUF (a memfd where this machine allocates none), imported
//              through EGL_EXT_image_dma_buf_import and sampled in place; destination a Pbo.
//   gl_upload: the same frame in host memory, uploaded each call; destination a Pbo.
//   gl_fddst:  source a Pbo, destination a DMA-BUF (or memfd): rendered into in place where the
//              driver imports it as a render target (Mesa 25), else the result is read back.
// gl_upload / gl_import is what the import saves; gl_fddst / gl_pbo what writing into fd
// memory costs against a Pbo. Run it on Mesa 25 (the build tree's mesa25/env) for the import.
// On llvmpipe (Mesa's software rasteriser, how CI runs it) GL is slower than the CPU backend:
// the figures guard against regressions. On a real GPU the same binary shows what GL buys.
// Wall time throughout: GL work runs on the processor's GL thread.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memhal/image_processor.hpp>
#include <memhal/memory.hpp>
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

MemoryKind fd_memory() {
  return is_available(MemoryKind::DmaBuf) ? MemoryKind::DmaBuf : MemoryKind::Shm;
}

// Whether gl_fddst rendered into its destination in place (stats().dma_buf_renders).
bool g_rendered_into_fd = false;

// `where`: "pbo" (GL, Pbo images), "host" (GL, Mem images), "import" / "upload" / "fddst" (see
// the top) or "cpu".
void job(benchmark::State& state, const char* where, bool planar, unsigned threads) {
  const bool gl = std::string(where) != "cpu";
  auto processor = ImageProcessor::create({threads, gl ? ImageBackend::Gl : ImageBackend::Cpu});
  if (!processor) {
    state.SkipWithError(processor.error().message().c_str());
    return;
  }
  if (const GlDriverInfo* driver = processor->gl_driver()) g_renderer = driver->renderer;
  const std::string w = where;
  const MemoryKind memory = w == "pbo" ? MemoryKind::Pbo : MemoryKind::Mem;
  const MemoryKind src_memory = w == "import"   ? fd_memory()
                                : w == "upload" ? MemoryKind::Mem
                                : w == "fddst"  ? MemoryKind::Pbo
                                                : memory;
  const MemoryKind dst_memory = w == "import" || w == "upload" ? MemoryKind::Pbo : w == "fddst" ? fd_memory() : memory;
  Tensor src = must(processor->create_image(kSrcW, kSrcH, PixelFormat::Nv12, DType::U8, src_memory), "source");
  Tensor dst = must(processor->create_image(kDst, kDst, planar ? PixelFormat::PlanarRgb : PixelFormat::Rgb,
                                            planar ? DType::F32 : DType::U8, dst_memory),
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
  if (w == "import" && stats.dma_buf_imports == 0) {
    state.SkipWithError(("not imported: " + stats.dma_buf_import_note).c_str());
  }
  if (w == "fddst") g_rendered_into_fd = stats.dma_buf_renders > 0;
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
    if (planar) {
      for (const char* where : {"import", "upload", "fddst"}) {
        benchmark::RegisterBenchmark(("gl_" + std::string(where) + "/nv12/" + out).c_str(),
                                     [=](benchmark::State& s) { job(s, where, planar, 1); })
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
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
  const std::string key = "/nv12/f32_planar/real_time";
  const double imported = r.real_seconds("gl_import" + key), uploaded = r.real_seconds("gl_upload" + key);
  const double pbo = r.real_seconds("gl_pbo" + key), fd_dst = r.real_seconds("gl_fddst" + key);
  const char* fd = is_available(MemoryKind::DmaBuf) ? "DMA-BUF" : "memfd";
  std::printf("\nf32_planar, source: %s imported %.2fms, host memory uploaded %.2fms: upload/import %.2fx\n", fd,
              imported * 1e3, uploaded * 1e3, imported > 0 ? uploaded / imported : 0.0);
  std::printf("f32_planar, destination: Pbo %.2fms, %s %s %.2fms: fd/Pbo %.2fx\n", pbo * 1e3, fd,
              g_rendered_into_fd ? "rendered into" : "read back into", fd_dst * 1e3, pbo > 0 ? fd_dst / pbo : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  return memhal::bench::run_benchmarks(argc, argv, summary);
}
