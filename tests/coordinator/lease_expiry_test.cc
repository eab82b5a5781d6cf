#include "coordinator/lease_expiry.h"

#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

TEST(LeaseExpiry, LogsEachExpiryAndCarriesOnAfterAFailingRound) {
  std::vector<std::string> history;
  int round = 0;
  LeaseExpiry loop(
      [&](std::vector<Store::ExpiredLease>* out) -> absl::StatusOr<int64_t> {
        ++round;
        history.push_back(absl::StrCat("expire ", round));
        if (round == 2) return absl::UnavailableError("disk busy");
        if (round == 1) {
          *out = {{"aaaaaaaaaaaaaaaa", 3, "w1", false},
                  {"bbbbbbbbbbbbbbbb", 1, "w2", true}};
        }
        return static_cast<int64_t>(out->size());
      },
      [&](int64_t ms) {
        history.push_back(absl::StrCat("wait ", ms));
        return round < 3;
      },
      1000, [&](const std::string& line) { history.push_back(line); });
  loop.Run();
  const std::vector<std::string> expected = {
      "expire 1",
      "job aaaaaaaaaaaa epoch 3: lease of worker w1 expired; job queued again",
      "job bbbbbbbbbbbb epoch 1: lease of worker w2 expired; attempt limit "
      "reached, job failed",
      "wait 1000",
      "expire 2",
      "expiring leases failed: disk busy; trying again in 1000 ms",
      "wait 1000",
      "expire 3",
      "wait 1000"};
  EXPECT_EQ(history, expected);
  EXPECT_EQ(loop.expired_total(), 2);
}

}  // namespace
}  // namespace tailsweep
