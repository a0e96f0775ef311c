// ImageProcessor under concurrency (run under TSan by scripts/test.sh): pools of worker
// threads in several processors at once, one processor shared by several callers, the pool
// itself handing out runs back to back (workers still polling) and spaced out (workers blocked),
// and the rows of a run shared out among its tasks (RowBands), alone and under threads.
#include <algorithm>
#include <array>
#include <chrono>
#include <memhal/image_processor.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "image/cpu/row_bands.hpp"
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

struct Claim {
  int task;
  int64_t y0, y1;
};

// Claims until `task` has none left, in the order it got them.
std::vector<Claim> claim_all(detail::RowBands& bands, int task) {
  std::vector<Claim> claims;
  int64_t y0 = 0, y1 = 0;
  for (int band = task; bands.claim(task, band, y0, y1);) claims.push_back({task, y0, y1});
  return claims;
}

// Every row of [0, rows) in exactly one claim, each claim non-empty, starting on an even row and
// no longer than a chunk (4:2:0 outputs convert row pairs), or a row more where it ends an odd
// number of rows.
void expect_each_row_once(const std::vector<Claim>& claims, int64_t rows, int64_t chunk, const std::string& what) {
  std::vector<int> hits(static_cast<std::size_t>(rows), 0);
  for (const Claim& c : claims) {
    ASSERT_LT(c.y0, c.y1) << what;
    ASSERT_LE(c.y1 - c.y0, chunk + (c.y1 == rows && rows % 2 == 1)) << what;
    ASSERT_EQ(c.y0 % 2, 0) << what << ": a claim at row " << c.y0;
    ASSERT_GE(c.y0, 0) << what;
    ASSERT_LE(c.y1, rows) << what;
    for (int64_t y = c.y0; y < c.y1; ++y) ++hits[static_cast<std::size_t>(y)];
  }
  for (int64_t y = 0; y < rows; ++y) ASSERT_EQ(hits[static_cast<std::size_t>(y)], 1) << what << ": row " << y;
}

// A task that runs alone (the others' threads late or slowed) converts its band front to back,
// then each following band back to front, and leaves the others nothing.
TEST(RowBands, OneTaskAloneTakesItsBandFromTheFrontThenTheOthersFromTheirBacks) {
  detail::RowBands bands(3);
  bands.reset(101, 34, 6);  // bands [0, 34), [34, 68), [68, 101)
  ASSERT_EQ(bands.tasks(), 3);
  const auto claims = claim_all(bands, 1);
  expect_each_row_once(claims, 101, 6, "task 1 alone");
  // Its own band [34, 68) first, in order; then band 2 from its back, then band 0.
  int64_t next = 34;
  std::size_t i = 0;
  for (; i < claims.size() && claims[i].y0 >= 34 && claims[i].y1 <= 68; ++i) {
    EXPECT_EQ(claims[i].y0, next);
    next = claims[i].y1;
  }
  EXPECT_EQ(next, 68);
  int64_t back = 101;
  for (; i < claims.size() && claims[i].y0 >= 68; ++i) {
    EXPECT_EQ(claims[i].y1, back);
    back = claims[i].y0;
  }
  EXPECT_EQ(back, 68);
  back = 34;
  for (; i < claims.size(); ++i) {
    EXPECT_EQ(claims[i].y1, back);
    back = claims[i].y0;
  }
  EXPECT_EQ(back, 0);
  EXPECT_TRUE(claim_all(bands, 0).empty());
  EXPECT_TRUE(claim_all(bands, 2).empty());
}

// Tasks taking turns in any order, as threads at any relative speed would: each row once. One
// band (a processor on one thread) is claimed whole.
TEST(RowBands, ClaimsInAnyInterleavingCoverEveryRowOnce) {
  std::mt19937 rng(7);
  detail::RowBands bands(5);
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t rows = std::uniform_int_distribution<int64_t>(1, 300)(rng);
    const int tasks = std::uniform_int_distribution<int>(1, 5)(rng);
    const int64_t band = ((rows + tasks - 1) / tasks + 1) & ~int64_t{1};
    const int64_t chunk = std::min(band, 2 * std::uniform_int_distribution<int64_t>(1, 12)(rng));
    bands.reset(rows, band, chunk);
    const std::string what = std::to_string(rows) + " rows, bands of " + std::to_string(band) + ", chunks of " +
                             std::to_string(chunk) + " (trial " + std::to_string(trial) + ")";
    ASSERT_EQ(bands.tasks(), (rows + band - 1) / band) << what;
    std::vector<int> cursor(static_cast<std::size_t>(bands.tasks()));
    std::vector<bool> done(cursor.size(), false);
    for (int t = 0; t < bands.tasks(); ++t) cursor[static_cast<std::size_t>(t)] = t;
    std::vector<Claim> claims;
    for (std::size_t left = cursor.size(); left > 0;) {
      const int t = std::uniform_int_distribution<int>(0, bands.tasks() - 1)(rng);
      const auto ti = static_cast<std::size_t>(t);
      if (done[ti]) continue;
      int64_t y0 = 0, y1 = 0;
      if (bands.claim(t, cursor[ti], y0, y1)) {
        claims.push_back({t, y0, y1});
      } else {
        done[ti] = true, --left;
      }
    }
    expect_each_row_once(claims, rows, chunk, what);
    if (bands.tasks() == 1) {
      ASSERT_EQ(claims.size(), static_cast<std::size_t>((rows + chunk - 1) / chunk)) << what;
    }
  }
}

// The same with the pool's threads claiming at once (TSan checks that the claims order nothing
// the rows need: each row's plain counter is written by one thread only).
TEST(RowBands, ThreadsClaimingAtOnceCoverEveryRowOnce) {
  ASSERT_OK_AND_ASSIGN(auto pool, detail::ThreadPool::create(3));
  struct Run {
    detail::RowBands bands{3};
    std::vector<int> hits;
    std::array<std::vector<Claim>, 3> claims;  // by worker
  } run;
  const auto task = [](void* context, unsigned worker, int t) {
    auto* r = static_cast<Run*>(context);
    int64_t y0 = 0, y1 = 0;
    for (int band = t; r->bands.claim(t, band, y0, y1);) {
      r->claims[worker].push_back({t, y0, y1});
      for (int64_t y = y0; y < y1; ++y) ++r->hits[static_cast<std::size_t>(y)];
      if (y0 % 3 == 0) std::this_thread::yield();  // uneven speeds, so that tasks take from each other
    }
  };
  int stolen = 0;  // claims outside the claiming task's band
  for (int i = 0; i < 300; ++i) {
    const int64_t rows = 40 + i % 61;
    const int64_t band = ((rows + 2) / 3 + 1) & ~int64_t{1};
    const int64_t chunk = 2 + 2 * (i % 4);
    run.bands.reset(rows, band, chunk);
    run.hits.assign(static_cast<std::size_t>(rows), 0);
    for (auto& c : run.claims) c.clear();
    pool->run(run.bands.tasks(), task, &run);
    std::vector<Claim> all;
    for (const auto& c : run.claims) all.insert(all.end(), c.begin(), c.end());
    for (const Claim& c : all) stolen += c.y0 / band != c.task;
    ASSERT_EQ(std::count(run.hits.begin(), run.hits.end(), 1), rows) << "run " << i;
    expect_each_row_once(all, rows, chunk, "run " + std::to_string(i));
  }
  // A task that finishes its band takes from the others: with three threads on this machine's
  // cores and the yields, it happens (where it never did, the test would check nothing new).
  EXPECT_GT(stolen, 0);
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
