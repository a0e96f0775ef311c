// ImageProcessor under concurrency (run under TSan by scripts/test.sh): pools of worker
// threads in several processors at once, and one processor shared by several callers.
#include <memhal/image_processor.hpp>
#include <random>
#include <thread>
#include <vector>

#include "image_test_util.hpp"
#include "test_support.hpp"

namespace memhal {
namespace {

std::vector<std::byte> bytes_of(const Tensor& t) {
  auto map = *t.map(CpuAccess::Read);
  return {map.data(), map.data() + map.size_bytes()};
}

struct Job {
  Tensor src = *Tensor::image(160, 90, PixelFormat::Nv12, MemoryKind::Mem);
  ConvertOptions options;
  Job() {
    std::mt19937 rng(4);
    testing::fill_random(src, rng);
    options.resize = ResizeMode::Letterbox;
  }
  std::vector<std::byte> expected() {
    auto proc = *ImageProcessor::create({.threads = 1, .backend = ImageBackend::Cpu});
    Tensor dst = *Tensor::image(64, 64, PixelFormat::Rgb, MemoryKind::Mem);
    EXPECT_OK(proc.convert(src, dst, options));
    return bytes_of(dst);
  }
};

TEST(ImageProcessorStress, ProcessorsOnSeveralThreadsAgreeWithOneThread) {
  Job job;
  const auto expected = job.expected();
  std::vector<std::thread> callers;
  std::vector<int> mismatches(3, 0);
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&, t] {
      auto proc = *ImageProcessor::create({.threads = 3, .backend = ImageBackend::Cpu});
      Tensor dst = *Tensor::image(64, 64, PixelFormat::Rgb, MemoryKind::Mem);
      for (int i = 0; i < 30; ++i) {
        if (!proc.convert(job.src, dst, job.options) || bytes_of(dst) != expected) ++mismatches[t];
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0, 0}));
}

TEST(ImageProcessorStress, OneProcessorSharedBySeveralCallersSerialisesThem) {
  Job job;
  const auto expected = job.expected();
  auto proc = *ImageProcessor::create({.threads = 2, .backend = ImageBackend::Cpu});
  std::vector<std::thread> callers;
  std::vector<int> mismatches(3, 0);
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&, t] {
      Tensor dst = *Tensor::image(64, 64, PixelFormat::Rgb, MemoryKind::Mem);
      for (int i = 0; i < 30; ++i) {
        if (!proc.convert(job.src, dst, job.options) || bytes_of(dst) != expected) ++mismatches[t];
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0, 0}));
}

}  // namespace
}  // namespace memhal
