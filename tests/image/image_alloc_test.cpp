// Steady state allocates nothing: this binary replaces the global operator new to count every
// heap allocation, converts a few frames to warm up, then counts a second run of frames.
#include <atomic>
#include <cstdlib>
#include <memhal/image_processor.hpp>
#include <new>
#include <random>

#include "image_test_util.hpp"
#include "test_support.hpp"

// The replacements pair malloc with free on purpose; GCC cannot see that they are paired.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
std::atomic<long> g_allocations{0};
}

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
  return operator new(size);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}

namespace memhal {
namespace {

struct Job {
  PixelFormat from, to;
  DType dtype;
  Interpolation interpolation;
  Rotation rotation;
};

TEST(ImageProcessorAllocations, SteadyStateFramesAllocateNothing) {
  const Job jobs[] = {
      {PixelFormat::Nv12, PixelFormat::PlanarRgb, DType::F32, Interpolation::Bilinear, Rotation::None},
      {PixelFormat::Yuyv, PixelFormat::Rgb, DType::U8, Interpolation::Area, Rotation::None},
      {PixelFormat::Rgba, PixelFormat::Nv12, DType::U8, Interpolation::Nearest, Rotation::Cw90},
  };
  for (unsigned threads : {1u, 3u}) {
    auto proc = std::move(*ImageProcessor::create({.threads = threads, .backend = ImageBackend::Cpu}));
    for (const Job& job : jobs) {
      ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(640, 360, job.from, MemoryKind::Mem));
      ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(160, 160, job.to, MemoryKind::Mem, job.dtype));
      std::mt19937 rng(1);
      testing::fill_random(src, rng);
      ConvertOptions o;
      o.resize = ResizeMode::Letterbox;
      o.interpolation = job.interpolation;
      o.rotation = job.rotation;
      for (int warm = 0; warm < 3; ++warm) ASSERT_OK(proc.convert(src, dst, o));
      const long before = g_allocations.load();
      for (int frame = 0; frame < 20; ++frame) {
        auto result = proc.convert(src, dst, o);
        if (!result) FAIL() << result.error().to_string();
      }
      EXPECT_EQ(g_allocations.load() - before, 0)
          << to_string(job.from) << " -> " << to_string(job.to) << " with " << threads << " threads";
    }
  }
}

TEST(ImageProcessorAllocations, CounterSeesAllocations) {
  const long before = g_allocations.load();
  auto* p = new std::vector<int>(100);
  delete p;
  EXPECT_GE(g_allocations.load() - before, 2);
}

}  // namespace
}  // namespace memhal
