#include "coordinator/lease_expiry.h"

#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

TEST(LeaseExpiry, LogsEachExpiryAndCarriesOnAfterAFailingRound) {
  std::vector<std::string> history;
  int round = 0;
  ManualClock clock;
  LeaseExpiry loop(
      [&](int64_t,
          std::vector<Store::ExpiredLease>* out) -> absl::StatusOr<int64_t> {
        ++round;
        history.push_back(absl::StrCat("expire ", round));
        if (round == 2) return absl::UnavailableError("disk busy");
        if (round == 1) {
          *out = {{"aaaaaaaaaaaaaaaa", 3, "w1", false},
                  {"bbbbbbbbbbbbbbbb", 1, "w2", true}};
        }
        return static_cast<int64_t>(out->size());
      },
      [&](int64_t) { history.push_back("restart"); }, &clock,
      [&](int64_t ms) {
        history.push_back(absl::StrCat("wait ", ms));
        clock.Advance(ms);
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
  EXPECT_EQ(loop.pauses(), 0);
}

// A round that starts long after the last (the process was stopped) first
// gives every live lease a full period, then expires against the same now.
TEST(LeaseExpiry, APauseRestartsTheLeaseClocksBeforeExpiring) {
  std::vector<std::string> history;
  ManualClock clock;
  int round = 0;
  LeaseExpiry loop(
      [&](int64_t now,
          std::vector<Store::ExpiredLease>*) -> absl::StatusOr<int64_t> {
        history.push_back(absl::StrCat("expire at ", now));
        return 0;
      },
      [&](int64_t now) { history.push_back(absl::StrCat("restart at ", now)); },
      &clock,
      [&](int64_t ms) {
        ++round;
        // Round 2 comes 40 s late: SIGSTOP, a frozen VM.
        clock.Advance(round == 2 ? 40'000 : ms);
        return round < 3;
      },
      1000, [&](const std::string& line) { history.push_back(line); });
  loop.Run();
  const std::vector<std::string> expected = {
      "expire at 1000000", "expire at 1001000",
      "no lease round for 40000 ms (this process was paused); every live "
      "lease gets a full period from now",
      "restart at 1041000", "expire at 1041000"};
  EXPECT_EQ(history, expected);
  EXPECT_EQ(loop.pauses(), 1);
}

}  // namespace
}  // namespace tailsweep
