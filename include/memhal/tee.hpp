/// @file
/// `Tee`: fans one frame out to N branches without copying its bytes.
///
/// `push` makes the frame's payload shareable once (no copy), hands a share to each branch but
/// the last and moves the original into the last: whatever the domain, no byte is copied and
/// every branch sees the same memory. A branch that then writes gets its own copy
/// (copy-on-write), and the others are unaffected.
///
/// Thread-safety: `push` is const and may run on several threads at once; the frames it
/// returns are independent values.
#pragma once

#include <cstddef>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/frame.hpp>
#include <vector>

namespace memhal {

class MEMHAL_EXPORT Tee {
 public:
  /// A tee with `branches` outputs. `InvalidArgument` for 0.
  static Result<Tee> create(std::size_t branches);

  std::size_t branches() const noexcept { return branches_; }

  /// One frame per branch, in branch order, sharing `frame`'s payload and metadata: a share
  /// to each branch but the last, `frame` itself to the last. Never copies bytes: after
  /// `make_shareable()` every share is a count bump. `OutOfMemory` when the list of
  /// `branches()` frames cannot be allocated (a count no machine can hold is refused before
  /// allocating); otherwise the errors of `Frame::share`.
  Result<std::vector<Frame>> push(Frame frame) const;

 private:
  explicit Tee(std::size_t branches) noexcept : branches_(branches) {}
  std::size_t branches_;
};

}  // namespace memhal
