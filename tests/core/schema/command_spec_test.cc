// The command kind's spec section and child command (command_spec.h,
// command_job.h): macros, typed values, identity, outcomes and their early
// stop, and the errors a user sees.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/schema/command_job.h"
#include "core/schema/job_kinds.h"
#include "core/schema/sweep_spec.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

std::vector<JobSpec> Jobs(const std::string& yaml) {
  absl::StatusOr<SweepSpec> spec = ParseSweepSpec(yaml, "c.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return {};
  absl::StatusOr<std::vector<JobSpec>> jobs = ExpandSweep(*spec);
  EXPECT_TRUE(jobs.ok()) << jobs.status();
  return jobs.ok() ? *jobs : std::vector<JobSpec>{};
}

std::vector<std::string> Argv(const JobSpec& job) {
  ChildJob child;
  child.kind = "command";
  child.params = job.params;
  child.dir = "/work/j";
  child.job_id = job.id;
  absl::StatusOr<ChildCommand> c = ChildCommandFor(child);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? c->argv : std::vector<std::string>{};
}

std::string ParseError(const std::string& yaml) {
  absl::StatusOr<SweepSpec> spec = ParseSweepSpec(yaml, "c.yaml");
  return spec.ok() ? "parsed" : std::string(spec.status().message());
}

TEST(CommandSpec, ArgsSpellBooleansAndListsAsArgparseAndHydraReadThem) {
  const std::vector<JobSpec> jobs = Jobs(
      "name: c\nkind: command\n"
      "command: [prog, '${args}', '--', '${args_no_hyphens}', "
      "'lr=${lr}']\n"
      "grid: {lr: [0.001]}\n"
      "fixed: {bias: true, dropout: false, sizes: [64, 128], opt: adam}\n");
  ASSERT_EQ(jobs.size(), 1u);
  // Keys in name order; a true boolean is a bare flag, a false one is left
  // out; a list is the flag and its items (argparse nargs='+').
  EXPECT_EQ(Argv(jobs[0]),
            (std::vector<std::string>{
                "prog", "--bias", "--lr=0.001", "--opt=adam", "--sizes", "64",
                "128", "--", "bias=true", "dropout=false", "lr=0.001",
                "opt=adam", "sizes=[64,128]", "lr=0.001"}));
}

TEST(CommandSpec, TheDefinitionIsPartOfAJobsIdentityButNotWhereItRuns) {
  const std::string grid = "grid: {seed: [0]}\n";
  const std::string a =
      Jobs("name: c\nkind: command\ncommand: [a]\n" + grid).at(0).id;
  EXPECT_NE(a, Jobs("name: c\nkind: command\ncommand: [b]\n" + grid).at(0).id);
  EXPECT_NE(a,
            Jobs("name: c\nkind: command\ncommand: [a]\nenv: {X: 1}\n" + grid)
                .at(0)
                .id);
  EXPECT_EQ(a, Jobs("name: other\nkind: command\ncommand: [a]\n"
                    "workdir: /elsewhere\n" +
                    grid)
                   .at(0)
                   .id);
}

TEST(CommandSpec, StopAfterStepsCountsFromTheFirstStepAStopOnOutcomeHolds) {
  const std::string base =
      "name: c\nkind: command\ncommand: [a]\ngrid: {seed: [0]}\n"
      "outcomes: {diverged: {metric: loss, not_finite: true}}\n"
      "stop_on: [diverged]\n";
  const std::vector<JobSpec> at_once = Jobs(base);
  const std::vector<JobSpec> later = Jobs(base + "stop_after_steps: 20\n");
  ASSERT_EQ(later.size(), 1u);
  const ChildRules rules =
      KindDef(*ParseJobKind("command")).contract->rules(later[0].params);
  EXPECT_EQ(rules.stop_after_steps, 20);
  ASSERT_EQ(rules.stop_on.size(), 1u);
  // Set, it is part of the identity; unset, definitions from before the key
  // keep their ids.
  EXPECT_NE(at_once.at(0).id, later[0].id);
  EXPECT_EQ(KindDef(*ParseJobKind("command"))
                .contract->rules(at_once[0].params)
                .stop_after_steps,
            0);
  // It round-trips through the stored spec.
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec spec,
                          ParseSweepSpec(base + "stop_after_steps: 20\n", "c"));
  EXPECT_NE(SweepSpecYaml(spec).find("stop_after_steps: 20"),
            std::string::npos);
}

TEST(CommandSpec, ErrorsSayWhereWhatAndWhatIsAllowed) {
  const std::string head = "name: c\nkind: command\ncommand: [a]\n";
  EXPECT_EQ(ParseError(head + "grid: {seed: [0]}\nstop_after_steps: 5\n"),
            "c.yaml:5:19: 'stop_after_steps' needs 'stop_on': the outcomes "
            "whose first step it counts from");
  EXPECT_EQ(
      ParseError(head + "outcomes: {low: {metric: loss, below: 1, at: last}}\n"
                        "stop_on: [low]\ngrid: {seed: [0]}\n"),
      "c.yaml:5:11: stop_on 'low': the outcome can still change once it "
      "holds, so it cannot stop a run; allowed: not_finite, at: any, above "
      "at: max, below at: min");
  EXPECT_EQ(ParseError(head + "stop_on: [nope]\ngrid: {seed: [0]}\n"),
            "c.yaml:4:11: stop_on 'nope' is not an outcome; allowed: (none "
            "declared)");
  EXPECT_EQ(ParseError(head + "grid: {'bad key': [1]}\n"),
            "c.yaml:4:8: parameter name 'bad key': allowed: 1-64 letters, "
            "digits, '_', '-', '.', starting with a letter or '_'");
  EXPECT_NE(ParseError(head + "grid: {x: [{a: 1}]}\n").find("c.yaml:4:"),
            std::string::npos);
}

}  // namespace
}  // namespace tailsweep
