// A fixed pool of worker threads for the CPU image backend. `run` hands out task indices to
// the workers and the calling thread and returns when all are done; it allocates nothing, so
// per-frame work stays allocation-free.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memhal/error.hpp>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace memhal::detail {

class ThreadPool {
 public:
  using TaskFn = void (*)(void* context, unsigned worker, int task);

  /// A pool of `threads` workers in all (the caller of `run` counts as one); 0 = hardware
  /// threads. `Unavailable` when the system refuses a thread.
  static Result<std::unique_ptr<ThreadPool>> create(unsigned threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const noexcept { return static_cast<unsigned>(workers_.size()) + 1; }

  /// Calls `fn(context, worker, task)` for every task in [0, tasks), worker < size(); blocks
  /// until every call returned. Not reentrant: one `run` at a time.
  void run(int tasks, TaskFn fn, void* context);

 private:
  ThreadPool() = default;
  void worker_loop(unsigned worker);
  void drain(unsigned worker);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::atomic<uint64_t> generation_{0};
  bool stop_ = false;
  std::atomic<unsigned> busy_{0};
  TaskFn fn_ = nullptr;
  void* context_ = nullptr;
  int tasks_ = 0;
  std::atomic<int> next_{0};
};

}  // namespace memhal::detail
