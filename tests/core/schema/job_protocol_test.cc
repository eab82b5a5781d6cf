#include "core/schema/job_protocol.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/schema/file_util.h"
#include "core/schema/job_kinds.h"
#include "core/schema/job_result.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

class JobProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/job_protocol_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/checkpoints");
  }
  std::string dir_;
};

TEST_F(JobProtocolTest, TrainCommandOnAGpuSlot) {
  ChildJob job{"/bin/tailsweep", "train", {{"kernel", "log"}, {"steps", "20"}},
               "cuda:3",         4,       dir_};
  TS_ASSERT_OK_AND_ASSIGN(ChildCommand c, ChildCommandFor(job));
  const std::vector<std::string> argv = {"/bin/tailsweep",
                                         "--threads",
                                         "4",
                                         "lab",
                                         "train",
                                         "--set",
                                         "kernel=log",
                                         "--set",
                                         "steps=20",
                                         "--out-dir",
                                         dir_,
                                         "--device",
                                         "cuda"};
  EXPECT_EQ(c.argv, argv);
  const std::vector<std::string> env = {"OMP_NUM_THREADS=4",
                                        "CUDA_VISIBLE_DEVICES=3"};
  EXPECT_EQ(c.env, env);
}

// Inside an allocation the worker names the slot's GPU as it was given it.
TEST_F(JobProtocolTest, AGpuSlotSeesTheEntryTheWorkerNames) {
  ChildJob job{"/bin/tailsweep", "train", {}, "cuda:1", 1, dir_, "GPU-5a"};
  TS_ASSERT_OK_AND_ASSIGN(ChildCommand c, ChildCommandFor(job));
  EXPECT_EQ(c.env.back(), "CUDA_VISIBLE_DEVICES=GPU-5a");
  EXPECT_EQ(c.argv.back(), "cuda");
}

TEST_F(JobProtocolTest, TrainResumesWhenACheckpointIsThere) {
  TS_ASSERT_OK(WriteFileAtomic(dir_ + "/checkpoints/step-00000010.pt", "x"));
  TS_ASSERT_OK_AND_ASSIGN(ChildCommand c,
                          ChildCommandFor({"t", "train", {}, "cpu", 1, dir_}));
  EXPECT_EQ(c.argv.back(), "--resume");
}

TEST_F(JobProtocolTest, TailsKeysBecomeLabTailsFlags) {
  ChildJob job{"t",   "tails", {{"seam", "0.95"}, {"n", "512"}, {"seed", "7"}},
               "cpu", 2,       dir_};
  TS_ASSERT_OK_AND_ASSIGN(ChildCommand c, ChildCommandFor(job));
  const std::vector<std::string> argv = {
      "t",     "--threads",    "2",           "lab",
      "tails", "--seams",      "0.95",        "--budgets",
      "512",   "--index-grid", "1.1:2.5:0.1", "--trials",
      "20",    "--seed",       "7",           "--reference-index",
      "1.5",   "--out-dir",    dir_};
  EXPECT_EQ(c.argv, argv);
}

TEST_F(JobProtocolTest, BadJobsAreRefused) {
  TS_EXPECT_CODE(ChildCommandFor({"t", "eval", {}, "cpu", 1, dir_}),
                 absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(
      ChildCommandFor({"t", "train", {{"colour", "red"}}, "cpu", 1, dir_}),
      absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(ChildCommandFor({"t", "tails", {{"n", "-3"}}, "cpu", 1, dir_}),
                 absl::StatusCode::kInvalidArgument);
}

TEST_F(JobProtocolTest, OutcomesFromExitCodeAndResult) {
  EXPECT_EQ(ReadFinishedJob("train", dir_, 137).error, "killed by signal 9");
  // Slurm's drain (SIGUSR1) before the child's handler: stopped, as SIGTERM.
  EXPECT_EQ(ReadFinishedJob("train", dir_, 128 + SIGUSR1).outcome,
            JobOutcome::kStopped);
  EXPECT_EQ(ReadFinishedJob("tails", dir_, 128 + SIGTERM).outcome,
            JobOutcome::kStopped);
  EXPECT_EQ(ReadFinishedJob("train", dir_, 2).error,
            "exit code 2 (input refused)");
  const FinishedJob missing = ReadFinishedJob("train", dir_, 0);
  EXPECT_EQ(missing.outcome, JobOutcome::kFailed);

  TrainResult r;
  r.steps_done = 5;
  r.stopped = true;
  TS_ASSERT_OK(WriteFileAtomic(dir_ + "/result.json", TrainResultJson(r)));
  const FinishedJob signalled = ReadFinishedJob("train", dir_, 0);
  EXPECT_EQ(signalled.outcome, JobOutcome::kStopped);
  EXPECT_FALSE(signalled.lease_ran_out);
  // Stopped by its lease watchdog: the child says so, the worker need not
  // guess from the time.
  r.lease_ran_out = true;
  TS_ASSERT_OK(WriteFileAtomic(dir_ + "/result.json", TrainResultJson(r)));
  const FinishedJob lapsed = ReadFinishedJob("train", dir_, 0);
  EXPECT_EQ(lapsed.outcome, JobOutcome::kStopped);
  EXPECT_TRUE(lapsed.lease_ran_out);
  r.lease_ran_out = false;
  r.stopped = false;
  TS_ASSERT_OK(WriteFileAtomic(dir_ + "/result.json", TrainResultJson(r)));
  const FinishedJob done = ReadFinishedJob("train", dir_, 0);
  EXPECT_EQ(done.outcome, JobOutcome::kDone);
  EXPECT_EQ(done.result_json, TrainResultJson(r));

  TS_ASSERT_OK(WriteFileAtomic(dir_ + "/result.json", "{\"torn\": "));
  EXPECT_EQ(ReadFinishedJob("train", dir_, 0).outcome, JobOutcome::kFailed);
}

// Failures a retry would meet again are marked permanent; others are not.
TEST_F(JobProtocolTest, FailuresThatWouldRepeatArePermanent) {
  EXPECT_TRUE(ReadFinishedJob("train", dir_, 2).permanent);     // input refused
  EXPECT_FALSE(ReadFinishedJob("command", dir_, 2).permanent);  // its own
  for (int code : {126, 127}) {
    const FinishedJob f = ReadFinishedJob("command", dir_, code);
    EXPECT_TRUE(f.permanent) << code;
    EXPECT_EQ(f.error, absl::StrCat("exit code ", code,
                                    " (the program could not be run)"));
  }
  EXPECT_FALSE(ReadFinishedJob("command", dir_, 1).permanent);
  EXPECT_FALSE(ReadFinishedJob("command", dir_, 137).permanent);
  // A result file over 1 MiB is not even read.
  TS_ASSERT_OK(WriteFileAtomic(dir_ + "/result.json",
                               std::string(kMaxResultFileBytes + 1, ' ')));
  for (const char* kind : {"command", "train"}) {
    const FinishedJob big = ReadFinishedJob(kind, dir_, 0);
    EXPECT_EQ(big.outcome, JobOutcome::kFailed) << kind;
    EXPECT_TRUE(big.permanent) << kind;
    EXPECT_NE(big.error.find("over the 1 MiB a result may hold"),
              std::string::npos)
        << big.error;
  }
}

// Preemption of every kind: a child that died of SIGTERM (before its
// handler was installed) or exited kExitStopped is stopped, never failed,
// whatever its directory holds.
TEST_F(JobProtocolTest, SigtermDeathAndExitStoppedAreStoppedForEveryKind) {
  for (const char* kind : {"train", "tails"}) {
    const FinishedJob killed = ReadFinishedJob(kind, dir_, 128 + 15);
    EXPECT_EQ(killed.outcome, JobOutcome::kStopped) << kind;
    EXPECT_EQ(killed.error, "killed by SIGTERM") << kind;
    const FinishedJob stopped = ReadFinishedJob(kind, dir_, kExitStopped);
    EXPECT_EQ(stopped.outcome, JobOutcome::kStopped) << kind;
    EXPECT_TRUE(stopped.result_json.empty()) << kind;
  }
  // Other signals are still failures.
  EXPECT_EQ(ReadFinishedJob("tails", dir_, 128 + 9).outcome,
            JobOutcome::kFailed);
  EXPECT_EQ(ReadFinishedJob("tails", dir_, 128 + 11).error,
            "killed by signal 11");
}

}  // namespace
}  // namespace tailsweep
