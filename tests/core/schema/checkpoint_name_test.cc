#include "core/schema/checkpoint_name.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

TEST(CheckpointName, RoundTrips) {
  EXPECT_EQ(CheckpointFileName(40), "step-00000040.pt");
  EXPECT_EQ(CheckpointFileName(123456789), "step-123456789.pt");
  for (int64_t step : {1, 40, 99999999, 123456789}) {
    TS_ASSERT_OK_AND_ASSIGN(int64_t back,
                            CheckpointStepOf(CheckpointFileName(step)));
    EXPECT_EQ(back, step);
  }
}

TEST(CheckpointName, RefusesEverythingElse) {
  for (const char* name :
       {"step-00000000.pt", "step-40.pt", "step--0000040.pt",
        "step-+0000040.pt", "step-0000004a.pt", "../step-00000040.pt",
        "step-00000040.pt.tmp", "step-00000040", "x-00000040.pt",
        "step-0000000000000000040.pt", ""}) {
    TS_EXPECT_CODE(CheckpointStepOf(name), absl::StatusCode::kInvalidArgument);
  }
}

TEST(CheckpointName, NewestIgnoresOtherFiles) {
  const std::string dir = ::testing::TempDir() + "/checkpoint_name_newest";
  std::filesystem::remove_all(dir);
  TS_EXPECT_CODE(NewestCheckpointIn(dir), absl::StatusCode::kNotFound);
  std::filesystem::create_directories(dir);
  for (const char* name : {"step-00000010.pt", "step-00000030.pt",
                           "step-00000090.pt.tmp.1.2", "notes.txt"}) {
    std::ofstream(dir + "/" + name) << "x";
  }
  TS_ASSERT_OK_AND_ASSIGN(CheckpointFile newest, NewestCheckpointIn(dir));
  EXPECT_EQ(newest.step, 30);
  EXPECT_EQ(newest.path, dir + "/step-00000030.pt");
}

}  // namespace
}  // namespace tailsweep
