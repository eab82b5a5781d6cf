// End-to-end tests of `tailsweep lab train` and `lab eval`: real processes,
// real files, a real kill -9.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/testing/run_command.h"
#include "tests/testing/wait.h"

namespace tailsweep {
namespace {

using testing::CommandResult;
using testing::RunCommand;

const std::string kTiny =
    " --set n_points=128 --set d_model=32 --set heads=4 --set layers=2"
    " --set warmup=10 --set lr=3e-3 --set eval_instances=4"
    " --set reference_trials=4 ";

std::string Lab() {
  return std::string(TAILSWEEP_LAB_BIN) + " --threads 1 lab ";
}

// metrics.jsonl without the wall-time field, one JSON object per line.
std::vector<nlohmann::json> Metrics(const std::string& dir) {
  std::vector<nlohmann::json> out;
  for (absl::string_view line :
       absl::StrSplit(testing::ReadFile(dir + "/metrics.jsonl"), '\n',
                      absl::SkipEmpty())) {
    nlohmann::json doc = nlohmann::json::parse(line);
    doc.erase("step_seconds");
    out.push_back(doc);
  }
  return out;
}

class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("tailsweep_cli_train_"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(TrainCli, WritesMetricsCheckpointsAndResultThenEvaluates) {
  const CommandResult r =
      RunCommand(Lab() + "train" + kTiny +
                 "--set steps=40 --set log_every=5 --set checkpoint_every=20 "
                 "--out-dir " +
                 dir_ + "/run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("train: 40/40"), std::string::npos) << r.err;
  const std::vector<nlohmann::json> metrics = Metrics(dir_ + "/run");
  ASSERT_EQ(metrics.size(), 8u);
  for (const char* key : {"step", "loss", "lr", "grad_norm", "spread_ratio"}) {
    EXPECT_TRUE(metrics[0].contains(key)) << key;
  }
  EXPECT_EQ(metrics[0]["attention_entropy"].size(), 2u);
  const nlohmann::json result =
      nlohmann::json::parse(testing::ReadFile(dir_ + "/run/result.json"));
  for (const char* key :
       {"ratio_mean", "ratio_median", "ratio_ci_low", "ratio_ci_high",
        "collapsed", "collapse_step", "diverged", "hill_stat"}) {
    EXPECT_TRUE(result.contains(key)) << key;
  }
  EXPECT_EQ(result["config"]["steps"], 40);
  EXPECT_EQ(result["diverged"], false);
  const std::string checkpoint = dir_ + "/run/checkpoints/step-00000040.pt";
  ASSERT_TRUE(std::filesystem::exists(checkpoint));
  const CommandResult e = RunCommand(Lab() + "eval --checkpoint " + checkpoint);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const nlohmann::json eval = nlohmann::json::parse(e.out);
  EXPECT_EQ(eval["ratio_median"], result["ratio_median"]);
  EXPECT_EQ(eval["steps_done"], 40);
}

TEST_F(TrainCli, KillNineThenResumeEqualsAnUninterruptedRun) {
  const std::string args =
      kTiny + "--set steps=300 --set log_every=1 --set checkpoint_every=20 ";
  ASSERT_EQ(RunCommand(Lab() + "train" + args + "--out-dir " + dir_ + "/whole")
                .exit_code,
            0);
  // Start in the background, wait for the first checkpoint, kill -9.
  const std::string run = dir_ + "/killed";
  const std::string pid_file = dir_ + "/pid";
  ASSERT_EQ(std::system((Lab() + "train" + args + "--out-dir " + run +
                         " >/dev/null 2>&1 & echo $! > " + pid_file)
                            .c_str()),
            0);
  const pid_t pid = std::stoi(testing::ReadFile(pid_file));
  // Polled often: from the checkpoint on, the run has 280 steps left to be
  // killed in.
  const std::string first = run + "/checkpoints/step-00000020.pt";
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return std::filesystem::exists(first) || kill(pid, 0) != 0; },
      testing::EventDeadline(), std::chrono::milliseconds(5)))
      << "the run neither checkpointed nor ended";
  ASSERT_TRUE(std::filesystem::exists(first))
      << "the run ended before its first checkpoint";
  ASSERT_EQ(kill(pid, SIGKILL), 0) << "the run ended before it could be killed";
  // Gone (reaped by init: the shell that started it has exited).
  ASSERT_TRUE(testing::WaitUntil([&] { return kill(pid, 0) != 0; },
                                 testing::EventDeadline(),
                                 std::chrono::milliseconds(5)));
  EXPECT_FALSE(std::filesystem::exists(run + "/result.json"));
  const size_t logged_before = Metrics(run).size();
  EXPECT_LT(logged_before, 300u);

  const CommandResult resumed =
      RunCommand(Lab() + "train" + args + "--out-dir " + run + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  // Every step once, each equal to the uninterrupted run's.
  EXPECT_EQ(Metrics(run), Metrics(dir_ + "/whole"));
  const nlohmann::json a =
      nlohmann::json::parse(testing::ReadFile(run + "/result.json"));
  const nlohmann::json b =
      nlohmann::json::parse(testing::ReadFile(dir_ + "/whole/result.json"));
  EXPECT_GT(a["resumed_from_step"].get<int64_t>(), 0);
  EXPECT_EQ(a["ratio_median"], b["ratio_median"]);
}

TEST_F(TrainCli, BadKeysValuesAndFilesExitTwoNamingThem) {
  std::ofstream(dir_ + "/bad.yaml") << "steps: 10\nkernal: log\n";
  std::ofstream(dir_ + "/broken.yaml") << "steps: [10\n";
  struct Case {
    std::string args;
    std::string mentions;
  };
  for (const Case& c : std::vector<Case>{
           {"--set kernal=log", "unknown key 'kernal'; allowed: operator"},
           {"--set kernel=relu", "allowed: softmax, quadratic, linear, log"},
           {"--set steps=0", "key 'steps'"},
           {"--set steps", "expected KEY=VALUE"},
           {"--set heads=7", "must divide"},
           {"--set operator=matrix_inverse --set marginal=gaussian",
            "unidentifiable"},
           {"--config " + dir_ + "/bad.yaml",
            "bad.yaml:2:1: unknown key 'kernal'"},
           {"--config " + dir_ + "/broken.yaml", "broken.yaml:"},
           {"--config " + dir_ + "/missing.yaml", "cannot open"},
           {"--device tpu", "allowed: cpu"},
           {"--resume", "nothing to resume"}}) {
    const CommandResult r =
        RunCommand(Lab() + "train " + c.args + " --out-dir " + dir_ + "/x");
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.mentions), std::string::npos) << c.args << "\n"
                                                         << r.err;
  }
  const CommandResult e =
      RunCommand(Lab() + "eval --checkpoint " + dir_ + "/none.pt");
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_NE(e.err.find("no such checkpoint"), std::string::npos) << e.err;
}

}  // namespace
}  // namespace tailsweep
