// Nothing a child starts outlives it: a process that left its process group
// with setsid and ignores SIGTERM, and a double-forked one, end once the
// child has exited, found by the attempt's marker or its cgroup.

#include "process/attempt_processes.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "process/child_process.h"
#include "tests/testing/run_command.h"
#include "tests/testing/wait.h"

namespace tailsweep {
namespace {

namespace fs = std::filesystem;

// Starts two leftovers and exits: one in a session of its own that ignores
// SIGTERM, one double-forked; each writes its pid into DIR first.
constexpr char kLeaver[] = R"(d=$1
setsid sh -c 'trap "" TERM; echo $$ > "$0/setsid.pid"; while :; do sleep 1; done' "$d" </dev/null >/dev/null 2>&1 &
sh -c 'sh -c "echo \$\$ > \"\$0/double.pid\"; exec sleep 1000" "$0" &' "$d"
while [ ! -s "$d/setsid.pid" ] || [ ! -s "$d/double.pid" ]; do sleep 0.05; done
)";

pid_t ReadPid(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

// Gone: no process, not even a zombie (a subreaper reaps its strays).
bool Gone(pid_t pid) { return !fs::exists("/proc/" + std::to_string(pid)); }

class AttemptProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(BecomeSubreaper().ok());
    dir_ = testing::MakeTempDir("tailsweep_attempt_");
    std::ofstream(dir_ + "/leaver.sh") << kLeaver;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the leaver in `group` to its end; the two leftovers' pids.
  std::vector<pid_t> RunLeaver(const AttemptGroup& group) {
    ChildProcessOptions options;
    options.process_group = true;
    options.attempt = group;
    options.end_grace_ms = 200;
    absl::StatusOr<ChildProcess> child = ChildProcess::Start(
        {"/bin/sh", dir_ + "/leaver.sh", dir_}, {}, "", "", options);
    EXPECT_TRUE(child.ok()) << child.status();
    if (!child.ok()) return {};
    const pid_t setsid_pid = WaitForPid("setsid.pid");
    const pid_t double_pid = WaitForPid("double.pid");
    std::optional<int> code;
    // The child exits at once; Poll says so only once both leftovers
    // are gone (the setsid one after its SIGTERM grace).
    EXPECT_TRUE(
        testing::WaitUntil([&] { return (code = child->Poll()).has_value(); }));
    EXPECT_EQ(code, 0);
    return {setsid_pid, double_pid};
  }
  pid_t WaitForPid(const std::string& name) {
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(testing::WaitUntil([&] { return ReadPid(path) != 0; })) << path;
    return ReadPid(path);
  }
  std::string dir_;
};

TEST_F(AttemptProcessesTest, LeftoversFoundByTheMarkerEndWithTheChild) {
  absl::StatusOr<AttemptGroup> group = NewAttemptGroup("");
  ASSERT_TRUE(group.ok()) << group.status();
  for (pid_t pid : RunLeaver(*group)) {
    EXPECT_TRUE(Gone(pid)) << pid;
  }
  EXPECT_TRUE(GroupProcesses(*group).empty());
}

TEST_F(AttemptProcessesTest, LeftoversInTheAttemptsCgroupEndWithTheChild) {
  std::string why;
  absl::StatusOr<std::string> root = AttemptCgroupRoot("auto", &why);
  ASSERT_TRUE(root.ok()) << root.status();
  if (root->empty()) GTEST_SKIP() << "no cgroup for attempts here: " << why;
  absl::StatusOr<AttemptGroup> group = NewAttemptGroup(*root);
  ASSERT_TRUE(group.ok()) << group.status();
  ASSERT_TRUE(fs::exists(group->cgroup));
  for (pid_t pid : RunLeaver(*group)) {
    EXPECT_TRUE(Gone(pid)) << pid;
  }
  EXPECT_FALSE(fs::exists(group->cgroup));  // removed once empty
}

TEST_F(AttemptProcessesTest, SigkillEndsTheWholeGroupAtOnce) {
  absl::StatusOr<AttemptGroup> group = NewAttemptGroup("");
  ASSERT_TRUE(group.ok());
  ChildProcessOptions options;
  options.process_group = true;
  options.attempt = *group;
  options.end_grace_ms = 3600 * 1000;  // SIGKILL must not wait for it
  absl::StatusOr<ChildProcess> child = ChildProcess::Start(
      {"/bin/sh", "-c", "sh " + dir_ + "/leaver.sh " + dir_ + "; sleep 1000"},
      {}, "", "", options);
  ASSERT_TRUE(child.ok());
  const pid_t setsid_pid = WaitForPid("setsid.pid");
  const pid_t double_pid = WaitForPid("double.pid");
  child->Signal(SIGKILL);
  std::optional<int> code;
  ASSERT_TRUE(
      testing::WaitUntil([&] { return (code = child->Poll()).has_value(); }));
  EXPECT_EQ(*code, 128 + SIGKILL);
  EXPECT_TRUE(Gone(setsid_pid));
  EXPECT_TRUE(Gone(double_pid));
}

TEST_F(AttemptProcessesTest, WhatAGoneWorkersAttemptLeftIsEndedByTheNext) {
  // A marker whose worker pid is no process: a worker killed with -9.
  pid_t gone = 0;
  if ((gone = fork()) == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  const std::string marker = absl::StrCat(gone, "-0-abc");
  absl::StatusOr<ChildProcess> stray =
      ChildProcess::Start({"/bin/sh", "-c", "trap '' TERM; exec sleep 4326.5"},
                          {absl::StrCat(kAttemptEnv, "=", marker)}, "", "");
  ASSERT_TRUE(stray.ok());
  ASSERT_TRUE(testing::WaitUntil([&] {
    return !GroupProcesses({marker, ""}).empty();
  }));
  EXPECT_GE(EndStaleAttempts(""), 1);
  std::optional<int> code;
  ASSERT_TRUE(
      testing::WaitUntil([&] { return (code = stray->Poll()).has_value(); }));
  EXPECT_EQ(*code, 128 + SIGKILL);
}

TEST(AttemptCgroupRootTest, ADirectoryThatIsNoCgroupIsRefusedSayingWhy) {
  absl::StatusOr<std::string> root = AttemptCgroupRoot("/tmp");
  ASSERT_FALSE(root.ok());
  EXPECT_NE(std::string(root.status().message()).find("not a cgroup v2"),
            std::string::npos)
      << root.status();
  absl::StatusOr<std::string> off = AttemptCgroupRoot("off");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(*off, "");
}

}  // namespace
}  // namespace tailsweep
