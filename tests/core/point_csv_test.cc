#include "core/point_csv.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <limits>

#include "core/number_text.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

TEST(PointCsv, ParsesHeaderBlankLinesSpacesAndCrlf) {
  TS_ASSERT_OK_AND_ASSIGN(
      PointSet p, ParsePointsCsv("x, y\r\n1, -2.5\r\n\r\n +3e2 ,4\n", "f.csv"));
  EXPECT_EQ(p.columns, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(p.rows, 2);
  EXPECT_EQ(p.dims, 2);
  EXPECT_EQ(p.values, (std::vector<double>{1, -2.5, 300, 4}));
  TS_ASSERT_OK_AND_ASSIGN(PointSet q, ParsePointsCsv("1\n2\n3", "g"));
  EXPECT_TRUE(q.columns.empty());
  EXPECT_EQ(q.dims, 1);
  EXPECT_EQ(q.rows, 3);
}

TEST(PointCsv, RejectsRaggedNonNumericNonFiniteAndEmptyWithLocation) {
  auto ragged = ParsePointsCsv("x,y\n1,2\n3\n", "a.csv");
  TS_EXPECT_CODE(ragged, absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ragged.status().message().find("a.csv:3"), std::string::npos)
      << ragged.status();
  auto word = ParsePointsCsv("1,2\n3,abc\n", "b.csv");
  TS_EXPECT_CODE(word, absl::StatusCode::kInvalidArgument);
  EXPECT_NE(word.status().message().find("b.csv:2: column 2"),
            std::string::npos)
      << word.status();
  TS_EXPECT_CODE(ParsePointsCsv("1,nan\n", "c"),
                 absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(ParsePointsCsv("x,y\n", "d"),
                 absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(ParsePointsCsv("", "e"), absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(ReadPointsCsv("/nonexistent/x.csv"),
                 absl::StatusCode::kNotFound);
}

TEST(PointCsv, WriteThenReadRoundTripsExactly) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "tailsweep_csv_test.csv")
          .string();
  PointSet p;
  p.columns = {"x", "y"};
  p.rows = 2;
  p.dims = 2;
  p.values = {0.1, -1e300, std::numeric_limits<double>::denorm_min(),
              123456789.123456789};
  TS_ASSERT_OK(WritePointsCsv(path, p));
  TS_ASSERT_OK_AND_ASSIGN(PointSet q, ReadPointsCsv(path));
  EXPECT_EQ(q.values, p.values);
  EXPECT_EQ(q.columns, p.columns);
  std::remove(path.c_str());
  EXPECT_EQ(FormatDouble(0.1), "0.1");
}

}  // namespace
}  // namespace tailsweep
