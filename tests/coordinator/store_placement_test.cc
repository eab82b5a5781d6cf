// Leasing jobs that ask for several devices ("gpus"): only what fits the
// worker's free slots is leased, placed as core/schema/device_placement.h
// says, and jobs that do not fit wait for a worker they fit. And whether an
// idle worker may still get work (HasUnfinishedJobs).

#include <gtest/gtest.h>

#include <filesystem>

#include "coordinator/store.h"
#include "core/schema/device_placement.h"
#include "tests/testing/results.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

TEST(DevicePlacement, TheFullestUnitsFirstAndNothingWhenTooFewHaveASlot) {
  std::vector<int> free = {1, 2, 0, 2};
  EXPECT_EQ(PlaceJob(free, 1), (std::vector<int>{1}));
  EXPECT_EQ(free, (std::vector<int>{1, 1, 0, 2}));
  EXPECT_EQ(PlaceJob(free, 2), (std::vector<int>{0, 3}));
  EXPECT_EQ(free, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(PlaceJob(free, 3), std::nullopt);
  EXPECT_EQ(free, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(PlaceJob(free, 2), (std::vector<int>{1, 3}));
  EXPECT_EQ(PlaceJob(free, 1), std::nullopt);
}

TEST(DevicePlacement, GpusIsAWholeNumberFromOneTo64AndOneWhenAbsent) {
  EXPECT_EQ(*JobGpus({{"kernel", "log"}}), 1);
  EXPECT_EQ(*JobGpus({{"gpus", "4"}}), 4);
  for (const char* bad : {"0", "-1", "65", "two", "1.5", ""}) {
    const absl::StatusOr<int> gpus = JobGpus({{"gpus", bad}});
    EXPECT_EQ(gpus.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(gpus.status().message().find("from 1 to 64"), std::string::npos)
        << gpus.status();
  }
}

class StorePlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("tailsweep_placement_");
    TS_ASSERT_OK_AND_ASSIGN(store_,
                            Store::Open(dir_ + "/tailsweep.db", &clock_));
    // In queue order: a job of 4 GPUs, two of 1, one of 2.
    TS_ASSERT_OK_AND_ASSIGN(SweepSpec spec, ParseSweepSpec(R"(name: s
grid:
  gpus: [4, 1, 2]
  seed: [0, 1]
exclude:
  - {gpus: 4, seed: 1}
  - {gpus: 2, seed: 1}
fixed: {steps: 20, warmup: 2}
)",
                                                           "s.yaml"));
    TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> jobs, ExpandSweep(spec));
    TS_ASSERT_OK(store_->SubmitSweep(spec, jobs).status());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // The "gpus" of each lease.
  std::vector<int> Gpus(const std::vector<Lease>& leases) {
    std::vector<int> out;
    for (const Lease& l : leases) out.push_back(*JobGpus(l.params));
    return out;
  }

  std::string dir_;
  ManualClock clock_;
  std::unique_ptr<Store> store_;
};

TEST_F(StorePlacementTest, OnlyJobsThatFitAreLeasedAndTheRestWait) {
  // No free slots said (an older worker): jobs of one device only.
  TS_ASSERT_OK_AND_ASSIGN(auto old, store_->LeaseJobs("old", 8, 60000));
  EXPECT_EQ(Gpus(old), (std::vector<int>{1, 1}));
  // Three GPUs with a free slot: the 4-GPU job is passed over, the 2-GPU
  // one fits; one GPU stays free.
  TS_ASSERT_OK_AND_ASSIGN(auto three,
                          store_->LeaseJobs("w3", 8, 60000, "", {1, 1, 1}));
  EXPECT_EQ(Gpus(three), (std::vector<int>{2}));
  // max_jobs still bounds the count; nothing fits a worker of 3 GPUs.
  TS_ASSERT_OK_AND_ASSIGN(auto none,
                          store_->LeaseJobs("w3b", 8, 60000, "", {1, 1, 1}));
  EXPECT_TRUE(none.empty());
  // Four free GPUs: the 4-GPU job at last.
  TS_ASSERT_OK_AND_ASSIGN(auto four,
                          store_->LeaseJobs("w4", 1, 60000, "", {1, 1, 1, 1}));
  EXPECT_EQ(Gpus(four), (std::vector<int>{4}));
}

// A worker on the CPU alone is leased no job that names "gpus", however
// many slots it has; a job that does not name it runs anywhere. The devices
// each worker named are what Workers() shows.
TEST_F(StorePlacementTest, ACpuWorkerIsNeverLeasedAJobThatAsksForGpus) {
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec plain, ParseSweepSpec(R"(name: plain
grid:
  seed: [7]
fixed: {steps: 20, warmup: 2}
)",
                                                          "plain.yaml"));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> jobs, ExpandSweep(plain));
  TS_ASSERT_OK(store_->SubmitSweep(plain, jobs).status());
  TS_ASSERT_OK_AND_ASSIGN(
      auto cpu, store_->LeaseJobs("cpu-w", 8, 60000, "",
                                  {1, 1, 1, 1, 1, 1, 1, 1}, {}, {"cpu"}));
  // The plain job and the two train jobs of gpus 1, which a train job's
  // identity leaves out as its default; not those of gpus 4 and 2.
  ASSERT_EQ(cpu.size(), 3u);
  for (const Lease& l : cpu) {
    for (const auto& [key, value] : l.params) EXPECT_NE(key, "gpus");
  }
  TS_ASSERT_OK_AND_ASSIGN(
      auto again, store_->LeaseJobs("cpu-w", 8, 60000, "",
                                    {1, 1, 1, 1, 1, 1, 1, 1}, {}, {"cpu"}));
  EXPECT_TRUE(again.empty());  // the two gpus jobs wait for a GPU
  TS_ASSERT_OK_AND_ASSIGN(
      auto gpu, store_->LeaseJobs("gpu-w", 8, 60000, "", {1, 1, 1, 1}, {},
                                  {"cuda:0", "cuda:1", "cuda:2", "cuda:3"}));
  EXPECT_FALSE(gpu.empty());
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Store::WorkerRow> workers,
                          store_->Workers());
  ASSERT_EQ(workers.size(), 2u);
  EXPECT_EQ(workers[0].worker_id, "cpu-w");
  EXPECT_EQ(workers[0].devices, "cpu");
  EXPECT_EQ(workers[1].devices, "cuda:0,cuda:1,cuda:2,cuda:3");
}

// An idle worker may still get work while any job is queued or leased; a
// finished sweep has none.
TEST_F(StorePlacementTest, UnfinishedWhileAnyJobIsQueuedOrLeased) {
  EXPECT_TRUE(*store_->HasUnfinishedJobs());
  TS_ASSERT_OK_AND_ASSIGN(auto all,
                          store_->LeaseJobs("w", 8, 60000, "", {2, 2, 2, 2}));
  ASSERT_EQ(all.size(), 4u);
  EXPECT_TRUE(*store_->HasUnfinishedJobs());  // all leased
  for (const Lease& l : all) {
    TS_ASSERT_OK(
        store_->Complete("w", l.job_id, l.epoch, testing::TestResult()));
  }
  EXPECT_FALSE(*store_->HasUnfinishedJobs());
}

}  // namespace
}  // namespace tailsweep
