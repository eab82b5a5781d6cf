#include "core/schema/lease_file.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace tailsweep {
namespace {

TEST(LeaseWatchdog, ExpiresOnlyPastTheNumberInTheFileRereadEvery100Ms) {
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "lease_file_test")
          .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ManualClock clock(1000);
  LeaseWatchdog watchdog(dir, &clock);
  EXPECT_FALSE(watchdog.Expired());  // no file: no watchdog
  EXPECT_EQ(ReadLeaseFile(dir), std::nullopt);

  ASSERT_TRUE(WriteLeaseFile(dir, 1500).ok());
  EXPECT_EQ(ReadLeaseFile(dir), 1500);
  clock.Advance(100);  // t=1100: read again
  EXPECT_FALSE(watchdog.Expired());
  clock.Advance(400);  // t=1500
  EXPECT_TRUE(watchdog.Expired());
  // A renewal moves it on; seen at the next read.
  ASSERT_TRUE(WriteLeaseFile(dir, 3000).ok());
  EXPECT_TRUE(watchdog.Expired());  // read at t=1500, not again yet
  clock.Advance(100);
  EXPECT_FALSE(watchdog.Expired());

  // A file that does not hold a number is no watchdog.
  ASSERT_TRUE(WriteLeaseFile(dir, 0).ok());
  std::filesystem::resize_file(dir + "/lease", 0);
  EXPECT_EQ(ReadLeaseFile(dir), std::nullopt);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tailsweep
