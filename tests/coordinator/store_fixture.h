#ifndef TAILSWEEP_TESTS_COORDINATOR_STORE_FIXTURE_H_
#define TAILSWEEP_TESTS_COORDINATOR_STORE_FIXTURE_H_

// The store tests' fixture (store_test.cc, shared_sweep_test.cc): a Store
// on a temporary file and a manual clock, and sweep "s" of four jobs.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/store.h"
#include "tests/testing/run_command.h"

namespace tailsweep {

inline constexpr char kStoreSpec[] = R"(name: s
grid:
  kernel: [softmax, quadratic, linear, log]
fixed:
  steps: 20
  warmup: 2
)";

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("tailsweep_store_");
    Reopen();
    auto spec = ParseSweepSpec(kStoreSpec, "s.yaml");
    ASSERT_TRUE(spec.ok()) << spec.status();
    spec_ = *spec;
    auto jobs = ExpandSweep(spec_);
    ASSERT_TRUE(jobs.ok());
    jobs_ = *jobs;
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    store_.reset();
    StoreOptions options;
    options.max_attempts = 2;
    options.lease_grace_ms = grace_ms_;
    auto store = Store::Open(dir_ + "/tailsweep.db", &clock_, options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }

  // Expiry against the steady clock now.
  absl::StatusOr<int64_t> Expire() {
    return store_->ExpireLeases(clock_.SteadyMs());
  }
  // How many of the sweep's jobs are leased.
  int64_t Leased() {
    absl::StatusOr<JobCounts> counts = store_->Counts("s");
    EXPECT_TRUE(counts.ok()) << counts.status();
    return counts.ok() ? counts->Of(JobState::kLeased) : -1;
  }

  std::string dir_;
  int64_t grace_ms_ = 0;
  ManualClock clock_;
  std::unique_ptr<Store> store_;
  SweepSpec spec_;
  std::vector<JobSpec> jobs_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_TESTS_COORDINATOR_STORE_FIXTURE_H_
