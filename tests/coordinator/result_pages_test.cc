// ResultPages: a read's pages share one snapshot; new reads reuse one only
// while the store's generation is unchanged.

#include "coordinator/result_pages.h"

#include <gtest/gtest.h>

namespace tailsweep {
namespace {

TEST(ResultPages, NewReadsReuseASnapshotOnlyAtTheSameGeneration) {
  ResultPages pages;
  int computed = 0;
  const ResultPages::Compute compute =
      [&]() -> absl::StatusOr<ResultsSnapshot> {
    ResultsSnapshot s;
    s.jobs = ++computed;
    return s;
  };
  const ResultPages::Key key{"s", true, "kernel"};
  uint64_t first = 0;
  ASSERT_TRUE(pages.Get(key, 7, &first, compute).ok());
  uint64_t again = 0;  // a new read, nothing changed: the same snapshot
  EXPECT_EQ((*pages.Get(key, 7, &again, compute))->jobs, 1);
  EXPECT_EQ(again, first);
  uint64_t changed = 0;  // something changed: computed afresh
  EXPECT_EQ((*pages.Get(key, 8, &changed, compute))->jobs, 2);
  EXPECT_NE(changed, first);
  // A read's later pages keep their snapshot whatever changed since.
  EXPECT_EQ((*pages.Get(key, 9, &first, compute))->jobs, 1);
  uint64_t other = 0;  // another key never shares
  EXPECT_EQ((*pages.Get({"s", false, "kernel"}, 8, &other, compute))->jobs, 3);
  EXPECT_EQ(computed, 3);
}

}  // namespace
}  // namespace tailsweep
