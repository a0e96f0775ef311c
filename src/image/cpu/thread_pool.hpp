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
  /// until every call returned, not until every worker has woken: a worker that comes late
  /// finds no task left and the caller does not wait for it. Not reentrant: one `run` at a time.
  void run(int tasks, TaskFn fn, void* context);

 private:
  // What one run asks for, as a worker copies it under the lock.
  struct Run {
    uint32_t id = 0;
    TaskFn fn = nullptr;
    void* context = nullptr;
    int tasks = 0;
  };

  ThreadPool() = default;
  void worker_loop(unsigned worker);
  // Runs tasks of `run` until none is left; whether it ran any.
  bool drain(unsigned worker, const Run& run);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  bool stop_ = false;
  Run run_;                          // under mutex_
  std::atomic<uint64_t> ticket_{0};  // run id << 32 | next task: a task is claimed by a CAS
  std::atomic<int> remaining_{0};    // tasks of the current run not yet returned
};

}  // namespace memhal::detail
