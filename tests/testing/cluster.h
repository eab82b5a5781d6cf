#ifndef TAILSWEEP_TESTS_TESTING_CLUSTER_H_
#define TAILSWEEP_TESTS_TESTING_CLUSTER_H_

// A coordinator, workers and the CLI as real processes on loopback, in a
// temporary directory: what the end-to-end and fault tests drive. Every
// process started is SIGKILLed and the directory removed at the end.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "process/child_process.h"
#include "tests/testing/run_command.h"
#include "tests/testing/wait.h"

namespace tailsweep::testing {

class Cluster {
 public:
  Cluster(std::string bin_dir, const std::string& prefix)
      : bin_(std::move(bin_dir)), dir_(MakeTempDir(prefix)) {
    port_ = 20000 + (getpid() * 7 + counter_++ * 131) % 30000;
    address_ = absl::StrCat("127.0.0.1:", port_);
    db_ = dir_ + "/db";
  }
  ~Cluster() {
    for (auto& p : processes_) {
      p.Signal(SIGKILL);
      while (!p.Poll()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    // TAILSWEEP_KEEP_TEST_DIRS=1 keeps the directory (logs, database).
    if (std::getenv("TAILSWEEP_KEEP_TEST_DIRS") == nullptr) {
      std::filesystem::remove_all(dir_);
    } else {
      std::fprintf(stderr, "kept %s\n", dir_.c_str());
    }
  }

  // References stay valid (a deque).
  // `env`: variables added to (or replacing) this process's.
  ChildProcess& Start(const std::vector<std::string>& argv,
                      const std::string& log,
                      std::vector<std::string> env = {}) {
    env.insert(env.begin(), "OPENBLAS_NUM_THREADS=1");
    auto p = ChildProcess::Start(argv, env, dir_ + "/" + log + ".out",
                                 dir_ + "/" + log + ".err");
    EXPECT_TRUE(p.ok()) << p.status();
    processes_.push_back(std::move(*p));
    return processes_.back();
  }
  ChildProcess& StartCoordinator(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {bin_ + "/tailsweep-coordinator",
                                     "--db",
                                     dir_ + "/db",
                                     "--data-dir",
                                     dir_ + "/data",
                                     "--listen",
                                     address_};
    // Tests' steps take milliseconds: a short grace keeps expiry quick.
    if (std::find(extra.begin(), extra.end(), "--lease-grace-ms") ==
        extra.end()) {
      argv.insert(argv.end(), {"--lease-grace-ms", "1000"});
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    ChildProcess* coordinator = &Start(argv, "coordinator");
    if (coordinators_started_++ > 0) return *coordinator;
    // The first start only, before any client knows the address: a port
    // that another process holds (the pid-derived one can meet an
    // outgoing connection's, under a parallel suite) moves to another.
    for (int tries = 1; tries < 5; ++tries) {
      WaitUntil([&] {
        return coordinator->Poll().has_value() ||
               absl::StrContains(ReadFile(dir_ + "/coordinator.err"),
                                 "serving on");
      });
      if (!coordinator->Poll().has_value() ||
          !absl::StrContains(ReadFile(dir_ + "/coordinator.err"),
                             "cannot listen")) {
        break;
      }
      port_ = 20000 + (port_ - 20000 + 7919) % 30000;
      const std::string taken = address_;
      address_ = absl::StrCat("127.0.0.1:", port_);
      std::replace(argv.begin(), argv.end(), taken, address_);
      coordinator = &Start(argv, "coordinator");
    }
    return *coordinator;
  }
  // Each worker has its own work directory, as on separate machines: a
  // job resumes elsewhere only through the coordinator's checkpoints.
  // `address`: where it connects (default: the coordinator).
  ChildProcess& StartWorker(const std::string& name,
                            const std::vector<std::string>& extra = {},
                            const std::string& address = "",
                            const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv = {
        bin_ + "/tailsweep-worker", "--coordinator",
        address.empty() ? address_ : address, "--work-dir", WorkDir(name)};
    // Defaults a test may override (an option given twice is an error).
    for (const auto& [flag, value] :
         std::vector<std::pair<std::string, std::string>>{
             {"--slots-per-device", "2"},
             {"--threads-per-slot", "1"},
             {"--lease-ms", "4000"}}) {
      if (std::find(extra.begin(), extra.end(), flag) == extra.end()) {
        argv.insert(argv.end(), {flag, value});
      }
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Start(argv, name, env);
  }
  std::string WorkDir(const std::string& worker) const {
    return dir_ + "/work-" + worker;
  }
  // Live processes whose command line mentions `text`.
  int64_t ProcessesMentioning(const std::string& text) {
    // "[/]tmp/..." matches the path but not this pgrep's own shell.
    const CommandResult r = RunCommand("pgrep -f -c -- '[" + text.substr(0, 1) +
                                       "]" + text.substr(1) + "'");
    int64_t n = 0;
    return absl::SimpleAtoi(absl::StripAsciiWhitespace(r.out), &n) ? n : -1;
  }
  // When the coordinator last heard from a worker: the latest last_seen_ms
  // of `tailsweep workers` (ms since the epoch on the coordinator's wall
  // clock, this machine's), -1 before any. Idle polls are kept in the
  // service's memory, so this asks the service, not the database.
  int64_t LastPollMs() {
    const nlohmann::json doc =
        nlohmann::json::parse(Cli("workers --format json").out, nullptr, false);
    int64_t at = -1;
    if (!doc.is_array()) return at;
    for (const auto& w : doc) {
      at = std::max(at, w["last_seen_ms"].get<int64_t>());
    }
    return at;
  }
  // Waits until a worker's call reaches the coordinator after this one
  // begins. Its time is read before the coordinator reads the database, so
  // the lease call of an idle worker that it stamps later than now saw every
  // change committed before now: had a job been queued, it would have been
  // leased.
  bool WaitForAPollFromNow() {
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    return WaitUntil([&] { return LastPollMs() > now; });
  }
  CommandResult Cli(const std::string& args) {
    return RunCommand(bin_ + "/tailsweep " + args + " --coordinator " +
                      address_);
  }
  // Submits `spec`, retrying while the coordinator starts.
  void Submit(const std::string& spec) {
    std::ofstream(dir_ + "/spec.yaml") << spec;
    CommandResult last;
    if (WaitUntil(
            [&] {
              last = Cli("submit " + dir_ + "/spec.yaml");
              return last.exit_code == 0;
            },
            EventDeadline(), std::chrono::milliseconds(100))) {
      return;
    }
    ADD_FAILURE() << "could not submit: " << last.err;
  }
  // One number from the database (-1 when the answer is not one).
  int64_t Query(const std::string& sql) {
    const CommandResult r = RunCommand("sqlite3 " + db_ + " \"" + sql + "\"");
    int64_t v = -1;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(r.out), &v)) return -1;
    return v;
  }
  // One text answer from the database, without its surrounding whitespace.
  std::string QueryText(const std::string& sql) {
    return std::string(absl::StripAsciiWhitespace(
        RunCommand("sqlite3 " + db_ + " \"" + sql + "\"").out));
  }
  // Waits until `sql` returns `want` (tests/testing/wait.h).
  bool WaitFor(const std::string& sql, int64_t want) {
    return WaitUntil([&] { return Query(sql) == want; }, EventDeadline(),
                     std::chrono::milliseconds(100));
  }
  // Waits until the log `log` (as given to Start) has `text` in it.
  bool WaitForLog(const std::string& log, const std::string& text) {
    return WaitForText(dir_ + "/" + log + ".err", text);
  }
  // Waits for the dashboard's port in the log `log`: the coordinator prints
  // "dashboard on ... (HTTP port N)" once the gateway listens, which is
  // after its gRPC port answers. 0 if it never comes.
  int WaitForHttpPort(const std::string& log = "coordinator") {
    const std::string mark = "(HTTP port ";
    int port = 0;
    WaitUntil([&] {
      const std::string text = ReadFile(dir_ + "/" + log + ".err");
      const size_t at = text.find(mark);
      if (at == std::string::npos) return false;
      const size_t from = at + mark.size();
      const size_t end = text.find(')', from);
      return end != std::string::npos &&
             absl::SimpleAtoi(text.substr(from, end - from), &port) && port > 0;
    });
    return port;
  }
  // --lease-ms for a worker in a test that is not about leases (a lapse
  // leases the job again, and with --max-attempts 1 fails it): renewed every
  // 20 s, it lapses only if the worker is held back for over a minute, which
  // no load a test machine sees does. (As WithSteadyLease in
  // tests/faults/fault_fixture.h.)
  static constexpr char kLongLeaseMs[] = "60000";

  // `jobs` jobs have `per_job` loss points each: none lost, and none twice
  // (the key would refuse a second).
  void ExpectEveryPointOnce(int64_t jobs, int64_t per_job) {
    EXPECT_EQ(Query("SELECT COUNT(DISTINCT job_id) FROM metrics WHERE name = "
                    "'loss'"),
              jobs);
    for (const char* agg : {"MIN", "MAX"}) {
      EXPECT_EQ(Query(absl::StrCat("SELECT ", agg,
                                   "(c) FROM (SELECT COUNT(*) c FROM metrics "
                                   "WHERE name = 'loss' GROUP BY job_id)")),
                per_job)
          << agg;
    }
  }

 protected:
  static inline int counter_ = 0;
  int coordinators_started_ = 0;
  std::string bin_, dir_, address_;
  std::string db_;  // the database Query reads: StartCoordinator's
  int port_ = 0;
  std::deque<ChildProcess> processes_;
};

}  // namespace tailsweep::testing

#endif  // TAILSWEEP_TESTS_TESTING_CLUSTER_H_
