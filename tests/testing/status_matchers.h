#ifndef TAILSWEEP_TESTS_TESTING_STATUS_MATCHERS_H_
#define TAILSWEEP_TESTS_TESTING_STATUS_MATCHERS_H_

// Small status helpers (abseil 20220623 ships no matchers).

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tailsweep::testing {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

}  // namespace tailsweep::testing

// Each evaluates `expr` once (it may have effects) and prints the status
// when it fails.
#define TS_ASSERT_OK(expr)                            \
  do {                                                \
    const absl::Status TS_CONCAT(status_, __LINE__) = \
        ::tailsweep::testing::GetStatus(expr);        \
    ASSERT_TRUE(TS_CONCAT(status_, __LINE__).ok())    \
        << TS_CONCAT(status_, __LINE__);              \
  } while (0)
#define TS_EXPECT_OK(expr)                            \
  do {                                                \
    const absl::Status TS_CONCAT(status_, __LINE__) = \
        ::tailsweep::testing::GetStatus(expr);        \
    EXPECT_TRUE(TS_CONCAT(status_, __LINE__).ok())    \
        << TS_CONCAT(status_, __LINE__);              \
  } while (0)
#define TS_EXPECT_CODE(expr, code_)                         \
  do {                                                      \
    const absl::Status TS_CONCAT(status_, __LINE__) =       \
        ::tailsweep::testing::GetStatus(expr);              \
    EXPECT_EQ(TS_CONCAT(status_, __LINE__).code(), (code_)) \
        << TS_CONCAT(status_, __LINE__);                    \
  } while (0)

// Evaluates a StatusOr once, asserts it is OK, and binds its value.
#define TS_ASSERT_OK_AND_ASSIGN(lhs, expr)       \
  auto TS_CONCAT(status_or_, __LINE__) = (expr); \
  TS_ASSERT_OK(TS_CONCAT(status_or_, __LINE__)); \
  lhs = std::move(*TS_CONCAT(status_or_, __LINE__))
#define TS_CONCAT_INNER(a, b) a##b
#define TS_CONCAT(a, b) TS_CONCAT_INNER(a, b)

#endif  // TAILSWEEP_TESTS_TESTING_STATUS_MATCHERS_H_
