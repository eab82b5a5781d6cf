#include "worker/early_stop.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tailsweep {
namespace {

ChildRules Rules(int64_t after_steps) {
  OutcomeRule diverged;
  diverged.name = "diverged";
  diverged.metric = "loss";
  diverged.not_finite = true;
  ChildRules rules;
  rules.stop_on = {diverged};
  rules.stop_after_steps = after_steps;
  return rules;
}

TEST(EarlyStop, StopsAtTheFirstPointWhereAnOutcomeHolds) {
  EarlyStop stop(Rules(0));
  EXPECT_EQ(stop.Observe({"loss", 1, 2.0}), EarlyStop::Seen::kNothing);
  EXPECT_EQ(stop.Observe({"acc", 2, std::nan("")}), EarlyStop::Seen::kNothing);
  EXPECT_EQ(stop.Observe({"loss", 2, std::nan("")}),
            EarlyStop::Seen::kOnsetAndStop);
  EXPECT_EQ(stop.outcome(), "diverged");
  EXPECT_EQ(stop.onset_step(), 2);
  EXPECT_EQ(stop.stopped_for(), "diverged");
  // Once stopped, nothing more.
  EXPECT_EQ(stop.Observe({"loss", 3, std::nan("")}), EarlyStop::Seen::kNothing);
}

TEST(EarlyStop, StopAfterStepsWaitsThatManyStepsPastTheOnset) {
  EarlyStop stop(Rules(10));
  EXPECT_EQ(stop.Observe({"loss", 3, INFINITY}), EarlyStop::Seen::kOnset);
  EXPECT_EQ(stop.stopped_for(), "");
  // The outcome stays true; the stop waits for step 13 whatever the values.
  EXPECT_EQ(stop.Observe({"loss", 12, 1.0}), EarlyStop::Seen::kNothing);
  EXPECT_EQ(stop.Observe({"loss", 13, 1.0}), EarlyStop::Seen::kStop);
  EXPECT_EQ(stop.stopped_for(), "diverged");
  EXPECT_EQ(stop.onset_step(), 3);
}

TEST(EarlyStop, RulesOfNoOutcomeNeverStop) {
  EarlyStop stop(ChildRules{});
  EXPECT_EQ(stop.Observe({"loss", 1, std::nan("")}), EarlyStop::Seen::kNothing);
  EXPECT_EQ(stop.outcome(), "");
}

}  // namespace
}  // namespace tailsweep
