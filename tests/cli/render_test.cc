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
