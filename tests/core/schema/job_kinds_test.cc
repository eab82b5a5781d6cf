// The kinds' registrations (core/schema/job_kinds.h): each kind is
// registered once, has what every kind must have, and is what the code
// asks instead of branching on the kind.

#include "core/schema/job_kinds.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/schema/sweep_spec.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

TEST(KindDefs, EveryKindIsRegisteredOnceWithWhatEveryKindNeeds) {
  std::set<std::string> names;
  const std::vector<JobKind> kinds = AllJobKinds();
  ASSERT_EQ(kinds.front(), JobKind()) << "train is the default";
  EXPECT_EQ(JobKindName(JobKind()), "train");
  for (JobKind kind : kinds) {
    const JobKindDef& def = KindDef(kind);
    const std::string name(JobKindName(kind));
    EXPECT_EQ(ParseJobKind(name), kind) << name;
    EXPECT_TRUE(names.insert(name).second) << name;
    TS_ASSERT_OK_AND_ASSIGN(const JobKindDef* named, KindDefNamed(name));
    EXPECT_EQ(named, &def) << name;
    EXPECT_NE(def.check_key, nullptr) << name;
    EXPECT_NE(def.check_value, nullptr) << name;
    EXPECT_NE(def.job_params, nullptr) << name;
    EXPECT_NE(def.child_command, nullptr) << name;
    EXPECT_NE(def.read_finished, nullptr) << name;
    EXPECT_NE(def.check_result, nullptr) << name;
    // A section's keys come with their parser and writer; a contract with
    // all of its parts.
    if (def.section != nullptr) {
      EXPECT_FALSE(def.section->keys.empty()) << name;
      EXPECT_NE(def.section->parse, nullptr) << name;
      EXPECT_NE(def.section->emit, nullptr) << name;
    }
    if (def.contract != nullptr) {
      EXPECT_NE(def.contract->rules, nullptr) << name;
      EXPECT_NE(def.contract->done_result, nullptr) << name;
      EXPECT_NE(def.contract->metric_outcomes, nullptr) << name;
    }
    // Every kind makes its results table; a search reads its outcomes.
    EXPECT_NE(def.summarize, nullptr) << name;
    EXPECT_TRUE(!def.parse_outcome || def.outcomes) << name;
  }
  EXPECT_EQ(names.size(), kinds.size());
  EXPECT_EQ(JobKindNames(), "train, tails, command");
}

TEST(KindDefs, AnUnknownNameSaysWhichKindsThereAre) {
  absl::StatusOr<const JobKindDef*> none = KindDefNamed("eval");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            "job kind 'eval'; allowed: train, tails, command");
  EXPECT_EQ(KindOfSectionKey("grid"), nullptr);
  EXPECT_EQ(KindOfSectionKey("command"), &KindDef(*ParseJobKind("command")));
  EXPECT_EQ(KindsWithSearch(), "train and command");
}

TEST(KindDefs, TheWorkerAsksTheKindHowToRunItsJobs) {
  const JobKindDef& train = KindDef(JobKind());
  const JobKindDef& command = KindDef(*ParseJobKind("command"));
  // Train children write the train keys and step-N.pt files, and their
  // result adds evaluation points; command children write any metric
  // names into step-N/ directories and are judged by the coordinator.
  EXPECT_TRUE(train.old_workers_run);
  EXPECT_FALSE(command.old_workers_run);
  EXPECT_EQ(train.contract, nullptr);
  EXPECT_NE(train.result_points, nullptr);
  EXPECT_NE(command.contract, nullptr);
  EXPECT_EQ(command.result_points, nullptr);

  TS_ASSERT_OK_AND_ASSIGN(
      SweepSpec spec,
      ParseSweepSpec("name: c\nkind: command\ncommand: [prog, '${args}']\n"
                     "stop_grace_s: 7\n"
                     "outcomes: {diverged: {metric: loss, not_finite: true},"
                     " big: {metric: loss, above: 9, at: last}}\n"
                     "stop_on: [diverged]\ngrid: {x: [1]}\n",
                     "c.yaml"));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> jobs, ExpandSweep(spec));
  ASSERT_EQ(jobs.size(), 1u);
  const ChildRules rules = command.contract->rules(jobs[0].params);
  EXPECT_EQ(rules.stop_grace_ms, 7000);
  ASSERT_EQ(rules.stop_on.size(), 1u);
  EXPECT_EQ(rules.stop_on[0].name, "diverged");
  EXPECT_EQ(command.contract->metric_outcomes(jobs[0].params).size(), 2u);
  // The child's own result, wrapped with what the worker knows.
  const std::string done =
      command.contract->done_result({"{\"a\": 1}", 40, 2, ""});
  TS_ASSERT_OK_AND_ASSIGN(int64_t resumed, command.check_result(done));
  EXPECT_EQ(resumed, 40);
}

}  // namespace
}  // namespace tailsweep
