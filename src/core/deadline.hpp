// Deadlines for timeouts a caller chose. `steady_clock::now() + timeout` overflows (undefined
// behaviour, in practice a deadline in the past) for timeouts near the duration's maximum, and
// the standard library's wait_for does exactly that; so a deadline saturates instead, and
// `Clock::time_point::max()` means "no deadline".
#pragma once

#include <chrono>
#include <climits>

namespace memhal::detail {

using Clock = std::chrono::steady_clock;

/// `now + timeout`, saturated at `Clock::time_point::max()`; `now` for a timeout <= 0.
template <class Rep, class Period>
Clock::time_point deadline_after(std::chrono::duration<Rep, Period> timeout,
                                 Clock::time_point now = Clock::now()) noexcept {
  using Timeout = std::chrono::duration<Rep, Period>;
  if (timeout <= Timeout::zero()) return now;
  // Compare in the timeout's own unit (truncating the headroom), so nothing can overflow.
  const auto headroom = std::chrono::duration_cast<Timeout>(Clock::time_point::max() - now);
  if (timeout >= headroom) return Clock::time_point::max();
  return now + std::chrono::duration_cast<Clock::duration>(timeout);
}

/// Milliseconds from `now` to `deadline` for one poll(2): rounded up, at least 0 and at most
/// INT_MAX (a longer wait takes several polls); -1 (forever) for no deadline.
inline int poll_timeout_ms(Clock::time_point deadline, Clock::time_point now = Clock::now()) noexcept {
  if (deadline == Clock::time_point::max()) return -1;
  if (deadline <= now) return 0;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
  return left.count() >= INT_MAX ? INT_MAX : static_cast<int>(left.count());
}

}  // namespace memhal::detail
