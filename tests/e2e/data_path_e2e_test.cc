// Every number a job produces reaches the user: a train job's stored metrics
// equal its metrics.jsonl and result, key by key (attention per layer and a
// diverged step's NaN included), and a tails sweep through coordinator and
// worker prints the same table as `lab tails`.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/schema/job_result.h"
#include "core/schema/json_number.h"
#include "core/schema/metrics_line.h"
#include "tests/testing/cluster.h"
#include "tests/testing/run_command.h"

namespace tailsweep {
namespace {

using testing::RunCommand;

class DataPathE2E : public ::testing::Test, public testing::Cluster {
 protected:
  DataPathE2E() : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_data_") {}

  // The points the job wrote: its metrics.jsonl lines and its result.
  std::vector<MetricPoint> Written(const std::string& job_dir) {
    std::vector<MetricPoint> out;
    std::istringstream lines(testing::ReadFile(job_dir + "/metrics.jsonl"));
    std::string line;
    while (std::getline(lines, line)) {
      absl::StatusOr<StepMetrics> m = ParseMetricsLine(line);
      EXPECT_TRUE(m.ok()) << m.status() << ": " << line;
      if (!m.ok()) continue;
      for (const MetricPoint& p : StepPoints(*m)) out.push_back(p);
    }
    absl::StatusOr<TrainResult> r =
        ParseTrainResult(testing::ReadFile(job_dir + "/result.json"));
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) {
      for (const MetricPoint& p : ResultPoints(*r)) out.push_back(p);
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return std::tie(a.name, a.step) < std::tie(b.name, b.step);
    });
    return out;
  }

  // The points the coordinator stored, read back through `tailsweep curves`.
  std::vector<MetricPoint> Stored(const std::string& job_id) {
    const testing::CommandResult r =
        Cli(absl::StrCat("curves ", job_id, " --format json"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<MetricPoint> out;
    const nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_TRUE(doc.is_array()) << r.out;
    if (!doc.is_array()) return out;
    for (const auto& p : doc) {
      out.push_back({p["metric"].get<std::string>(), p["step"].get<int64_t>(),
                     NumberFromJson(p["value"]).value_or(-12345)});
    }
    return out;  // by name, then step
  }
};

TEST_F(DataPathE2E, StoredMetricsEqualTheJobsFilesKeyByKeyNaNIncluded) {
  StartCoordinator();
  // Two cells: a healthy run, evaluated every 10 steps and at the end, and
  // one that diverges at once (huge steps, no clipping), whose last logged
  // loss is NaN.
  Submit(R"(name: data
grid:
  lr: [3e-3, 1e6]
fixed:
  n_points: 64
  d_model: 16
  heads: 2
  layers: 2
  steps: 20
  warmup: 1
  clip: 1e30
  log_every: 5
  checkpoint_every: 10
  eval_every: 10
  eval_instances: 4
  reference_trials: 4
)");
  // After the submit: --exit-when-idle leaves at the first empty poll.
  StartWorker("w1", {"--exit-when-idle"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2))
      << Cli("jobs data").out;
  const testing::CommandResult jobs = Cli("jobs data --format json");
  const nlohmann::json list = nlohmann::json::parse(jobs.out);
  ASSERT_EQ(list.size(), 2u);
  int diverged = 0, with_attention = 0, logged = 0;
  std::vector<int64_t> healthy_eval_steps;
  for (const auto& job : list) {
    const std::string id = job["job_id"];
    const std::vector<MetricPoint> written = Written(WorkDir("w1") + "/" + id);
    ASSERT_FALSE(written.empty());
    EXPECT_EQ(Stored(id), written) << "job " << id;
    std::vector<int64_t> eval_steps;
    bool nan_loss = false;
    for (const MetricPoint& p : written) {
      if (p.name == "loss" && std::isnan(p.value)) nan_loss = true;
      if (p.name == "attention_entropy/1") ++with_attention;
      if (p.name == "eval/ratio_median") eval_steps.push_back(p.step);
    }
    diverged += nan_loss;
    if (!nan_loss) healthy_eval_steps = eval_steps;
    // The job's stderr reached the coordinator with its result.
    const testing::CommandResult log = Cli("logs " + id.substr(0, 10));
    EXPECT_EQ(log.exit_code, 0) << log.err;
    logged += log.out.find("train: 20/20") != std::string::npos;
  }
  EXPECT_EQ(logged, 1);          // the healthy run's final progress line
  EXPECT_EQ(diverged, 1);        // the diverged step's loss, stored as NaN
  EXPECT_GE(with_attention, 4);  // the healthy run: layer 1, every log step
  // The healthy run's periodic evaluation (step 10) and final one (step 20).
  EXPECT_EQ(healthy_eval_steps, (std::vector<int64_t>{10, 20}));
  // The table marks the diverged cell, and the NaN reads back in CSV.
  EXPECT_NE(Cli("results data --group-by lr").out.find("!"), std::string::npos);
  EXPECT_NE(Cli("curves data --metric loss").out.find(",nan\r\n"),
            std::string::npos);
}

TEST_F(DataPathE2E, ATailsSweepGivesTheSameTableAsLabTails) {
  StartCoordinator();
  Submit(R"(name: tails-e2e
kind: tails
grid:
  seam: [0.9, 0.95]
  n: [256, 512]
fixed:
  indices: "1.3:1.7:0.1"
  trials: 4
  seed: 3
  reference_index: 1.5
)");
  // After the submit: --exit-when-idle leaves at the first empty poll.
  StartWorker("w1", {"--exit-when-idle"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 4))
      << Cli("jobs tails-e2e").out;
  const testing::CommandResult local = RunCommand(
      std::string(TAILSWEEP_BIN_DIR) +
      "/tailsweep-lab --threads 1 lab tails --seams 0.9,0.95 --budgets 256,512 "
      "--index-grid 1.3:1.7:0.1 --trials 4 --seed 3 --reference-index 1.5");
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const testing::CommandResult swept = Cli("results tails-e2e --format csv");
  ASSERT_EQ(swept.exit_code, 0) << swept.err;
  // The same rows, number for number: lab tails' columns, found by name
  // in the sweep's table (which adds seeds).
  auto split = [](const std::string& text, const char* by) {
    std::vector<std::vector<std::string>> rows;
    for (absl::string_view line :
         absl::StrSplit(text, '\n', absl::SkipEmpty())) {
      rows.push_back(absl::StrSplit(absl::StripSuffix(line, "\r"),
                                    absl::ByAnyChar(by), absl::SkipEmpty()));
    }
    return rows;
  };
  const auto mine = split(local.out, " ");
  const auto theirs = split(swept.out, ",");
  ASSERT_EQ(mine.size(), 1u + 2 * 2 * 5) << local.out;
  ASSERT_EQ(theirs.size(), mine.size()) << swept.out;
  for (size_t c = 0; c < mine[0].size(); ++c) {
    const auto at = std::find(theirs[0].begin(), theirs[0].end(), mine[0][c]);
    ASSERT_NE(at, theirs[0].end()) << mine[0][c] << " in " << swept.out;
    const size_t col = static_cast<size_t>(at - theirs[0].begin());
    for (size_t r = 1; r < mine.size(); ++r) {
      EXPECT_EQ(std::stod(theirs[r][col]), std::stod(mine[r][c]))
          << mine[0][c] << " row " << r;
    }
  }
}

}  // namespace
}  // namespace tailsweep
