#include "cli/messages.h"

#include <gtest/gtest.h>

namespace tailsweep::cli {
namespace {

TEST(ErrorHeadline, APythonTracebackShowsItsLastLine) {
  EXPECT_EQ(ErrorHeadline("exit code 1: Traceback (most recent call last):\n"
                          "  File \"train.py\", line 26, in <module>\n"
                          "    import torch\n"
                          "ModuleNotFoundError: No module named 'torch'\n\n"),
            "exit code 1: ModuleNotFoundError: No module named 'torch'");
}

TEST(ErrorHeadline, OneLineStaysAsItIs) {
  EXPECT_EQ(ErrorHeadline("killed by signal 9"), "killed by signal 9");
  EXPECT_EQ(ErrorHeadline("exit code 2\n\n  \n"), "exit code 2");
}

TEST(ErrorHeadline, LongLinesAreCutOutsideACharacter) {
  const std::string head = "exit code 1: ";  // 13 bytes
  const std::string a20(20, 'a');
  // 13 + 20 + 2 (e acute) = 35 bytes: fits 35.
  EXPECT_EQ(ErrorHeadline(head + "x\n" + a20 + "\xc3\xa9", 35),
            head + a20 + "\xc3\xa9");
  EXPECT_EQ(ErrorHeadline(head + "x\n" + a20 + "\xc3\xa9", 34),
            head + std::string(18, 'a') + "...");
  // A cut at byte 34 would split the e acute (bytes 33-34): it moves back.
  EXPECT_EQ(ErrorHeadline(head + "x\n" + a20 + "\xc3\xa9tail", 37),
            head + a20 + "...");
}

}  // namespace
}  // namespace tailsweep::cli
