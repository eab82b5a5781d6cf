// `tailsweep watch` as a user (or a script) runs it: while the sweep runs it
// shows the running jobs under its progress bar, and it exits non-zero when
// jobs failed, naming the command that says why.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "tests/testing/cluster.h"
#include "tests/testing/run_command.h"
#include "tests/testing/tiny_spec.h"

namespace tailsweep {
namespace {

class WatchE2E : public ::testing::Test, public testing::Cluster {
 protected:
  WatchE2E() : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_watch_") {}
};

TEST_F(WatchE2E, ShowsRunningJobsAndExitsNonZeroWhenJobsFailed) {
  // The log-kernel job crashes at once; the softmax one runs for a while.
  const std::string wrapper = dir_ + "/crash-log-tailsweep";
  std::ofstream(wrapper) << "#!/bin/sh\ncase \"$*\" in *kernel=log*) echo "
                            "boom >&2; exit 1;; esac\nexec "
                         << bin_ << "/tailsweep \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  StartCoordinator({"--max-attempts", "1"});
  StartWorker("w", {"--tailsweep-bin", wrapper});
  Submit(TinySpec("wa", "  kernel: [softmax, log]\n", {{"steps", "1500"}}));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) > 0 FROM metrics", 1, 60));
  const testing::CommandResult r = Cli("watch wa --interval 0.2");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("1 job(s) failed; see tailsweep jobs wa --state failed"),
            std::string::npos)
      << r.err;
  // A frame while it ran: the table's header and the softmax job's row.
  EXPECT_NE(r.err.find("spread_ratio"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("kernel=softmax"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("done 1, running 0, queued 0, failed 1"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace tailsweep
