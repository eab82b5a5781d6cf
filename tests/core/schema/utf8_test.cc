#include "core/schema/utf8.h"

#include <gtest/gtest.h>

namespace tailsweep {
namespace {

TEST(Utf8, ValidTextIsKeptAndEveryOtherByteBecomesAReplacement) {
  EXPECT_EQ(ValidUtf8("plain \xc3\xa9 \xe2\x80\x94 \xf0\x9f\x99\x82"),
            "plain \xc3\xa9 \xe2\x80\x94 \xf0\x9f\x99\x82");
  const std::string r = "\xef\xbf\xbd";
  EXPECT_EQ(ValidUtf8("\xff"), r);
  EXPECT_EQ(ValidUtf8("a\xe2\x82"), "a" + r + r);           // cut short
  EXPECT_EQ(ValidUtf8("\xc0\xaf"), r + r);                  // overlong '/'
  EXPECT_EQ(ValidUtf8("\xed\xa0\x80"), r + r + r);          // a surrogate
  EXPECT_EQ(ValidUtf8("\xf4\x90\x80\x80"), r + r + r + r);  // > U+10FFFF
  EXPECT_EQ(ValidUtf8(std::string("nul\0", 4)), std::string("nul\0", 4));
  uint32_t cp = 0;
  EXPECT_EQ(Utf8SequenceAt("\xc2\x9b", 0, &cp), 2u);
  EXPECT_EQ(cp, 0x9bu);
  EXPECT_EQ(Utf8SequenceAt("x\xe2\x80\xae", 1, &cp), 3u);
  EXPECT_EQ(cp, 0x202eu);
}

}  // namespace
}  // namespace tailsweep
