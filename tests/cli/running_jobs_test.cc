// The running-jobs table of `tailsweep watch` (cli/running_jobs.h), fed by
// hand: newest step and values per job, the age once the step changed, and
// the row cap.

#include "cli/running_jobs.h"

#include <gtest/gtest.h>

namespace tailsweep::cli {
namespace {

using Clock = RunningJobs::Clock;

v1::JobInfo Running(const std::string& id, const std::string& worker) {
  v1::JobInfo j;
  j.set_job_id(id);
  j.set_holder(worker);
  v1::KeyValue* kv = j.add_cell();
  kv->set_key("kernel");
  kv->set_value("softmax");
  return j;
}

v1::MetricPoint Point(const std::string& name, int64_t step, double value) {
  v1::MetricPoint p;
  p.set_name(name);
  p.set_step(step);
  p.set_value(value);
  return p;
}

TEST(RunningJobs, NewestStepAndValuesAndTheAgeOnceTheStepMoved) {
  RunningJobs jobs;
  const Clock::time_point t0 = Clock::now();
  const std::vector<v1::JobInfo> running = {Running("aaaaaaaaaaaaXYZ", "w1"),
                                            Running("b", "w2")};
  jobs.Update(running,
              {{"aaaaaaaaaaaaXYZ",
                {Point("loss", 5, 0.5), Point("loss", 10, 0.25),
                 Point("spread_ratio", 10, 0.75)}}},
              t0);
  Table t = jobs.View(t0);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0],
            (std::vector<std::string>{"aaaaaaaaaaaa", "kernel=softmax", "w1",
                                      "10", "0.25", "0.75", "-"}));
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"b", "kernel=softmax", "w2",
                                                 "-", "-", "-", "-"}));
  // Only the new points come (step_min); the step moves at t0 + 1 s.
  jobs.Update(running, {{"aaaaaaaaaaaaXYZ", {Point("loss", 15, 0.125)}}},
              t0 + std::chrono::seconds(1));
  t = jobs.View(t0 + std::chrono::seconds(4));
  EXPECT_EQ(t.rows[0],
            (std::vector<std::string>{"aaaaaaaaaaaa", "kernel=softmax", "w1",
                                      "15", "0.125", "0.75", "3s ago"}));
  // A job no longer running leaves the table.
  jobs.Update({running[1]}, {}, t0 + std::chrono::seconds(5));
  EXPECT_EQ(jobs.View(t0).rows.size(), 1u);
}

TEST(RunningJobs, AnyProgramsMetricsShowLossFirstThenByName) {
  RunningJobs jobs;
  const Clock::time_point t0 = Clock::now();
  jobs.Update(
      {Running("c", "w1")},
      {{"c",
        {Point("acc", 3, 0.5), Point("acc", 4, 0.625), Point("layer/0", 4, 9),
         Point("loss", 4, 1.5), Point("zeta", 4, 2)}}},
      t0);
  Table t = jobs.View(t0);
  EXPECT_EQ(t.header, (std::vector<std::string>{"job", "cell", "worker", "step",
                                                "loss", "acc", "last point"}));
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"c", "kernel=softmax", "w1",
                                                 "4", "1.5", "0.625", "-"}));
  // A program without a loss: its own names.
  RunningJobs other;
  other.Update({Running("d", "w1")},
               {{"d", {Point("f1", 2, 0.25), Point("acc", 2, 0.75)}}}, t0);
  t = other.View(t0);
  EXPECT_EQ(t.header[4], "acc");
  EXPECT_EQ(t.header[5], "f1");
  EXPECT_EQ(t.rows[0][4], "0.75");
}

TEST(RunningJobs, AtMostMaxRowsThenHowManyMore) {
  RunningJobs jobs;
  std::vector<v1::JobInfo> running;
  for (int i = 0; i < 5; ++i)
    running.push_back(Running(std::to_string(i), "w"));
  jobs.Update(running, {}, Clock::now());
  const Table t = jobs.View(Clock::now(), 3);
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[3][0], "(2 more)");
}

}  // namespace
}  // namespace tailsweep::cli
