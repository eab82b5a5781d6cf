#include "worker/backoff.h"

#include <gtest/gtest.h>

namespace tailsweep {
namespace {

TEST(Backoff, DoublesWithJitterUpToTheCapAndResetsOnSuccess) {
  Backoff backoff(/*base_ms=*/100, /*cap_ms=*/1000, /*seed=*/7);
  EXPECT_TRUE(backoff.Ready(0));
  const int64_t full[] = {100, 200, 400, 800, 1000, 1000, 1000};
  int64_t now = 0;
  for (int64_t f : full) {
    const int64_t wait = backoff.Failed(now);
    EXPECT_GE(wait, f / 2);
    EXPECT_LE(wait, f);
    EXPECT_FALSE(backoff.Ready(now + wait - 1));
    EXPECT_TRUE(backoff.Ready(now + wait));
    now += wait;
  }
  backoff.Succeeded();
  EXPECT_TRUE(backoff.Ready(now));
  EXPECT_LE(backoff.Failed(now), 100);
}

TEST(Backoff, WorkersWithOtherSeedsSpreadOut) {
  Backoff a(1000, 60000, 1), b(1000, 60000, 2);
  int64_t same = 0;
  for (int i = 0; i < 10; ++i) same += a.Failed(0) == b.Failed(0);
  EXPECT_LT(same, 3);
}

}  // namespace
}  // namespace tailsweep
