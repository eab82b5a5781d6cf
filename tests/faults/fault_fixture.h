#ifndef TAILSWEEP_TESTS_FAULTS_FAULT_FIXTURE_H_
#define TAILSWEEP_TESTS_FAULTS_FAULT_FIXTURE_H_

// What the fault tests share: a small train sweep, a cluster of real
// processes (tests/testing/cluster.h) that checks results against clean
// runs, and the same with a fault proxy between worker and coordinator.

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/faults/fault_proxy.h"
#include "tests/testing/cluster.h"

namespace tailsweep {

using testing::RunCommand;

// Rounds of the random-kill tests: 3, or 20 with `fault_test --long`.
inline int rounds = 3;

// `cells` cells (kernels), `steps` steps, a loss point every 5 steps, a
// checkpoint every 10.
inline std::string Spec(const std::string& name, int steps, int cells = 2,
                        int log_every = 5) {
  const char* kernels[] = {"softmax", "log", "linear", "quadratic"};
  std::string grid;
  for (int i = 0; i < cells; ++i) {
    absl::StrAppend(&grid, i ? ", " : "", kernels[i]);
  }
  return absl::StrCat("name: ", name, "\ngrid:\n  kernel: [", grid, R"(]
fixed:
  n_points: 64
  d_model: 16
  heads: 2
  layers: 1
  warmup: 3
  checkpoint_every: 10
  eval_instances: 4
  reference_trials: 4
  steps: )",
                      steps, "\n  log_every: ", log_every, "\n");
}

class FaultSuite : public ::testing::Test, public testing::Cluster {
 protected:
  FaultSuite() : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_faults_") {}

  // Every done job's result equals a clean, uninterrupted run of its
  // config, bit for bit (the result's numbers print exactly).
  void ExpectResultsEqualCleanRuns() {
    const testing::CommandResult r =
        RunCommand("sqlite3 " + dir_ + "/db \"SELECT result FROM results\"");
    std::istringstream lines(r.out);
    std::string line;
    int compared = 0;
    while (std::getline(lines, line)) {
      const nlohmann::json result = nlohmann::json::parse(line);
      std::string sets;
      for (const auto& [k, v] : result["config"].items()) {
        sets += " --set " + k + "=" +
                (v.is_string() ? v.get<std::string>() : v.dump());
      }
      const std::string out = absl::StrCat(dir_, "/clean-", compared);
      const testing::CommandResult clean =
          RunCommand(bin_ + "/tailsweep --threads 1 lab train" + sets +
                     " --out-dir " + out);
      ASSERT_EQ(clean.exit_code, 0) << clean.err;
      const nlohmann::json want =
          nlohmann::json::parse(testing::ReadFile(out + "/result.json"));
      for (const char* key : {"final_loss", "ratio_median", "ratio_mean",
                              "ratio_ci_low", "collapse_step"}) {
        EXPECT_EQ(result[key], want[key]) << key;
      }
      ++compared;
    }
    EXPECT_GT(compared, 0);
  }
  std::mt19937_64 rng_{20261201};
};

class PartitionTest : public FaultSuite {
 protected:
  void SetUp() override {
    proxy_port_ = port_ + 1;
    proxy_ = std::make_unique<testing::FaultProxy>(proxy_port_, port_);
    ASSERT_TRUE(proxy_->listening());
  }
  std::string ProxyAddress() const {
    return absl::StrCat("127.0.0.1:", proxy_port_);
  }
  int proxy_port_ = 0;
  std::unique_ptr<testing::FaultProxy> proxy_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_TESTS_FAULTS_FAULT_FIXTURE_H_
