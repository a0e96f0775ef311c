// Helpers for tests of Result-returning code.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstddef>

#include <memhal/error.hpp>
#include <string>

namespace memhal::testing {

inline std::string describe(const Error& error) {
  return error.to_string();
}

/// Whether writing one byte at `address` faults (SIGSEGV or SIGBUS), tried in a child process.
inline bool write_faults(std::byte* address) {
  const pid_t child = ::fork();
  if (child == 0) {
    // The default action, not a sanitizer's handler that reports the fault and exits.
    std::signal(SIGSEGV, SIG_DFL);
    std::signal(SIGBUS, SIG_DFL);
    *static_cast<volatile std::byte*>(address) = std::byte{1};
    ::_exit(0);
  }
  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, 0), child);
  return WIFSIGNALED(status) && (WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS);
}

}  // namespace memhal::testing

/// Asserts that a Result holds a value; prints the error otherwise.
#define ASSERT_OK(expr)                                                                            \
  do {                                                                                             \
    const auto& memhal_ok_ = (expr);                                                               \
    ASSERT_TRUE(memhal_ok_.has_value()) << #expr << " failed: " << memhal_ok_.error().to_string(); \
  } while (false)

#define EXPECT_OK(expr)                                                                            \
  do {                                                                                             \
    const auto& memhal_ok_ = (expr);                                                               \
    EXPECT_TRUE(memhal_ok_.has_value()) << #expr << " failed: " << memhal_ok_.error().to_string(); \
  } while (false)

#define MEMHAL_TEST_ASSIGN_IMPL(tmp, lhs, expr)                                    \
  auto tmp = (expr);                                                               \
  ASSERT_TRUE(tmp.has_value()) << #expr << " failed: " << tmp.error().to_string(); \
  lhs = std::move(*tmp)

/// `lhs = *expr`, failing the test (and returning) when expr holds an error.
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  MEMHAL_TEST_ASSIGN_IMPL(MEMHAL_DETAIL_CONCAT(memhal_test_result_, __LINE__), lhs, expr)

/// Expects `expr` (a Result) to hold an error with ErrorCode `code`.
#define EXPECT_ERROR(expected_code, expr)                                                                       \
  do {                                                                                                          \
    const auto& memhal_err_ = (expr);                                                                           \
    if (memhal_err_.has_value()) {                                                                              \
      ADD_FAILURE() << #expr << " succeeded, expected " << ::memhal::to_string(expected_code);                  \
    } else {                                                                                                    \
      EXPECT_EQ(memhal_err_.error().code(), expected_code) << #expr << ": " << memhal_err_.error().to_string(); \
    }                                                                                                           \
  } while (false)
