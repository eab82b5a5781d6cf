// `tailsweep submit --dry-run`: a spec and its overrides are checked and
// counted with no coordinator (none listens at the address given).

#include <gtest/gtest.h>

#include <string>

#include "tests/testing/run_command.h"

namespace tailsweep {
namespace {

using testing::CommandResult;
using testing::RunCommand;

CommandResult DryRun(const std::string& args) {
  return RunCommand(std::string(TAILSWEEP_BIN) +
                    " --coordinator 127.0.0.1:1 submit --dry-run " + args);
}

TEST(SubmitDryRun, CountsTheJobsWithoutACoordinator) {
  const std::string spec =
      std::string(TAILSWEEP_SOURCE_DIR) + "/sweeps/boundary-lr-cpu.yaml";
  const CommandResult plain = DryRun(spec);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  // 4 kernels x both ends x 4 seeds.
  EXPECT_NE(plain.out.find("sweep boundary-lr-cpu: 32 jobs (dry run"),
            std::string::npos)
      << plain.out;
  EXPECT_NE(plain.out.find("boundary search along lr"), std::string::npos);

  // An override widens or narrows the grid; the spec it makes is shown.
  const CommandResult narrowed = DryRun(spec + " kernel=softmax name=one");
  ASSERT_EQ(narrowed.exit_code, 0) << narrowed.err;
  EXPECT_NE(narrowed.out.find("sweep one: 8 jobs"), std::string::npos)
      << narrowed.out;
  EXPECT_NE(narrowed.out.find("\nkind: train\n"), std::string::npos)
      << narrowed.out;
  EXPECT_NE(narrowed.out.find("\n  tolerance: 0.3\n"), std::string::npos)
      << narrowed.out;
  EXPECT_NE(narrowed.out.find("\noverrides: [kernel=softmax, name=one]\n"),
            std::string::npos)
      << narrowed.out;
}

TEST(SubmitDryRun, RefusesWhatSubmitRefuses) {
  const std::string spec =
      std::string(TAILSWEEP_SOURCE_DIR) + "/sweeps/boundary-lr-cpu.yaml";
  const CommandResult bad = DryRun(spec + " kernel=cosine");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.err.find("kernel"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("cosine"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.out, "");
}

}  // namespace
}  // namespace tailsweep
