// `tailsweep lab ...` hands its command line to tailsweep-lab: which words
// go (LabArguments), and the real executables doing it.

#include "cli/lab_handover.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/testing/run_command.h"

namespace tailsweep::cli {
namespace {

using testing::CommandResult;
using testing::RunCommand;
using Words = std::vector<std::string>;

// The top-level options of `tailsweep` that take a value, as CLI11 says.
bool TakesValue(const std::string& word) {
  return word == "--coordinator" || word == "--threads" ||
         word == "--token-file";
}

TEST(LabArguments, KeepsTheWordsAfterLabAndThreadsBeforeIt) {
  EXPECT_EQ(LabArguments({"lab", "train", "--set", "lr=1"}, TakesValue),
            (Words{"lab", "train", "--set", "lr=1"}));
  EXPECT_EQ(
      LabArguments({"--coordinator", "lab", "--threads", "2", "lab", "devices"},
                   TakesValue),
      (Words{"--threads", "2", "lab", "devices"}));
  EXPECT_EQ(LabArguments({"--threads=3", "lab", "--help"}, TakesValue),
            (Words{"--threads=3", "lab", "--help"}));
}

TEST(LabArguments, OtherCommandsStayHere) {
  EXPECT_EQ(LabArguments({}, TakesValue), std::nullopt);
  EXPECT_EQ(LabArguments({"--help"}, TakesValue), std::nullopt);
  EXPECT_EQ(LabArguments({"results", "lab"}, TakesValue), std::nullopt);
  // "lab" as the value of an option is not the command.
  EXPECT_EQ(LabArguments({"--coordinator", "lab", "status"}, TakesValue),
            std::nullopt);
  EXPECT_EQ(LabArguments({"--", "lab"}, TakesValue), std::nullopt);
}

TEST(OptimizeArguments, KeepsTheDriversWordsAfterOptimize) {
  EXPECT_EQ(
      OptimizeArguments({"optimize", "s.yaml", "--trials", "3"}, TakesValue),
      (Words{"s.yaml", "--trials", "3"}));
  EXPECT_EQ(
      OptimizeArguments({"--coordinator", "optimize", "optimize", "--help"},
                        TakesValue),
      (Words{"--help"}));
  EXPECT_EQ(OptimizeArguments({"status", "optimize"}, TakesValue),
            std::nullopt);
  EXPECT_EQ(OptimizeArguments({"lab", "optimize"}, TakesValue), std::nullopt);
}

// The driver's own --help comes back through tailsweep (python3 on PATH;
// Optuna is imported only when it runs).
TEST(OptimizeHandover, TailsweepOptimizeIsTheDriver) {
  const CommandResult help =
      RunCommand(std::string(TAILSWEEP_BIN) + " optimize --help");
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("tailsweep.optimize"), std::string::npos) << help.out;
}

TEST(LabHandover, TailsweepLabAnswersAsTailsweepLabDoes) {
  const std::string args = " lab sample --n 5 --seed 3 --format json";
  const CommandResult direct =
      RunCommand(std::string(TAILSWEEP_LAB_BIN) + " --threads 1" + args);
  const CommandResult handed =
      RunCommand(std::string(TAILSWEEP_BIN) +
                 " --coordinator 127.0.0.1:1 --threads 1" + args);
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  EXPECT_EQ(handed.exit_code, 0) << handed.err;
  EXPECT_EQ(handed.out, direct.out);

  const CommandResult help =
      RunCommand(std::string(TAILSWEEP_BIN) + " lab --help");
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("train"), std::string::npos) << help.out;
  // A bad lab command is refused by tailsweep-lab, with its exit code.
  const CommandResult bad =
      RunCommand(std::string(TAILSWEEP_BIN) + " lab sample --n 1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--n"), std::string::npos) << bad.err;
}

TEST(LabHandover, WithoutTailsweepLabSaysWhatIsMissing) {
  const std::string dir = testing::MakeTempDir("tailsweep_alone_");
  const std::string alone = dir + "/tailsweep";
  std::filesystem::copy_file(TAILSWEEP_BIN, alone);
  const CommandResult r =
      RunCommand("PATH=/nonexistent " + alone + " lab devices");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("tailsweep-lab"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No such file"), std::string::npos) << r.err;
  // Service commands need no tailsweep-lab.
  EXPECT_EQ(RunCommand(alone + " --version").exit_code, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tailsweep::cli
