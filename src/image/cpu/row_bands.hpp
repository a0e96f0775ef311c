// Rows of a destination shared out among the tasks of one pool run: one band of rows per task,
// which its task converts a chunk at a time from the front; a task whose band is done takes
// chunks of the following bands from their backs. A thread the host slows for a while (another
// process on its core) then holds the frame up by a chunk, not by the rest of its band.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

namespace memhal::detail {

class RowBands {
 public:
  /// Room for up to `max_tasks` bands.
  explicit RowBands(unsigned max_tasks) : bands_(new Band[max_tasks]) {}

  /// Splits rows [0, rows) into bands of `band_rows` (the last one shorter), one per task, and
  /// claims go `chunk_rows` at a time. Both even, so that a claim starts on an even row and 4:2:0
  /// row pairs stay together; rows < 2^31. Not concurrent with `claim`: the pool's run orders
  /// it before its tasks.
  void reset(int64_t rows, int64_t band_rows, int64_t chunk_rows) {
    tasks_ = static_cast<int>((rows + band_rows - 1) / band_rows);
    chunk_ = chunk_rows;
    for (int t = 0; t < tasks_; ++t) {
      const auto front = static_cast<uint64_t>(t * band_rows);
      const auto back = static_cast<uint64_t>(std::min(rows, (t + 1) * band_rows));
      bands_[t].rows.store(front << 32 | back, std::memory_order_relaxed);
    }
  }

  int tasks() const noexcept { return tasks_; }

  /// The next rows [y0, y1) for `task` to convert, false when none is left. `band` starts at
  /// `task` and is the caller's cursor: its own band first, then the following ones.
  bool claim(int task, int& band, int64_t& y0, int64_t& y1) {
    for (; band < task + tasks_; ++band) {
      const bool own = band == task;
      std::atomic<uint64_t>& rows = bands_[band % tasks_].rows;
      uint64_t span = rows.load(std::memory_order_relaxed);
      for (;;) {
        const auto front = static_cast<int64_t>(span >> 32);
        const auto back = static_cast<int64_t>(span & 0xffffffffu);
        if (front >= back) break;
        const int64_t a = own ? front : std::max(front, (back - chunk_) & ~int64_t{1});
        const int64_t b = own ? std::min(back, front + chunk_) : back;
        const uint64_t next = own ? static_cast<uint64_t>(b) << 32 | static_cast<uint64_t>(back)
                                  : static_cast<uint64_t>(front) << 32 | static_cast<uint64_t>(a);
        // No ordering needed: claimed rows are disjoint, and the pool orders the run's end.
        if (rows.compare_exchange_weak(span, next, std::memory_order_relaxed)) {
          y0 = a, y1 = b;
          return true;
        }
      }
    }
    return false;
  }

 private:
  struct alignas(64) Band {  // [front, back) as front << 32 | back, a cache line each
    std::atomic<uint64_t> rows{0};
  };
  std::unique_ptr<Band[]> bands_;
  int tasks_ = 0;
  int64_t chunk_ = 0;
};

}  // namespace memhal::detail
