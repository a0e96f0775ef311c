#include "image/cpu/thread_pool.hpp"

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

void ThreadPool::drain(unsigned worker) {
  for (int task = next_.fetch_add(1); task < tasks_; task = next_.fetch_add(1)) fn_(context_, worker, task);
}

void ThreadPool::worker_loop(unsigned worker) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    drain(worker);
    std::lock_guard lock(mutex_);
    if (--busy_ == 0) done_.notify_one();
  }
}

void ThreadPool::run(int tasks, TaskFn fn, void* context) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1) {
    for (int task = 0; task < tasks; ++task) fn(context, 0, task);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    fn_ = fn;
    context_ = context;
    tasks_ = tasks;
    next_.store(0);
    busy_ = static_cast<unsigned>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  drain(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return busy_ == 0; });
}

}  // namespace memhal::detail
