#include "image/cpu/thread_pool.hpp"

#include <chrono>

#include <system_error>

#include "core/strings.hpp"

namespace memhal::detail {

Result<std::unique_ptr<ThreadPool>> ThreadPool::create(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::unique_ptr<ThreadPool> pool(new ThreadPool());
  pool->workers_.reserve(threads - 1);
  for (unsigned i = 1; i < threads; ++i) {
    // std::thread reports failure by exception; the library answers with a Result instead.
    try {
      pool->workers_.emplace_back([raw = pool.get(), i] { raw->worker_loop(i); });
    } catch (const std::system_error& e) {
      return fail(ErrorCode::Unavailable, "starting image worker thread ", i, " of ", threads, ": ", e.what());
    }
  }
  return pool;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& thread : workers_) thread.join();
}

bool ThreadPool::drain(unsigned worker, const Run& run) {
  bool ran = false;
  uint64_t ticket = ticket_.load(std::memory_order_acquire);
  for (;;) {
    // A ticket of another run (a worker that woke after its run ended) or one past the last
    // task: nothing left here. Claimed by CAS, not fetch_add, so that a late worker never
    // moves the next run's counter.
    const auto task = static_cast<int>(ticket & 0xffffffffu);
    if (static_cast<uint32_t>(ticket >> 32) != run.id || task >= run.tasks) return ran;
    if (!ticket_.compare_exchange_weak(ticket, ticket + 1, std::memory_order_acq_rel)) continue;
    run.fn(run.context, worker, task);
    ran = true;
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mutex_);  // so that `run` cannot miss the notification
      done_.notify_one();
    }
    ticket = ticket_.load(std::memory_order_acquire);
  }
}

namespace {

// How long a worker keeps polling for the next run, and `run` for the workers to finish, before
// blocking: waking a blocked thread takes 25-30 us here (a 2-core VM), a quarter of a 1080p
// frame's conversion on two threads, so a worker that blocked between back-to-back frames
// joined each one late and took a quarter of its tasks (measured). Frames further apart than
// this cost the wake-up, and the poll costs at most this much CPU per run.
constexpr auto kPoll = std::chrono::microseconds(200);

template <class Ready>
bool poll(Ready&& ready) {
  const auto end = std::chrono::steady_clock::now() + kPoll;
  for (unsigned i = 1;; ++i) {
    if (ready()) return true;
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::yield();  // a CPU shared with other work (or a sanitizer) gets it back
    }
  }
}

}  // namespace

void ThreadPool::worker_loop(unsigned worker) {
  Run run;
  bool poll_next = true;
  for (;;) {
    if (poll_next) poll([&] { return static_cast<uint32_t>(ticket_.load(std::memory_order_acquire) >> 32) != run.id; });
    {
      // Also when the poll saw the new run: the lock orders the run's fields before their use.
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || run_.id != run.id; });
      if (stop_) return;
      run = run_;
    }
    // A worker that came too late for any task was blocked, and the frames are further apart
    // than the poll: it blocks again at once rather than spin beside the caller's next work.
    poll_next = drain(worker, run);
  }
}

void ThreadPool::run(int tasks, TaskFn fn, void* context) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1) {
    for (int task = 0; task < tasks; ++task) fn(context, 0, task);
    return;
  }
  Run run;
  {
    std::lock_guard lock(mutex_);
    run = Run{run_.id + 1, fn, context, tasks};
    run_ = run;
    remaining_.store(tasks, std::memory_order_relaxed);
    ticket_.store(uint64_t{run.id} << 32, std::memory_order_release);  // also what the workers poll
  }
  wake_.notify_all();
  drain(0, run);
  if (poll([&] { return remaining_.load(std::memory_order_acquire) == 0; })) return;
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return remaining_.load(std::memory_order_acquire) == 0; });
}

}  // namespace memhal::detail
