// Every mutating call delivered 1-5 times, the copies arriving out of order
// (later than the original, among other calls), leaves the database equal
// to delivering each once: metrics are keyed, completions and lease retries
// idempotent, and everything about a lease is fenced by its epoch.

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <random>

#include "coordinator/sqlite_db.h"
#include "coordinator/store.h"
#include "tests/testing/results.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

constexpr char kReplaySpec[] = R"(name: replay
grid:
  kernel: [softmax, quadratic, linear, log]
fixed:
  steps: 20
  warmup: 2
)";

using Call = std::function<void(Store&)>;

// The calls of a small sweep's life: leases, metrics, heartbeats, a
// completion, a failure, a checkpoint, a preemption and a re-lease.
std::vector<Call> Script(const SweepSpec& spec,
                         const std::vector<JobSpec>& jobs) {
  const std::string a = jobs[0].id, b = jobs[1].id, c = jobs[2].id;
  auto points = [](int from) {
    std::vector<MetricPoint> p;
    for (int s = from; s < from + 3; ++s) p.push_back({"loss", s, 1.0 / s});
    return p;
  };
  return {
      [=](Store& s) { s.SubmitSweep(spec, jobs).IgnoreError(); },
      [=](Store& s) { s.LeaseJobs("w1", 2, 5000, "w1/1").IgnoreError(); },
      [=](Store& s) { s.LeaseJobs("w2", 1, 5000, "w2/1").IgnoreError(); },
      [=](Store& s) { s.AddMetrics("w1", a, 1, points(1)).IgnoreError(); },
      [=](Store& s) { s.AddMetrics("w1", a, 1, points(4)).IgnoreError(); },
      [=](Store& s) { s.Heartbeat("w1", a, 1, 5000).IgnoreError(); },
      [=](Store& s) { s.AddMetrics("w2", c, 1, points(1)).IgnoreError(); },
      [=](Store& s) {
        s.RecordCheckpoint("w2", c, 1, {3, "c/1/step-3.pt", 10, "ab"})
            .IgnoreError();
      },
      [=](Store& s) {
        s.Complete("w1", a, 1, testing::TestResult(R"({"ratio_median": 0.5})"))
            .IgnoreError();
      },
      [=](Store& s) { s.Fail("w1", b, 1, "boom").IgnoreError(); },
      [=](Store& s) { s.Release("w2", c, 1, "preempted").IgnoreError(); },
      [=](Store& s) { s.LeaseJobs("w3", 1, 5000, "w3/1").IgnoreError(); },
      [=](Store& s) { s.AddMetrics("w3", c, 2, points(4)).IgnoreError(); },
      [=](Store& s) {
        s.Complete("w3", c, 2, testing::TestResult(R"({"ratio_median": 0.7})"))
            .IgnoreError();
      },
  };
}

// Everything the store holds, as text.
std::string Dump(const std::string& path) {
  auto db = sql::Db::Open(path);
  EXPECT_TRUE(db.ok());
  std::string out;
  for (const char* query :
       {"SELECT job_id, state, epoch, attempt, holder, lease_deadline_ms, "
        "not_before_ms, last_error FROM jobs ORDER BY job_id",
        "SELECT job_id, name, step, value FROM metrics ORDER BY 1, 2, 3",
        "SELECT job_id, result FROM results ORDER BY job_id",
        "SELECT job_id, epoch, kind, detail FROM events ORDER BY event_id",
        "SELECT job_id, step, file, epoch FROM checkpoints ORDER BY job_id",
        "SELECT sweep_id, job_id, cell, position FROM sweep_jobs ORDER BY 1, 2",
        "SELECT worker_id FROM workers ORDER BY 1"}) {
    auto st = (*db)->Prepare(query);
    EXPECT_TRUE(st.ok()) << st.status();
    while (st->Step().value()) {
      for (int c = 0;
           c < sqlite3_column_count(sqlite3_next_stmt((*db)->raw(), nullptr));
           ++c) {
        out += st->Text(c) + "|";
      }
      out += "\n";
    }
    out += "--\n";
  }
  return out;
}

TEST(Replay, DuplicatedAndReorderedCallsLeaveTheDatabaseAsOneDelivery) {
  const SweepSpec spec = ParseSweepSpec(kReplaySpec, "replay.yaml").value();
  const std::vector<JobSpec> jobs = ExpandSweep(spec).value();
  const std::vector<Call> script = Script(spec, jobs);
  const std::string dir = testing::MakeTempDir("tailsweep_replay_");
  ManualClock clock;

  std::string once;
  {
    auto store = Store::Open(dir + "/once.db", &clock).value();
    for (const Call& call : script) call(*store);
  }
  once = Dump(dir + "/once.db");
  ASSERT_NE(once.find("done"), std::string::npos);

  for (uint64_t seed = 1; seed <= 40; ++seed) {
    // Each call once in order, and 0-4 more copies of it later, anywhere.
    std::mt19937_64 rng(seed);
    std::vector<int> order;
    for (int i = 0; i < static_cast<int>(script.size()); ++i) {
      order.push_back(i);
    }
    for (int i = 0; i < static_cast<int>(script.size()); ++i) {
      const int copies = static_cast<int>(rng() % 5);
      for (int k = 0; k < copies; ++k) {
        const auto first = std::find(order.begin(), order.end(), i);
        const size_t after = (first - order.begin()) + 1;
        order.insert(order.begin() + after + rng() % (order.size() - after + 1),
                     i);
      }
    }
    const std::string path = dir + "/replayed-" + std::to_string(seed) + ".db";
    {
      auto store = Store::Open(path, &clock).value();
      for (int i : order) script[i](*store);
    }
    EXPECT_EQ(Dump(path), once)
        << "seed " << seed << ", " << order.size() << " deliveries";
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tailsweep
