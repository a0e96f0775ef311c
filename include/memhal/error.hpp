/// @file
/// `Error`, `ErrorCode` and `Result<T>`: how every fallible memhal call reports failure.
///
/// memhal does not throw. A fallible function returns `Result<T>` (a `[[nodiscard]]`
/// `tl::expected<T, Error>`);
/// an `Error` carries a stable `ErrorCode` (the same integers the C API returns), the `errno`
/// of the system call that failed (0 when none did) and a message that names the operation,
/// the object and the cause. Use only `has_value()`, `value()`, `error()`, `*`, `->` and
/// `and_then` on a `Result`, so that a later move to `std::expected` is a one-line change.
#pragma once

#include <cstdint>
#include <functional>
#include <memhal/export.hpp>
#include <memhal/vocabulary.hpp>  // ErrorCode, to_string(ErrorCode)
#include <optional>
#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <type_traits>
#include <utility>

namespace memhal {

/// A failure: a code, the `errno` behind it (0 when there is none) and a message.
class MEMHAL_EXPORT Error {
 public:
  Error(ErrorCode code, std::string message, int sys_errno = 0)
      : code_(code), sys_errno_(sys_errno), message_(std::move(message)) {}

  ErrorCode code() const noexcept { return code_; }
  int sys_errno() const noexcept { return sys_errno_; }
  const std::string& message() const noexcept { return message_; }

  /// "invalid_argument: <message>", for logs.
  std::string to_string() const;

 private:
  ErrorCode code_;
  int sys_errno_;
  std::string message_;
};

/// The expected type `Result` wraps and its error side: the one place a move to
/// `std::expected` changes (`std::expected<T, Error>`, `std::unexpected<Error>`).
template <class T>
using ResultBase = tl::expected<T, Error>;
using Unexpected = tl::unexpected<Error>;

/// The value of a successful call, or the `Error` that stopped it. `[[nodiscard]]`: a
/// discarded `Result` is a compiler warning (an error under `-Werror`); where ignoring a
/// failure is correct, say why and cast to `(void)`.
template <class T>
class [[nodiscard]] Result : public ResultBase<T> {
 public:
  using ResultBase<T>::ResultBase;
  Result(ResultBase<T> base) : ResultBase<T>(std::move(base)) {}

  /// `f(value)` (or `f()` for `Result<void>`), itself returning a `Result`, when this holds a
  /// value; else this error in `f`'s result type.
  template <class F>
  auto and_then(F&& f) const& {
    return chain(*this, std::forward<F>(f));
  }
  template <class F>
  auto and_then(F&& f) && {
    return chain(std::move(*this), std::forward<F>(f));
  }

 private:
  template <class Self, class F>
  static auto chain(Self&& self, F&& f) {
    if constexpr (std::is_void_v<T>) {
      using Next = std::remove_cvref_t<std::invoke_result_t<F>>;
      if (!self.has_value()) return Next(Unexpected(std::forward<Self>(self).error()));
      return Next(std::invoke(std::forward<F>(f)));
    } else {
      using Next = std::remove_cvref_t<std::invoke_result_t<F, decltype(*std::forward<Self>(self))>>;
      if (!self.has_value()) return Next(Unexpected(std::forward<Self>(self).error()));
      return Next(std::invoke(std::forward<F>(f), *std::forward<Self>(self)));
    }
  }
};

/// The error side of a `Result`, for `return memhal::unexpected(...)`.
inline Unexpected unexpected(Error error) {
  return Unexpected(std::move(error));
}

}  // namespace memhal

#define MEMHAL_DETAIL_CONCAT_INNER(a, b) a##b
#define MEMHAL_DETAIL_CONCAT(a, b) MEMHAL_DETAIL_CONCAT_INNER(a, b)

/// Evaluates `expr` (a `Result`); if it holds an error, returns that error from the enclosing
/// function, which must itself return a `Result`.
#define MEMHAL_TRY(expr)                                                                                     \
  do {                                                                                                       \
    auto&& memhal_try_result_ = (expr);                                                                      \
    if (!memhal_try_result_.has_value()) return ::memhal::unexpected(std::move(memhal_try_result_).error()); \
  } while (false)

#define MEMHAL_DETAIL_ASSIGN_OR_RETURN(tmp, lhs, expr)                       \
  auto tmp = (expr);                                                         \
  if (!tmp.has_value()) return ::memhal::unexpected(std::move(tmp).error()); \
  lhs = std::move(*tmp)

/// Evaluates `expr` (a `Result<T>`); on success assigns its value to `lhs` (which may be a
/// declaration such as `auto x`), else returns the error from the enclosing function.
#define MEMHAL_ASSIGN_OR_RETURN(lhs, expr) \
  MEMHAL_DETAIL_ASSIGN_OR_RETURN(MEMHAL_DETAIL_CONCAT(memhal_assign_result_, __LINE__), lhs, expr)
