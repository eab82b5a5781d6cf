// `tailsweep watch` as a user (or a script) runs it: while the sweep runs it
// shows the running jobs under its progress bar, and it exits non-zero when
// jobs failed, naming the command that says why.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "process/child_process.h"
#include "tests/testing/cluster.h"
#include "tests/testing/run_command.h"
#include "tests/testing/tiny_spec.h"
#include "tests/testing/wait.h"

namespace tailsweep {
namespace {

class WatchE2E : public ::testing::Test, public testing::Cluster {
 protected:
  WatchE2E() : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_watch_") {}
};

TEST_F(WatchE2E, ShowsRunningJobsAndExitsNonZeroWhenJobsFailed) {
  // The log-kernel job crashes at once. The softmax one trains, then its
  // process stays (and the job running) until the test writes `release`:
  // watch shows it running however fast it trained. The wait also ends
  // when the worker is gone (a failed test leaves no shell behind).
  const std::string wrapper = dir_ + "/crash-log-tailsweep";
  const std::string release = dir_ + "/release";
  std::ofstream(wrapper) << "#!/bin/sh\ncase \"$*\" in\n"
                         << "*kernel=log*) echo boom >&2; exit 1;;\n"
                         << "*kernel=softmax*) " << bin_
                         << "/tailsweep-lab \"$@\"; code=$?\n"
                         << "  while [ ! -e " << release
                         << " ] && kill -0 $PPID 2>/dev/null; do sleep 0.05; "
                            "done\n"
                         << "  exit $code;;\nesac\nexec " << bin_
                         << "/tailsweep-lab \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  StartCoordinator({"--max-attempts", "1"});
  // A long lease: with --max-attempts 1 a lapse would fail the softmax job.
  StartWorker("w", {"--tailsweep-bin", wrapper, "--lease-ms", kLongLeaseMs});
  Submit(TinySpec("wa", "  kernel: [softmax, log]\n", {{"steps", "20"}}));
  ChildProcess& watch = Start({bin_ + "/tailsweep", "watch", "wa", "--interval",
                               "0.2", "--coordinator", address_},
                              "watch");
  // A frame while it runs (printed at once, then every 5 s off a terminal):
  // the table's header and the softmax job's row.
  ASSERT_TRUE(WaitForLog("watch", "kernel=softmax"))
      << testing::ReadFile(dir_ + "/watch.err");
  std::ofstream(release) << "go\n";
  std::optional<int> exit;
  ASSERT_TRUE(testing::WaitUntil([&] {
    exit = watch.Poll();
    return exit.has_value();
  })) << testing::ReadFile(dir_ + "/watch.err");
  const std::string err = testing::ReadFile(dir_ + "/watch.err");
  EXPECT_EQ(*exit, 1) << err;
  EXPECT_NE(err.find("1 job(s) failed; see tailsweep jobs wa --state failed"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("spread_ratio"), std::string::npos) << err;
  EXPECT_NE(err.find("done 1, running 0, queued 0, failed 1"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace tailsweep
