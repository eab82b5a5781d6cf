#include "cli/render.h"

#include <gtest/gtest.h>

namespace tailsweep::cli {
namespace {

const Table kTable = {
    {"cell", "softmax", "log"},
    {{"norm=post", "2.015 [1.5, 2.4] *", "1.321 [0.9, 1.7] b"},
     {"norm=pre, \"quoted\"", "a|b", "line\nbreak"}}};

TEST(Render, TextPadsColumns) {
  EXPECT_EQ(RenderText(kTable),
            "cell                softmax             log\n"
            "norm=post           2.015 [1.5, 2.4] *  1.321 [0.9, 1.7] b\n"
            "norm=pre, \"quoted\"  a|b                 line\nbreak\n");
}

TEST(Render, CsvQuotesCommasQuotesAndLineBreaks) {
  EXPECT_EQ(RenderCsv(kTable),
            "cell,softmax,log\r\n"
            "norm=post,\"2.015 [1.5, 2.4] *\",\"1.321 [0.9, 1.7] b\"\r\n"
            "\"norm=pre, \"\"quoted\"\"\",a|b,\"line\nbreak\"\r\n");
}

TEST(Render, MarkdownEscapesPipesAndBreaks) {
  EXPECT_EQ(RenderMarkdown(kTable),
            "| cell | softmax | log |\n"
            "|---|---|---|\n"
            "| norm=post | 2.015 [1.5, 2.4] * | 1.321 [0.9, 1.7] b |\n"
            "| norm=pre, \"quoted\" | a\\|b | line break |\n");
}

// Terminal escapes from job errors, logs, worker ids or sweep names are
// shown, never obeyed.
TEST(Render, ControlCharactersAreEscaped) {
  EXPECT_EQ(EscapeControl("red \x1b[31mX\x1b[0m\a\x7f end"),
            "red \\x1b[31mX\\x1b[0m\\x07\\x7f end");
  EXPECT_EQ(EscapeControl("a\nb\tc\rd"), "a\\x0ab\\x09c\\x0dd");
  EXPECT_EQ(EscapeControl("a\nb\tc\rd", Lines::kKeep), "a\nb\tc\\x0dd");
  // C1 controls (U+009B is a CSI to some terminals) and bytes that are not
  // UTF-8; other UTF-8 is kept.
  EXPECT_EQ(EscapeControl("\xc2\x9b"
                          "2J \xe2\x80\x94 \xff\xc3 \xc3\xa9"),
            "\\xc2\\x9b2J \xe2\x80\x94 \\xff\\xc3 \xc3\xa9");
  EXPECT_EQ(EscapeControl("\xed\xa0\x80"),  // a surrogate
            "\\xed\\xa0\\x80");
  EXPECT_EQ(EscapeControl("abc\xe2\x80\xae"
                          "def"),
            "abc\\u202edef");
  EXPECT_EQ(EscapeControl(std::string("nul\0x", 5)), "nul\\x00x");
}

TEST(Render, EveryFormatEscapesItsCells) {
  const Table t = {{"job", "error"},
                   {{"a\x1b]0;title\a", "line1\nline2\x1b[2J"}}};
  EXPECT_EQ(RenderText(t),
            "job                error\n"
            "a\\x1b]0;title\\x07  line1\nline2\\x1b[2J\n");
  EXPECT_EQ(RenderCsv(t),
            "job,error\r\na\\x1b]0;title\\x07,\"line1\nline2\\x1b[2J\"\r\n");
  EXPECT_EQ(RenderMarkdown(t),
            "| job | error |\n|---|---|\n"
            "| a\\x1b]0;title\\x07 | line1 line2\\x1b[2J |\n");
}

TEST(Render, JsonIsTerminalSafeAndTheSameValue) {
  // As nlohmann::json::dump writes it: C0 already \u-escaped.
  const std::string dumped =
      "{\"e\": \"\\u001b[31m \x7f \xc2\x9b \xe2\x80\xae \xc3\xa9\"}";
  EXPECT_EQ(TerminalSafeJson(dumped),
            "{\"e\": \"\\u001b[31m \\u007f \\u009b \\u202e \xc3\xa9\"}");
}

TEST(Render, TailsTableInShortestRoundTripForm) {
  TailsRow r;
  r.seam = 0.9;
  r.n = 1024;
  r.index = 1.5;
  r.ed_mean = 0.1;
  r.ed_sd = 1.0 / 3;
  r.w2_mean = 2;
  r.w2_sd = 0.25;
  r.ed_noise = -1.5;
  r.w2_noise = 0;
  EXPECT_EQ(RenderCsv(TailsTable({r})),
            "seam,n,index,ed_mean,ed_sd,w2_mean,w2_sd,ed_noise,w2_noise\r\n"
            "0.9,1024,1.5,0.1,0.3333333333333333,2,0.25,-1.5,0\r\n");
}

}  // namespace
}  // namespace tailsweep::cli
