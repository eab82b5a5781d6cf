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

#define TS_ASSERT_OK(expr)                                \
  ASSERT_TRUE(::tailsweep::testing::GetStatus(expr).ok()) \
      << ::tailsweep::testing::GetStatus(expr)
#define TS_EXPECT_CODE(expr, code_)                                \
  EXPECT_EQ(::tailsweep::testing::GetStatus(expr).code(), (code_)) \
      << ::tailsweep::testing::GetStatus(expr)

// Evaluates a StatusOr once, asserts it is OK, and binds its value.
#define TS_ASSERT_OK_AND_ASSIGN(lhs, expr)       \
  auto TS_CONCAT(status_or_, __LINE__) = (expr); \
  TS_ASSERT_OK(TS_CONCAT(status_or_, __LINE__)); \
  lhs = std::move(*TS_CONCAT(status_or_, __LINE__))
#define TS_CONCAT_INNER(a, b) a##b
#define TS_CONCAT(a, b) TS_CONCAT_INNER(a, b)

#endif  // TAILSWEEP_TESTS_TESTING_STATUS_MATCHERS_H_
