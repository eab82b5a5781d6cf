// A spec's output keys (run_outputs.h): parsed, refused with file:line:col
// and what is allowed, and kept through the spec as submitted.

#include "core/schema/run_outputs.h"

#include <gtest/gtest.h>

#include <string>

#include "core/schema/sweep_spec.h"

namespace tailsweep {
namespace {

constexpr char kBase[] =
    "name: s\nkind: command\ncommand: [true]\n"
    "grid:\n  x: [1]\n";

absl::StatusOr<SweepSpec> Parse(const std::string& extra) {
  return ParseSweepSpec(std::string(kBase) + extra, "s.yaml");
}

TEST(RunOutputs, EveryKeyParsesAndSurvivesTheSubmittedText) {
  absl::StatusOr<SweepSpec> spec = Parse(
      "checkpoints: {keep: best, metric: val/loss, goal: maximize, "
      "at_most: 3}\n"
      "artifacts: [plots/*.png, predictions.csv]\n"
      "artifacts_max_mib: 7\nlogs_max_mib: 2\n"
      "notify:\n  - {on: [failed, stalled], url: 'https://hooks.example/x', "
      "format: slack}\n"
      "stall_after_s: 600\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const RunOutputs& o = spec->outputs;
  EXPECT_EQ(o.checkpoints.keep, "best");
  EXPECT_EQ(o.checkpoints.metric, "val/loss");
  EXPECT_TRUE(o.checkpoints.maximize);
  EXPECT_EQ(o.checkpoints.at_most, 3);
  EXPECT_EQ(o.artifacts.size(), 2u);
  EXPECT_EQ(o.artifacts_max_mib, 7);
  EXPECT_EQ(o.logs_max_mib, 2);
  ASSERT_EQ(o.notify.size(), 1u);
  EXPECT_EQ(o.notify[0].format, "slack");
  EXPECT_EQ(o.notify[0].on, (std::vector<std::string>{"failed", "stalled"}));
  EXPECT_EQ(o.stall_after_s, 600);
  absl::StatusOr<SweepSpec> again =
      ParseSweepSpec(SweepSpecYaml(*spec), "again");
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << SweepSpecYaml(*spec);
  EXPECT_EQ(RunOutputsJson(again->outputs), RunOutputsJson(o));
  EXPECT_EQ(RunOutputsJson(RunOutputsFromJson(RunOutputsJson(o))),
            RunOutputsJson(o));
}

TEST(RunOutputs, DefaultsWhenLeftOut) {
  absl::StatusOr<SweepSpec> spec =
      Parse("checkpoints: {keep: best, metric: loss}\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->outputs.checkpoints.at_most, 1);
  EXPECT_FALSE(spec->outputs.checkpoints.maximize);
  EXPECT_EQ(spec->outputs.artifacts_max_mib, 100);
  absl::StatusOr<SweepSpec> plain = Parse("");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->outputs.checkpoints.keep, "last");
  EXPECT_EQ(SweepSpecYaml(*plain).find("artifacts"), std::string::npos);
}

TEST(RunOutputs, BadInputSaysWhereAndWhatIsAllowed) {
  const std::pair<const char*, const char*> cases[] = {
      {"checkpoints: {keep: newest}\n",
       "s.yaml:6:21: keep 'newest'; allowed: last, best, all"},
      {"checkpoints: {keep: best}\n", "needs 'metric'"},
      {"checkpoints: {keep: best, metric: l, goal: up}\n",
       "allowed: minimize, maximize"},
      {"checkpoints: {keep: all, metric: l, at_most: 0}\n", "'at_most'"},
      {"checkpoints: {kept: best}\n", "unknown key 'kept'"},
      {"artifacts: ../secret.txt\n", "must be a list of globs"},
      {"artifacts: [../secret.txt]\n",
       "may not reach outside the job directory"},
      {"artifacts: [/etc/passwd]\n", "is absolute"},
      {"artifacts: [plots//a.png]\n", "empty component"},
      {"artifacts_max_mib: 0\n", "'artifacts_max_mib' (MiB)"},
      {"logs_max_mib: 99999\n", "'logs_max_mib' (MiB)"},
      {"notify: [{url: 'ftp://x'}]\n", "http:// or https://"},
      {"notify: [{url: 'https://h/x', on: [preempted]}]\n",
       "event 'preempted'; allowed: failed, done, sweep_done, stalled"},
      {"notify: [{url: 'https://h/x', format: teams}]\n",
       "allowed: json, slack"},
      {"notify: [{on: [failed]}]\n", "each 'notify' entry is"},
      {"stall_after_s: 5\n", "60..604800"},
  };
  for (const auto& [extra, says] : cases) {
    absl::StatusOr<SweepSpec> spec = Parse(extra);
    ASSERT_FALSE(spec.ok()) << extra;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(spec.status().message().find(says), std::string::npos)
        << extra << " -> " << spec.status().message();
    EXPECT_NE(spec.status().message().find("s.yaml:6:"), std::string::npos)
        << spec.status().message();
  }
}

TEST(RunOutputs, GlobsMatchWithinOneComponent) {
  EXPECT_TRUE(ArtifactMatches("plots/*.png", "plots/a.png"));
  EXPECT_FALSE(ArtifactMatches("plots/*.png", "plots/sub/a.png"));
  EXPECT_FALSE(ArtifactMatches("*.png", "plots/a.png"));
  EXPECT_TRUE(ArtifactMatches("*/*.csv", "out/p.csv"));
  EXPECT_FALSE(ArtifactMatches("*", ".hidden"));
}

TEST(RunOutputs, NotKeptNotesFitTheReport) {
  // A long note is cut on a character boundary, still valid UTF-8.
  const std::string long_note =
      std::string(1020, 'a') + "\xc3\xa9\xc3\xa9\xc3\xa9";
  const std::vector<std::string> cut = NotKeptNotes({long_note, "\xff ok"});
  ASSERT_EQ(cut.size(), 2u);
  EXPECT_LE(cut[0].size(), static_cast<size_t>(kMaxNotKeptBytes));
  EXPECT_EQ(cut[0].substr(cut[0].size() - 4), "a...");
  EXPECT_EQ(cut[1], "\xef\xbf\xbd ok");  // U+FFFD
  // Past the count, the rest are counted in a last note.
  std::vector<std::string> many(40, "artifact x not uploaded");
  const std::vector<std::string> folded = NotKeptNotes(many);
  ASSERT_EQ(folded.size(), static_cast<size_t>(kMaxNotKeptNotes));
  EXPECT_EQ(folded.back(), "and 25 more (the worker's log names each)");
  EXPECT_EQ(NotKeptNotes(std::vector<std::string>(16, "n")).size(), 16u);
}

}  // namespace
}  // namespace tailsweep
