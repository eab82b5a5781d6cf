// `tailsweep slurm up` without a cluster: the run directory it makes and the
// sbatch lines it runs, through a fake ProgramRunner that records every
// command and can make one fail. (tests/deploy/slurm_test.sh runs it on a
// real Slurm.)

#include "cli/slurm.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "core/schema/sweep_spec.h"
#include "proto/run_dir.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep::cli {
namespace {
namespace fs = std::filesystem;

class SlurmUpTest : public ::testing::Test {
 protected:
  SlurmUpTest() : dir_(testing::MakeTempDir("slurm_up_")) {
    options_.spec_path =
        std::string(TAILSWEEP_SOURCE_DIR) + "/sweeps/smoke.yaml";
    options_.scripts_dir = std::string(TAILSWEEP_SOURCE_DIR) + "/deploy/slurm";
    options_.bin_dir = "/opt/tailsweep/bin";
    options_.run_dir = dir_ + "/run";
    options_.workers = 3;
    options_.gpus_per_node = 2;
    options_.partition = "gpu";
  }
  ~SlurmUpTest() override { fs::remove_all(dir_); }

  // Records each command; sbatch prints ids 100, 101, ...; openssl writes
  // its -keyout and -out files; `fail` names a program that exits 1.
  ProgramRunner Runner() {
    return [this](const std::vector<std::string>& argv)
               -> absl::StatusOr<ProgramResult> {
      commands_.push_back(absl::StrJoin(argv, " "));
      if (argv[0] == fail_) return ProgramResult{1, "", "sbatch: error: bad"};
      if (argv[0] == "sbatch") {
        return ProgramResult{0, std::to_string(100 + sbatches_++) + "\n", ""};
      }
      if (argv[0] == "openssl") {
        for (size_t i = 0; i + 1 < argv.size(); ++i) {
          if (argv[i] == "-keyout" || argv[i] == "-out") {
            std::ofstream(argv[i + 1]) << "PEM\n";
          }
        }
      }
      return ProgramResult{0, "", ""};
    };
  }

  std::string dir_;
  SlurmUpOptions options_;
  std::vector<std::string> commands_;
  std::string fail_;
  int sbatches_ = 0;
};

TEST_F(SlurmUpTest, MakesAPrivateRunDirectoryAndSubmitsBothJobs) {
  TS_ASSERT_OK_AND_ASSIGN(SlurmJobIds ids, SlurmUp(options_, Runner()));
  EXPECT_EQ(ids.coordinator, "100");
  EXPECT_EQ(ids.workers, "101");
  const std::string run = fs::absolute(options_.run_dir).string();
  auto mode = [](const std::string& p) {
    return fs::status(p).permissions() & fs::perms::all;
  };
  EXPECT_EQ(mode(run), fs::perms::owner_all);
  for (const char* secret : {kRunToken, kRunWorkerToken, kRunCaKey}) {
    EXPECT_EQ(mode(RunPath(run, secret)),
              fs::perms::owner_read | fs::perms::owner_write)
        << secret;
  }
  EXPECT_EQ(testing::ReadFile(RunPath(run, kRunToken)).size(), 65u);
  // The workers' token is of their role only, and not the admin's.
  EXPECT_EQ(testing::ReadFile(RunPath(run, kRunWorkerToken)).size(), 65u);
  EXPECT_NE(testing::ReadFile(RunPath(run, kRunWorkerToken)),
            testing::ReadFile(RunPath(run, kRunToken)));
  EXPECT_EQ(testing::ReadFile(RunPath(run, kRunSpec)),
            testing::ReadFile(options_.spec_path));
  TS_ASSERT_OK_AND_ASSIGN(SlurmJobIds read, ReadSlurmJobIds(run));
  EXPECT_EQ(read.workers, "101");
  ASSERT_EQ(commands_.size(), 3u);
  EXPECT_TRUE(absl::StartsWith(commands_[0], "openssl req -x509"));
  const std::string scripts = options_.scripts_dir;
  EXPECT_EQ(commands_[1],
            "sbatch --parsable --job-name tailsweep-coordinator --output " +
                run +
                "/coordinator.log --time 7-00:00:00 --partition gpu "
                "--export=ALL,TAILSWEEP_BIN_DIR=/opt/tailsweep/bin " +
                scripts + "/coordinator.sbatch " + run);
  EXPECT_EQ(commands_[2],
            "sbatch --parsable --job-name tailsweep-workers --array 0-2 "
            "--output " +
                run +
                "/workers-%A_%a.log --time 4:00:00 "
                "--gres=gpu:2 --partition gpu "
                "--export=ALL,TAILSWEEP_BIN_DIR=/opt/tailsweep/bin " +
                scripts + "/workers.sbatch " + run);
}

// Overrides as for submit: the run directory keeps the changed spec, which
// the coordinator job submits and which records them; a bad one is refused
// before any command.
TEST_F(SlurmUpTest, OverridesGoIntoTheRunsSpec) {
  options_.overrides = {"seed=5", "name=slurm-r2"};
  TS_ASSERT_OK(SlurmUp(options_, Runner()));
  const std::string run = fs::absolute(options_.run_dir).string();
  TS_ASSERT_OK_AND_ASSIGN(
      SweepSpec spec,
      ParseSweepSpec(testing::ReadFile(RunPath(run, kRunSpec)), "run spec"));
  EXPECT_EQ(spec.name, "slurm-r2");
  EXPECT_EQ(spec.overrides,
            (std::vector<std::string>{"seed=5", "name=slurm-r2"}));
  fs::remove_all(options_.run_dir);
  commands_.clear();
  options_.overrides = {"seed=soon"};
  const absl::Status bad = SlurmUp(options_, Runner()).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << bad;
  EXPECT_NE(bad.message().find("override 'seed=soon'"), std::string::npos)
      << bad;
  EXPECT_TRUE(commands_.empty());
}

TEST_F(SlurmUpTest, AFailedWorkerSubmissionCancelsTheCoordinator) {
  sbatches_ = 0;
  ProgramRunner runner = Runner();
  int calls = 0;
  const absl::StatusOr<SlurmJobIds> ids = SlurmUp(
      options_,
      [&](const std::vector<std::string>& argv)
          -> absl::StatusOr<ProgramResult> {
        if (argv[0] == "sbatch" && ++calls == 2) {
          commands_.push_back("sbatch (fails)");
          return ProgramResult{1, "", "sbatch: error: invalid partition"};
        }
        return runner(argv);
      });
  ASSERT_FALSE(ids.ok());
  EXPECT_TRUE(absl::StrContains(ids.status().message(), "invalid partition"))
      << ids.status();
  EXPECT_TRUE(absl::StrContains(ids.status().message(),
                                "the coordinator job 100 was cancelled"));
  EXPECT_EQ(commands_.back(), "scancel 100");
  EXPECT_FALSE(fs::exists(options_.run_dir)) << "nothing left to block a retry";
}

// No sbatch on this machine: said so, and no run directory left behind.
TEST_F(SlurmUpTest, NoSbatchHereLeavesNoRunDirectory) {
  ProgramRunner runner = Runner();
  const absl::StatusOr<SlurmJobIds> ids =
      SlurmUp(options_,
              [&](const std::vector<std::string>& argv)
                  -> absl::StatusOr<ProgramResult> {
                if (argv[0] == "sbatch") {
                  return absl::NotFoundError("not found on PATH");
                }
                return runner(argv);
              });
  ASSERT_FALSE(ids.ok());
  EXPECT_TRUE(absl::StrContains(ids.status().message(), "sbatch: not found"))
      << ids.status();
  EXPECT_FALSE(fs::exists(options_.run_dir));
}

TEST_F(SlurmUpTest, RefusesABadSpecAndAUsedRunDirectoryBeforeAnyCommand) {
  std::ofstream(dir_ + "/bad.yaml")
      << "name: x\nkind: train\ngrid: {kernel: [cosine]}\n";
  SlurmUpOptions bad = options_;
  bad.spec_path = dir_ + "/bad.yaml";
  EXPECT_EQ(SlurmUp(bad, Runner()).status().code(),
            absl::StatusCode::kInvalidArgument);
  fs::create_directories(options_.run_dir);
  std::ofstream(options_.run_dir + "/tailsweep.db") << "x";
  const absl::StatusOr<SlurmJobIds> used = SlurmUp(options_, Runner());
  EXPECT_EQ(used.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(used.status().message(), "not empty"));
  SlurmUpOptions no_scripts = options_;
  no_scripts.scripts_dir = dir_;
  EXPECT_EQ(SlurmUp(no_scripts, Runner()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(commands_.empty());
}

TEST(RunDirChannel, ReadsTheAddressOnceWrittenAndRefusesAMalformedOne) {
  const std::string dir = testing::MakeTempDir("run_dir_");
  EXPECT_EQ(RunDirChannel(dir).status().code(), absl::StatusCode::kNotFound);
  std::ofstream(RunPath(dir, kRunAddress)) << "node17:50551\n";
  TS_ASSERT_OK_AND_ASSIGN(ChannelOptions c, RunDirChannel(dir));
  EXPECT_EQ(c.address, "node17:50551");
  EXPECT_EQ(c.token_file, RunPath(dir, kRunToken));
  EXPECT_EQ(c.tls_ca, RunPath(dir, kRunCaCert));
  // A worker's: the worker token once the run has one.
  TS_ASSERT_OK_AND_ASSIGN(c, RunDirChannel(dir, /*as_worker=*/true));
  EXPECT_EQ(c.token_file, RunPath(dir, kRunToken));
  std::ofstream(RunPath(dir, kRunWorkerToken)) << "w\n";
  TS_ASSERT_OK_AND_ASSIGN(c, RunDirChannel(dir, /*as_worker=*/true));
  EXPECT_EQ(c.token_file, RunPath(dir, kRunWorkerToken));
  std::ofstream(RunPath(dir, kRunAddress)) << "node17\n";
  EXPECT_EQ(RunDirChannel(dir).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunDirChannel(dir + "/nope").status().code(),
            absl::StatusCode::kInvalidArgument);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tailsweep::cli
