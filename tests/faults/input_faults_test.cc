// Bad input from outside, on real processes (Reliability II, item 9):
// duplicate spec keys, results of the wrong shape, overlong ids and free
// text, a child's stderr that is not UTF-8, control characters on their way
// to a terminal, a 100k-job sweep read through the CLI. Preemption and
// shared sweeps: sharing_faults_test.cc.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "coordinator/store.h"
#include "tests/faults/input_fixture.h"
#include "tests/testing/results.h"

namespace tailsweep {
namespace {

using testing::CommandResult;
using testing::RunCommand;

// --- 9. Bad input ----------------------------------------------------------

TEST_F(InputFaults, DuplicateSpecKeysAreRefusedWithTheirPosition) {
  StartCoordinator();
  const std::string path = dir_ + "/dup.yaml";
  std::ofstream(path) << "name: dup\ngrid:\n  kernel: [log]\nfixed:\n  "
                         "steps: 10\n  lr: 0.001\n  steps: 20\n";
  const CommandResult local = Cli("submit " + path);
  EXPECT_EQ(local.exit_code, 2);
  EXPECT_NE(local.err.find(path + ":7:3: duplicate key 'steps' in 'fixed' "
                                  "(first at line 5, column 3)"),
            std::string::npos)
      << local.err;
  // The coordinator refuses it too (another client may not parse first).
  v1::SubmitSweepRequest req;
  req.set_spec_yaml(testing::ReadFile(path));
  req.set_source_name("dup.yaml");
  v1::SubmitSweepResponse resp;
  grpc::Status s;
  testing::WaitUntil(
      [&] {
        s = Stub().SubmitSweep(Context().get(), req, &resp);
        return s.error_code() != grpc::StatusCode::UNAVAILABLE;
      },
      testing::EventDeadline(), std::chrono::milliseconds(100));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("dup.yaml:7:3: duplicate key 'steps'"),
            std::string::npos);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM sweeps"), 0);
}

// result_json is checked against the job's kind when it arrives: a wrong
// shape is INVALID_ARGUMENT and leaves the lease live, so results keep
// reading (they once failed with UNKNOWN after a bad result was stored).
TEST_F(InputFaults, AResultOfTheWrongShapeIsInvalidArgument) {
  StartCoordinator();
  SubmitAs("a.yaml", TrainSpec("shape", "softmax", 20));
  const std::vector<v1::JobLease> leases = LeaseAs("tester", 1);
  ASSERT_EQ(leases.size(), 1u);
  for (const std::string& bad :
       {std::string(R"({"ratio_median": "high"})"), std::string("[1, 2]"),
        std::string("not json"),
        std::string(R"({"rows": [{"seam": 0.9, "n": 8, "index": 1.5}]})")}) {
    const grpc::Status s = Complete("tester", leases[0], bad);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
  }
  EXPECT_EQ(Query("SELECT COUNT(*) FROM results"), 0);
  const CommandResult results = Cli("results shape --format csv");
  EXPECT_EQ(results.exit_code, 0) << results.err;
  EXPECT_TRUE(Complete("tester", leases[0], testing::TestResult()).ok());
  EXPECT_EQ(Cli("results shape").exit_code, 0);
}

// Request ids and free text are length-limited before anything is touched.
TEST_F(InputFaults, OverlongIdsAndFreeTextAreInvalidArgument) {
  StartCoordinator();
  SubmitAs("a.yaml", TrainSpec("limits", "softmax", 20));
  v1::LeaseJobsRequest lease;
  lease.set_max_jobs(1);
  lease.set_lease_ms(60000);
  v1::LeaseJobsResponse leased;
  struct Id {
    std::string worker, request, field;
  };
  for (const Id& id :
       std::vector<Id>{{std::string(300, 'w'), "", "worker_id"},
                       {"w\x1b[2J", "", "worker_id"},
                       {"w", std::string(300, 'r'), "request_id"},
                       {"w", "r 1", "request_id"}}) {
    lease.set_worker_id(id.worker);
    lease.set_request_id(id.request);
    const grpc::Status s = Stub().LeaseJobs(Context().get(), lease, &leased);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << id.field;
    EXPECT_NE(s.error_message().find(id.field), std::string::npos)
        << s.error_message();
  }
  EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'leased'"), 0);
  const std::vector<v1::JobLease> leases = LeaseAs("w", 1);
  ASSERT_EQ(leases.size(), 1u);
  v1::FailJobRequest fail;
  fail.set_worker_id("w");
  fail.set_job_id(leases[0].job_id());
  fail.set_epoch(leases[0].epoch());
  fail.set_error(std::string(70 << 10, 'e'));
  v1::FailJobResponse failed;
  grpc::Status s = Stub().FailJob(Context().get(), fail, &failed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("error must be at most 65536 bytes"),
            std::string::npos)
      << s.error_message();
  fail.set_error("short");
  fail.set_stderr_tail(std::string(70 << 10, 't'));
  s = Stub().FailJob(Context().get(), fail, &failed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("stderr_tail must be at most"),
            std::string::npos);
  v1::ReleaseJobRequest release;
  release.set_worker_id("w");
  release.set_job_id(leases[0].job_id());
  release.set_epoch(leases[0].epoch());
  release.set_reason(std::string(2000, 'r'));
  v1::ReleaseJobResponse released;
  s = Stub().ReleaseJob(Context().get(), release, &released);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("reason must be at most 1024 bytes"),
            std::string::npos);
  // Nothing of it was taken: the lease is as it was.
  EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'leased' AND "
                  "attempt = 1"),
            1);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind <> 'leased'"), 0);
}

// A child whose stderr is not UTF-8 (a stray byte, a character cut short):
// its failure still arrives, with the bytes replaced. (proto3 strings must
// be UTF-8; the raw bytes made FailJob unparseable, so the report was lost
// and the lease expired instead.)
TEST_F(InputFaults, AFailureWhoseStderrIsNotUtf8IsStillReported) {
  const std::string wrapper = dir_ + "/garbled-tailsweep";
  std::ofstream(wrapper) << "#!/bin/sh\ncase \"$*\" in *\"lab train\"*) "
                            "printf '\\377 boom \\342\\202' >&2; exit 1;; "
                            "esac\nexec "
                         << bin_ << "/tailsweep-lab \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  StartCoordinator({"--max-attempts", "1"});
  // A lease that cannot lapse by accident: that the failure arrived, not
  // the lease's expiry, is what the test checks. (Were the report lost, the
  // lease would expire a minute on, and the test fail.)
  StartWorker("w", WithSteadyLease({"--tailsweep-bin", wrapper}));
  SubmitAs("a.yaml", TrainSpec("garbled", "softmax", 20));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'failed'", 1))
      << testing::ReadFile(dir_ + "/w.err");
  EXPECT_EQ(QueryText("SELECT last_error FROM jobs"),
            "exit code 1: \xef\xbf\xbd boom \xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'expired'"), 0);
  const CommandResult logs =
      Cli("logs " + QueryText("SELECT job_id FROM jobs"));
  EXPECT_EQ(logs.out, "\xef\xbf\xbd boom \xef\xbf\xbd\xef\xbf\xbd\n");
}

// A job's error and stderr tail carry terminal escapes (colour, a window
// title, a bell, a C1 CSI): every output of the CLI shows them escaped;
// `logs` keeps the tail's line breaks and tabs.
TEST_F(InputFaults, ControlCharactersNeverReachTheTerminal) {
  StartCoordinator({"--max-attempts", "1"});
  SubmitAs("a.yaml", TrainSpec("escapes", "softmax", 20));
  const std::vector<v1::JobLease> leases = LeaseAs("w", 1);
  ASSERT_EQ(leases.size(), 1u);
  v1::FailJobRequest fail;
  fail.set_worker_id("w");
  fail.set_job_id(leases[0].job_id());
  fail.set_epoch(leases[0].epoch());
  fail.set_error(
      "boom \x1b[31mred\x1b[0m\x07 \xc2\x9b"
      "2J");
  fail.set_stderr_tail("line1\n\x1b]0;pwned\x07line2\tend\n");
  v1::FailJobResponse failed;
  ASSERT_TRUE(Stub().FailJob(Context().get(), fail, &failed).ok());
  for (const char* format : {"table", "csv", "json"}) {
    const CommandResult jobs =
        Cli(absl::StrCat("jobs escapes --format ", format));
    EXPECT_EQ(jobs.exit_code, 0) << format << jobs.err;
    for (const char* raw : {"\x1b", "\x07", "\xc2\x9b"}) {
      EXPECT_EQ(jobs.out.find(raw), std::string::npos) << format;
    }
  }
  EXPECT_NE(Cli("jobs escapes")
                .out.find("boom \\x1b[31mred\\x1b[0m\\x07 "
                          "\\xc2\\x9b2J"),
            std::string::npos);
  EXPECT_NE(Cli("jobs escapes --format json").out.find("\\u001b[31mred"),
            std::string::npos);
  const CommandResult logs = Cli("logs " + leases[0].job_id());
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "line1\n\\x1b]0;pwned\\x07line2\tend\n");
  EXPECT_NE(logs.err.find("last error: boom \\x1b[31m"), std::string::npos)
      << logs.err;
  EXPECT_EQ(logs.err.find('\x1b'), std::string::npos);
  // A spec's own text (a key with an escape) comes back escaped as well.
  const std::string path = dir_ + "/evil.yaml";
  std::ofstream(path) << "name: evil\n\"\\e[31mred\": 1\ngrid:\n  kernel: "
                         "[log]\n";
  const CommandResult submit = Cli("submit " + path);
  EXPECT_EQ(submit.exit_code, 2);
  EXPECT_NE(submit.err.find("unknown top-level key '\\x1b[31mred'"),
            std::string::npos)
      << submit.err;
  EXPECT_EQ(submit.err.find('\x1b'), std::string::npos);
}

// The CLI reads a 100k-job sweep: `jobs` and `results` page through
// ListJobs and GetResults, no answer near the 4 MiB receive limit. The
// store is filled through its own API (and results through SQL), then a
// real coordinator serves it.
TEST_F(InputFaults, TheCliReadsA100kJobSweepPageByPage) {
  constexpr int kJobs = 100000;
  {
    SystemClock clock;
    auto store = Store::Open(dir_ + "/db", &clock);
    ASSERT_TRUE(store.ok()) << store.status();
    SweepSpec spec;
    spec.name = "big";
    std::vector<std::string> seeds;
    for (int i = 0; i < kJobs; ++i) seeds.push_back(absl::StrCat(i));
    spec.grid = {{"seed", seeds}};
    spec.fixed = {{"steps", "20"}, {"warmup", "2"}};
    auto jobs = ExpandSweep(spec);
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    auto added = (*store)->SubmitSweep(spec, *jobs);
    ASSERT_TRUE(added.ok()) << added.status();
    ASSERT_EQ(added->added, kJobs);
  }
  const std::string result = testing::TestResult(
      R"({"ratio_median": 0.75, "ratio_mean": 0.8, "ratio_ci_low": 0.5,
          "ratio_ci_high": 0.875})");
  std::ofstream(dir_ + "/fill.sql")
      << "UPDATE jobs SET state = 'done'; INSERT INTO results (job_id, "
         "result, completed_ms) SELECT job_id, '"
      << result << "', 0 FROM jobs;\n";
  const CommandResult filled =
      RunCommand("sqlite3 " + dir_ + "/db '.read " + dir_ + "/fill.sql'");
  ASSERT_EQ(filled.exit_code, 0) << filled.err;
  ASSERT_EQ(Query("SELECT COUNT(*) FROM results"), kJobs);
  StartCoordinator();
  ASSERT_TRUE(
      testing::WaitUntil([&] { return Cli("status big").exit_code == 0; }));

  auto timed = [&](const std::string& args) {
    const auto start = std::chrono::steady_clock::now();
    CommandResult r = Cli(args);
    std::fprintf(
        stderr, "tailsweep %s: %.1f s, %zu bytes\n", args.c_str(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count(),
        r.out.size());
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    return r;
  };
  const CommandResult csv = timed("jobs big --format csv");
  EXPECT_EQ(Count(csv.out, "\r\n"), kJobs + 1u);  // with the header
  EXPECT_NE(csv.out.find(",seed=99999,done,"), std::string::npos);
  EXPECT_EQ(Count(timed("jobs big --state done").out, "\n"), kJobs + 1u);
  const CommandResult per_seed = timed("results big --per-seed --format csv");
  EXPECT_EQ(Count(per_seed.out, "\r\n"), kJobs + 1u);
  // Grid order across pages: seed 0 first, seed 99999 last.
  const std::vector<std::string> records =
      absl::StrSplit(per_seed.out, "\r\n", absl::SkipEmpty());
  ASSERT_EQ(records.size(), kJobs + 1u);
  EXPECT_EQ(records[1].substr(0, 17), "0,1,1,0,0.75,0.8,");
  EXPECT_EQ(records.back().substr(0, 21), "99999,1,1,0,0.75,0.8,");
  const CommandResult over_seeds = timed("results big --format csv");
  EXPECT_NE(over_seeds.out.find("100000,100000,0,0.75,"), std::string::npos)
      << over_seeds.out;
  EXPECT_NE(timed("status big").out.find("100000 done"), std::string::npos);
}

}  // namespace
}  // namespace tailsweep
