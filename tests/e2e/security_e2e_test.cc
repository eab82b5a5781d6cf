// Security end to end: TLS, bearer tokens, message size limits and the
// loopback default, against the real coordinator, worker and CLI.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "process/child_process.h"
#include "tests/testing/cluster.h"
#include "tests/testing/run_command.h"
#include "tests/testing/wait.h"

namespace tailsweep {
namespace {

using testing::RunCommand;

class SecurityE2E : public ::testing::Test, public testing::Cluster {
 protected:
  SecurityE2E() : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_security_") {
    std::ofstream(dir_ + "/token") << "correct-horse-battery\n";
    std::ofstream(dir_ + "/wrong") << "incorrect\n";
  }
  // Retries `args` while the coordinator starts.
  testing::CommandResult CliWhenUp(const std::string& args) {
    testing::CommandResult r;
    testing::WaitUntil(
        [&] {
          r = Cli(args);
          return r.err.find("unreachable") == std::string::npos;
        },
        testing::EventDeadline(), std::chrono::milliseconds(100));
    return r;
  }
};

TEST_F(SecurityE2E, TlsAndTokenGuardEveryCallAndAWorkerStillFinishesASweep) {
  const testing::CommandResult cert = RunCommand(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
      dir_ + "/key.pem -out " + dir_ + "/cert.pem");
  ASSERT_EQ(cert.exit_code, 0) << cert.err;
  Start({bin_ + "/tailsweep-coordinator", "--db", dir_ + "/db", "--data-dir",
         dir_ + "/data", "--listen", address_, "--tls-cert", dir_ + "/cert.pem",
         "--tls-key", dir_ + "/key.pem", "--token-file", dir_ + "/token",
         "--max-message-bytes", "2097152", "--http-listen", "127.0.0.1:0"},
        "coordinator");
  const std::string tls = " --tls-ca " + dir_ + "/cert.pem";
  const std::string good = tls + " --token-file " + dir_ + "/token";
  // Authenticated: the answer is about the (missing) sweep.
  testing::CommandResult r = CliWhenUp("status nosuch" + good);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no sweep 'nosuch'"), std::string::npos) << r.err;
  // The dashboard is HTTPS with the same certificate, and wants the token.
  // (Its port is logged once it listens, after the gRPC port answers.)
  const int port = WaitForHttpPort();
  ASSERT_GT(port, 0) << testing::ReadFile(dir_ + "/coordinator.err");
  const std::string https = absl::StrCat("https://127.0.0.1:", port);
  const std::string curl = "curl -s --cacert " + dir_ + "/cert.pem ";
  EXPECT_NE(
      RunCommand(curl + "-H 'Authorization: Bearer correct-horse-battery' " +
                 https + "/api/sweeps/nosuch")
          .out.find("no sweep 'nosuch'"),
      std::string::npos);
  EXPECT_NE(
      RunCommand(curl + https + "/api/sweeps").out.find("UNAUTHENTICATED"),
      std::string::npos);
  EXPECT_NE(RunCommand("curl -s -o /dev/null -w '%{http_code}' http" +
                       https.substr(5) + "/api/sweeps")
                .out,
            "200");  // plaintext never reaches the API
  // No token, a wrong token: UNAUTHENTICATED, and nothing more said.
  r = Cli("status nosuch" + tls);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("needs a token"), std::string::npos) << r.err;
  r = Cli("status nosuch" + tls + " --token-file " + dir_ + "/wrong");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("wrong token"), std::string::npos) << r.err;
  // Plaintext against the TLS port never gets through.
  r = Cli("status nosuch --token-file " + dir_ + "/token");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err.find("no sweep"), std::string::npos) << r.err;
  // A request over --max-message-bytes: RESOURCE_EXHAUSTED.
  const std::string spec = R"(name: sec
grid:
  kernel: [log]
fixed:
  n_points: 64
  d_model: 16
  heads: 2
  layers: 1
  steps: 20
  warmup: 3
  log_every: 5
  checkpoint_every: 10
  eval_instances: 4
  reference_trials: 4
)";
  std::ofstream(dir_ + "/big.yaml")
      << spec << "# " << std::string(3000000, 'x') << "\n";
  r = Cli("submit " + dir_ + "/big.yaml" + good);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("larger than max"), std::string::npos) << r.err;
  // The real thing, through TLS with the token.
  std::ofstream(dir_ + "/spec.yaml") << spec;
  r = Cli("submit " + dir_ + "/spec.yaml" + good);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Start({bin_ + "/tailsweep-worker", "--coordinator", address_,
         "--threads-per-slot", "1", "--work-dir", dir_ + "/work",
         "--exit-when-idle", "--tls-ca", dir_ + "/cert.pem", "--token-file",
         dir_ + "/token"},
        "worker");
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        return Cli("status sec --format json" + good).out.find("\"done\": 1") !=
               std::string::npos;
      },
      testing::EventDeadline(), std::chrono::milliseconds(100)))
      << testing::ReadFile(dir_ + "/worker.err");
}

// Is something listening on 127.0.0.1:port (IPv4, or IPv4-mapped IPv6 as
// gRPC binds it), and on any other address?
void Listeners(int port, bool* loopback, bool* other) {
  *loopback = *other = false;
  const std::string suffix = absl::StrFormat(":%04X", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      if (state != "0A" || local.size() < suffix.size() ||
          local.substr(local.size() - suffix.size()) != suffix) {
        continue;
      }
      const std::string host = local.substr(0, local.size() - suffix.size());
      const bool is_loopback = host == "0100007F" ||
                               host == "0000000000000000FFFF00000100007F" ||
                               host == "00000000000000000000000001000000";
      (is_loopback ? *loopback : *other) = true;
    }
  }
}

TEST_F(SecurityE2E, EachRoleDoesOnlyWhatItMayAndARevokedTokenStops) {
  std::ofstream(dir_ + "/read") << "read-1\nread-2\n";
  std::ofstream(dir_ + "/worker") << "worker-1\n";
  ChildProcess& coordinator = Start(
      {bin_ + "/tailsweep-coordinator", "--db", dir_ + "/db", "--data-dir",
       dir_ + "/data", "--listen", address_, "--token-file", dir_ + "/token",
       "--read-token-file", dir_ + "/read", "--worker-token-file",
       dir_ + "/worker", "--http-listen", "127.0.0.1:0"},
      "coordinator");
  ASSERT_TRUE(WaitForLog("coordinator", "tokens: 1 admin, 2 read, 1 worker"));
  std::ofstream(dir_ + "/read-token") << "read-1\n";
  std::ofstream(dir_ + "/worker-token") << "worker-1\n";
  std::ofstream(dir_ + "/spec.yaml")
      << "name: roles\nkind: command\ncommand: [\"true\"]\ngrid:\n  x: [1]\n";
  const auto as = [&](const std::string& who, const std::string& args) {
    return CliWhenUp(args + " --token-file " + dir_ + "/" + who);
  };
  // A read token reads, and cannot submit, cancel or resume.
  testing::CommandResult r = as("read-token", "status nosuch");
  EXPECT_NE(r.err.find("no sweep 'nosuch'"), std::string::npos) << r.err;
  for (const std::string& write :
       {"submit " + dir_ + "/spec.yaml", std::string("cancel roles"),
        std::string("resume roles")}) {
    r = as("read-token", write);
    EXPECT_NE(r.exit_code, 0) << write;
    EXPECT_NE(r.err.find("a read token may not"), std::string::npos)
        << write << ": " << r.err;
  }
  // A worker token cannot submit nor read results.
  r = as("worker-token", "submit " + dir_ + "/spec.yaml");
  EXPECT_NE(r.err.find("a worker token may not call SubmitSweep"),
            std::string::npos)
      << r.err;
  r = as("worker-token", "results roles");
  EXPECT_NE(r.err.find("a worker token may not"), std::string::npos) << r.err;
  // The admin submits; a worker with the worker token runs the sweep.
  r = as("token", "submit " + dir_ + "/spec.yaml");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  StartWorker("w",
              {"--exit-when-idle", "--token-file", dir_ + "/worker-token"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 1));
  // Every refusal is counted, by role and method.
  const int port = WaitForHttpPort();
  ASSERT_GT(port, 0);
  const std::string metrics =
      RunCommand(absl::StrCat("curl -s -H 'Authorization: Bearer read-2' "
                              "http://127.0.0.1:",
                              port, "/metrics"))
          .out;
  EXPECT_NE(metrics.find("tailsweep_auth_refused_total{method=\"SubmitSweep\","
                         "role=\"read\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("tailsweep_auth_refused_total{method=\"SubmitSweep\","
                         "role=\"worker\"} 1"),
            std::string::npos);
  // read-1's line deleted, SIGHUP: it is refused; read-2 still reads.
  std::ofstream(dir_ + "/read") << "read-2\n";
  coordinator.Signal(SIGHUP);
  ASSERT_TRUE(
      WaitForLog("coordinator", "token files reloaded: 1 admin, 1 read"));
  r = as("read-token", "status roles");
  EXPECT_NE(r.err.find("wrong token"), std::string::npos) << r.err;
}

TEST_F(SecurityE2E, TheDefaultListenAddressIsLoopback) {
  bool loopback, other;
  Listeners(50551, &loopback, &other);
  if (loopback || other) GTEST_SKIP() << "port 50551 is in use here";
  Start({bin_ + "/tailsweep-coordinator", "--db", dir_ + "/db", "--data-dir",
         dir_ + "/data"},
        "coordinator");
  // Until it listens, on whichever address; then where.
  testing::WaitUntil(
      [&] {
        Listeners(50551, &loopback, &other);
        return loopback || other;
      },
      testing::EventDeadline(), std::chrono::milliseconds(100));
  EXPECT_TRUE(loopback) << testing::ReadFile(dir_ + "/coordinator.err");
  EXPECT_FALSE(other);
}

}  // namespace
}  // namespace tailsweep
