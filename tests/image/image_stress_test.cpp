// ImageProcessor under concurrency (run under TSan by scripts/test.sh): pools of worker
// threads in several processors at once, one processor shared by several callers, and the pool
// itself handing out runs back to back (workers still polling) and spaced out (workers blocked).
#include <array>
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
  };
  // Two contexts in turn, each run a different task count: a worker that woke for one run and
  // ran a task of the next would count it in the wrong context, or past its end.
  std::array<Run, 2> runs;
  const auto task = [](void* context, unsigned worker, int t) {
    auto* r = static_cast<Run*>(context);
    ++r->hits.at(static_cast<std::size_t>(t));
    r->owner.at(static_cast<std::size_t>(t)) = worker;
  };
  for (int i = 0; i < 1000; ++i) {
    Run& run = runs[static_cast<std::size_t>(i % 2)];
    const int tasks = 1 + i % 17;
    run.hits.assign(static_cast<std::size_t>(tasks), 0);
    run.owner.assign(static_cast<std::size_t>(tasks), 0);
    // Past the poll the workers block, and the caller may finish every task before one wakes:
    // that worker must then run no task of a later run twice or with this run's context.
    if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (i % 7 == 3) std::this_thread::sleep_for(std::chrono::microseconds(300));
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
