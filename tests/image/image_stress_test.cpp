// ImageProcessor under concurrency (run under TSan by scripts/test.sh): pools of worker
// threads in several processors at once, one processor shared by several callers, and the pool
// itself handing out runs back to back (workers still polling) and spaced out (workers blocked).
#include <chrono>
#include <memhal/image_processor.hpp>
#include <random>
#include <thread>
#include <vector>

#include "image/cpu/thread_pool.hpp"
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

// Every task of every run runs exactly once and its plain writes are visible when `run`
// returns, for runs back to back (a worker polls for the next one) and runs more than the poll
// apart (a worker blocks and is woken). Which worker gets which task is up to the scheduler.
TEST(ThreadPoolStress, BackToBackAndSpacedRunsRunEveryTaskOnce) {
  ASSERT_OK_AND_ASSIGN(auto pool, detail::ThreadPool::create(3));
  struct Run {
    std::vector<int> hits;        // plain ints: TSan checks the pool orders them
    std::vector<unsigned> owner;  // which worker ran each task
  } run;
  const auto task = [](void* context, unsigned worker, int t) {
    auto* r = static_cast<Run*>(context);
    ++r->hits[static_cast<std::size_t>(t)];
    r->owner[static_cast<std::size_t>(t)] = worker;
  };
  for (int i = 0; i < 400; ++i) {
    const int tasks = 1 + i % 17;
    run.hits.assign(static_cast<std::size_t>(tasks), 0);
    run.owner.assign(static_cast<std::size_t>(tasks), 0);
    if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the poll: workers block
    pool->run(tasks, task, &run);
    for (int t = 0; t < tasks; ++t) {
      ASSERT_EQ(run.hits[static_cast<std::size_t>(t)], 1) << "run " << i << " task " << t;
      ASSERT_LT(run.owner[static_cast<std::size_t>(t)], pool->size());
    }
  }
}

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
