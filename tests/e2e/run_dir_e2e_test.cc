// A run directory's coordinator moving: a requeued coordinator job may come
// back on another node, write a new address into the run directory, and
// resume from its database. The worker, started with --run-dir, must find
// it there (proto/coordinator_link.h) and finish the sweep. Real
// processes, TLS and a token as `tailsweep slurm up` sets them up; another
// port on loopback stands in for another node.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "core/schema/file_util.h"
#include "proto/run_dir.h"
#include "tests/testing/cluster.h"
#include "tests/testing/run_command.h"
#include "tests/testing/tiny_spec.h"
#include "tests/testing/wait.h"

namespace tailsweep {
namespace {

using testing::RunCommand;

class RunDirE2E : public ::testing::Test, public testing::Cluster {
 protected:
  RunDirE2E()
      : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_rundir_"),
        run_(dir_ + "/run") {
    std::filesystem::create_directories(run_);
    std::ofstream(RunPath(run_, kRunToken)) << "run-token\n";
    db_ = RunPath(run_, kRunDatabase);
  }

  // The coordinator as the Slurm job starts it, on `port`.
  ChildProcess& StartCoordinatorOn(int port, const std::string& log) {
    return Start(
        {bin_ + "/tailsweep-coordinator", "--db", RunPath(run_, kRunDatabase),
         "--data-dir", RunPath(run_, kRunDataDir), "--listen",
         absl::StrCat("127.0.0.1:", port), "--tls-cert",
         RunPath(run_, kRunServerCert), "--tls-key",
         RunPath(run_, kRunServerKey), "--token-file", RunPath(run_, kRunToken),
         "--lease-grace-ms", "1000"},
        log);
  }
  // Written atomically, as the coordinator job does.
  void WriteAddress(int port) {
    EXPECT_TRUE(WriteFileAtomic(RunPath(run_, kRunAddress),
                                absl::StrCat("127.0.0.1:", port, "\n"))
                    .ok());
  }

  const std::string run_;
};

TEST_F(RunDirE2E, AWorkerFollowsTheCoordinatorToItsNewAddress) {
  // One certificate serves as the run's CA and the node's certificate.
  const testing::CommandResult cert = RunCommand(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
      RunPath(run_, kRunServerKey) + " -out " + RunPath(run_, kRunServerCert) +
      " 2>&1 && cp " + RunPath(run_, kRunServerCert) + " " +
      RunPath(run_, kRunCaCert));
  ASSERT_EQ(cert.exit_code, 0) << cert.out;
  ChildProcess& first = StartCoordinatorOn(port_, "coordinator-a");
  WriteAddress(port_);
  std::ofstream(dir_ + "/spec.yaml")
      << TinySpec("moved", "  seed: [0, 1, 2, 3]\n",
                  {{"steps", "1200"}, {"checkpoint_every", "100"}});
  testing::CommandResult r;
  testing::WaitUntil(
      [&] {  // while the coordinator starts
        r = RunCommand(bin_ + "/tailsweep submit " + dir_ +
                       "/spec.yaml --run-dir " + run_);
        return r.exit_code == 0;
      },
      testing::EventDeadline(), std::chrono::milliseconds(100));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ChildProcess& worker =
      Start({bin_ + "/tailsweep-worker", "--run-dir", run_, "--work-dir",
             WorkDir("w"), "--slots-per-device", "2", "--threads-per-slot", "1",
             "--lease-ms", "4000", "--exit-when-idle"},
            "worker");
  // Mid-sweep: the first jobs are in, the next ones are running.
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) >= 1 FROM jobs WHERE state = 'done'", 1))
      << testing::ReadFile(dir_ + "/worker.err");
  // The node is gone; the job comes back on another one.
  first.Signal(SIGKILL);
  ASSERT_TRUE(testing::WaitUntil([&] { return first.Poll().has_value(); }));
  // With no coordinator no job can finish: the move is mid-sweep.
  ASSERT_LT(Query("SELECT COUNT(*) FROM jobs WHERE state = 'done'"), 4);
  const int moved = port_ + 1;
  StartCoordinatorOn(moved, "coordinator-b");
  WriteAddress(moved);
  // --exit-when-idle: the worker leaves once the moved coordinator has
  // nothing left for it.
  std::optional<int> exit;
  testing::WaitUntil([&] {
    exit = worker.Poll();
    return exit.has_value();
  });
  const std::string log = testing::ReadFile(dir_ + "/worker.err");
  ASSERT_TRUE(exit.has_value()) << log;
  EXPECT_EQ(*exit, 0) << log;
  EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'done'"), 4) << log;
  EXPECT_NE(log.find(absl::StrCat("moved: 127.0.0.1:", port_,
                                  " -> 127.0.0.1:", moved)),
            std::string::npos)
      << log;
}

}  // namespace
}  // namespace tailsweep
