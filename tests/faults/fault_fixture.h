#ifndef TAILSWEEP_TESTS_FAULTS_FAULT_FIXTURE_H_
#define TAILSWEEP_TESTS_FAULTS_FAULT_FIXTURE_H_

// What the fault tests share: a small train sweep, a cluster of real
// processes (tests/testing/cluster.h) that checks results against clean
// runs, and the same with a fault proxy between worker and coordinator.
// They wait for events (tests/testing/wait.h), never for a guessed time;
// a fault may come at a random moment, but what it needs first (a job half
// done, a checkpoint stored) is waited for as an event, in steps or states.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "process/child_process.h"
#include "tests/faults/fault_proxy.h"
#include "tests/testing/cluster.h"
#include "tests/testing/tiny_spec.h"
#include "tests/testing/wait.h"

namespace tailsweep {

using testing::RunCommand;

// Rounds of the random-kill tests: 3, or 20 with `fault_test --long`.
inline int rounds = 3;
// Minutes of the soak (soak_test.cc): 3, or `fault_test --soak MINUTES`.
inline double soak_minutes = 3;

// `cells` cells (kernels) of `steps` steps.
inline std::string Spec(const std::string& name, int steps, int cells = 2,
                        int log_every = 5) {
  const char* kernels[] = {"softmax", "log", "linear", "quadratic"};
  std::string grid;
  for (int i = 0; i < cells; ++i) {
    absl::StrAppend(&grid, i ? ", " : "", kernels[i]);
  }
  return TinySpec(
      name, absl::StrCat("  kernel: [", grid, "]\n"),
      {{"steps", absl::StrCat(steps)}, {"log_every", absl::StrCat(log_every)}});
}

// Flags for a worker whose leases must never lapse by accident: a test that
// counts leases or attempts, or asserts that none expired, and is not about
// lapsing, gives its worker a lease of a minute (Cluster::kLongLeaseMs),
// renewed every 20 s, which no load a test machine sees holds back for the
// 61 s (the coordinator's grace included) an expiry would take. Tests about
// lapsing give short ones.
inline std::vector<std::string> WithSteadyLease(
    std::vector<std::string> flags = {}) {
  flags.insert(flags.end(), {"--lease-ms", testing::Cluster::kLongLeaseMs});
  return flags;
}

// Waits until `p`, signalled, has exited (and reaps it).
inline bool Reaped(ChildProcess& p) {
  return testing::WaitUntil([&] { return p.Poll().has_value(); },
                            testing::EventDeadline(),
                            std::chrono::milliseconds(10));
}

// SQL: whether `column` (a lease's holder, a 'leased' event's detail) is
// `worker`'s id, HOST-PID-HEX10 (UniqueWorkerId, worker/worker_main.cc).
inline std::string IsWorker(const std::string& column,
                            const ChildProcess& worker) {
  return absl::StrCat(column, " LIKE '%-", worker.pid(), "-__________'");
}

class FaultSuite : public ::testing::Test, public testing::Cluster {
 protected:
  FaultSuite() : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_faults_") {}

  // How many times `text` is in the log `log` (as given to Start).
  int64_t LogCount(const std::string& log, const std::string& text) {
    const std::string all = testing::ReadFile(dir_ + "/" + log + ".err");
    int64_t n = 0;
    for (size_t at = all.find(text); at != std::string::npos;
         at = all.find(text, at + text.size())) {
      ++n;
    }
    return n;
  }
  // Waits until `text` is in the log `log` more than `than` times: a line
  // logged after the count `than` was taken.
  bool WaitForLogCount(const std::string& log, const std::string& text,
                       int64_t than) {
    return testing::WaitUntil([&] { return LogCount(log, text) > than; });
  }
  // Waits until `sql`, a count that only grows (jobs finished), reaches
  // `want`. Each step is an event: the deadline runs from the last time the
  // count grew, so a wait on many jobs is not bounded by a guess at how
  // long all of them take.
  bool WaitForGrowingCount(const std::string& sql, int64_t want) {
    int64_t last = Query(sql);
    while (last < want) {
      int64_t now = last;
      if (!testing::WaitUntil(
              [&] {
                now = Query(sql);
                return now != last;
              },
              testing::EventDeadline(), std::chrono::milliseconds(100))) {
        return false;
      }
      last = now;
    }
    return last == want;
  }

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
          RunCommand(bin_ + "/tailsweep-lab --threads 1 lab train" + sets +
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
  // Every job id in the database.
  std::vector<std::string> JobIds() {
    const testing::CommandResult r =
        RunCommand("sqlite3 " + dir_ + "/db \"SELECT job_id FROM jobs\"");
    std::vector<std::string> ids;
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line)) ids.push_back(line);
    return ids;
  }

  // One run per stored curve, for each done job: the stored result says it
  // resumed from step k and was completed under epoch E (its `done`
  // event); every stored point past k is E's, there are steps / log_every
  // loss points in all, and where one work directory holds that attempt's
  // files (a done result.json resumed from k), its metrics.jsonl lines past
  // k equal the stored loss and step_seconds points (the step's wall time
  // differs between any two runs even where the numbers do not, so a splice
  // cannot hide).
  void ExpectStoredCurvesAreTheFinalAttempts(
      const std::vector<std::string>& workers) {
    int checked = 0, compared = 0;
    for (const std::string& job : JobIds()) {
      const nlohmann::json result = nlohmann::json::parse(
          RunCommand(absl::StrCat("sqlite3 ", dir_,
                                  "/db \"SELECT result FROM results WHERE "
                                  "job_id = '",
                                  job, "'\""))
              .out,
          nullptr, false);
      ASSERT_TRUE(result.is_object()) << "job " << job << ": no result";
      const int64_t k = result["resumed_from_step"].get<int64_t>();
      const int64_t epoch = Query(absl::StrCat(
          "SELECT epoch FROM events WHERE kind = 'done' AND job_id = '", job,
          "'"));
      EXPECT_EQ(
          Query(absl::StrCat("SELECT COUNT(*) FROM metrics WHERE "
                             "job_id = '",
                             job, "' AND step > ", k, " AND epoch != ", epoch)),
          0)
          << "job " << job << ": points past " << k << " not of epoch "
          << epoch;
      const int64_t steps = result["config"]["steps"].get<int64_t>();
      const int64_t every = result["config"]["log_every"].get<int64_t>();
      EXPECT_EQ(Query(absl::StrCat("SELECT COUNT(*) FROM metrics WHERE "
                                   "job_id = '",
                                   job, "' AND name = 'loss'")),
                steps / every)
          << "job " << job;
      ++checked;
      std::vector<std::string> dirs;
      for (const std::string& w : workers) {
        const std::string d = WorkDir(w) + "/" + job;
        const nlohmann::json r = nlohmann::json::parse(
            testing::ReadFile(d + "/result.json"), nullptr, false);
        if (r.is_object() && r.value("stopped", true) == false &&
            r.value("resumed_from_step", int64_t{-1}) == k) {
          dirs.push_back(d);
        }
      }
      if (dirs.size() != 1) continue;  // which one completed is not known
      for (const std::string metric : {"loss", "step_seconds"}) {
        std::map<int64_t, double> own;
        std::istringstream lines(testing::ReadFile(dirs[0] + "/metrics.jsonl"));
        std::string line;
        while (std::getline(lines, line)) {
          const nlohmann::json m = nlohmann::json::parse(line, nullptr, false);
          if (!m.is_object() || m["step"].get<int64_t>() <= k) continue;
          own[m["step"].get<int64_t>()] = m[metric].get<double>();
        }
        // Read back as users do (numbers print exactly).
        const nlohmann::json stored = nlohmann::json::parse(
            Cli("curves " + job + " --metric " + metric + " --format json").out,
            nullptr, false);
        std::map<int64_t, double> kept;
        if (stored.is_array()) {
          for (const auto& p : stored) {
            const int64_t step = p["step"].get<int64_t>();
            if (step > k) kept[step] = p["value"].get<double>();
          }
        }
        EXPECT_EQ(kept, own) << "job " << job << ", " << metric << " past " << k
                             << " (" << dirs[0] << ")";
      }
      ++compared;
    }
    EXPECT_GT(checked, 0);
    EXPECT_GT(compared, 0);
  }
  std::mt19937_64 rng_{20261201};
};

// Samples, every 100 ms on its own thread, how many live `lab train`
// processes each job has (any worker of one test: one `ps` a sample, lines
// naming `root`, the test's directory; tests run side by side issue the
// same job ids), and keeps the largest count seen and what `ps` showed the
// first time one ran twice.
class LiveRunSampler {
 public:
  LiveRunSampler(std::string root, std::vector<std::string> jobs)
      : root_(std::move(root)) {
    AddJobs(std::move(jobs));
    thread_ = std::thread([this] {
      while (!stop_) {
        Sample();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  ~LiveRunSampler() { Stop(); }
  void AddJobs(std::vector<std::string> jobs) {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::string& j : jobs) jobs_.insert(std::move(j));
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int64_t most() {
    std::lock_guard<std::mutex> lock(mu_);
    return most_;
  }
  int64_t samples() {
    std::lock_guard<std::mutex> lock(mu_);
    return samples_;
  }
  // Waits until a whole sample has been taken after this call began (the
  // one under way may have begun before it: the one after it did not).
  bool WaitForAFreshSample() {
    const int64_t from = samples();
    return testing::WaitUntil([&] { return samples() >= from + 2; });
  }
  // The processes of the first sample that saw a job run twice, or else of
  // the last sample that saw any.
  std::string twice() {
    std::lock_guard<std::mutex> lock(mu_);
    return absl::StrCat(jobs_.size(), " jobs watched; ",
                        twice_.empty() ? "last seen:\n" + last_ : twice_);
  }

 private:
  void Sample() {
    // Zombies (exited, not yet reaped) show as <defunct>: not live.
    const std::string ps =
        testing::RunCommand("(ps -ww -eo stat,args | grep '[l]ab train')").out;
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, int64_t> runs;
    std::istringstream lines(ps);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.empty() || line[0] == 'Z') continue;
      if (line.find(root_) == std::string::npos) continue;
      for (const std::string& job : jobs_) {
        if (line.find(job) != std::string::npos) ++runs[job];
      }
    }
    for (const auto& [job, n] : runs) {
      if (n > most_) most_ = n;
      if (n > 1 && twice_.empty()) twice_ = ps;
    }
    if (!ps.empty()) last_ = ps;
    ++samples_;
  }

  const std::string root_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::set<std::string> jobs_;
  int64_t most_ = 0;
  int64_t samples_ = 0;
  std::string twice_, last_;
  std::thread thread_;
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
