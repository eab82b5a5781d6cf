// Issue 36 with real processes: `kind: command` sweeps of shell-script
// children through a real coordinator and worker - metrics of any name,
// kill -9 and resume from a checkpoint directory, the preempt exit code, a
// child that ignores SIGTERM, a grandchild left behind, a program that
// cannot run, garbage and huge metric lines, a child that logs nothing.

#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "process/attempt_processes.h"
#include "tests/testing/cluster.h"
#include "tests/testing/wait.h"

namespace tailsweep {
namespace {

using nlohmann::json;

class CommandE2E : public ::testing::Test, public testing::Cluster {
 protected:
  CommandE2E() : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_command_") {}

  // Writes an executable script `name` into the test directory.
  void Script(const std::string& name, const std::string& body) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    chmod(path.c_str(), 0755);
  }
  // A command sweep of one job running `command` (a flow list) in the
  // test directory.
  std::string Spec(const std::string& name, const std::string& command,
                   const std::string& extra = "") {
    return absl::StrCat("name: ", name, "\nkind: command\ncommand: ", command,
                        "\n", extra, "grid:\n  x: [1]\n");
  }
  // A job that leaves a process in a session of its own that ignores SIGTERM,
  // and a double-forked one: the job is done only once both have ended, found
  // by `cgroup` (the worker's --cgroup).
  void LeaversEndWithTheirJob(const std::string& cgroup) {
    // Sleeps of their own per variant: the two variants may run at once.
    const std::string lone = cgroup == "off" ? "4324.5" : "4328.5";
    const std::string orphan = cgroup == "off" ? "4325.5" : "4329.5";
    Script("leaver.sh",
           absl::StrCat("setsid sh -c 'trap \"\" TERM; exec sleep ", lone,
                        "' </dev/null >/dev/null 2>&1 &\n"
                        "sh -c 'sleep ",
                        orphan,
                        " &' </dev/null >/dev/null 2>&1\n"
                        "exit 0\n"));
    StartCoordinator();
    Submit(Spec("leaver", "[./leaver.sh]"));
    StartWorker("w", {"--exit-when-idle", "--cgroup", cgroup});
    ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 1));
    // Not a moment later: the job was not done while they ran.
    EXPECT_EQ(ProcessesMentioning("sleep " + lone), 0);
    EXPECT_EQ(ProcessesMentioning("sleep " + orphan), 0);
  }
  int64_t JobCount(const std::string& state) {
    return Query("SELECT COUNT(*) FROM jobs WHERE state = '" + state + "'");
  }
};

TEST_F(CommandE2E, AChildWithThreeMetricsGivesCurvesAndATable) {
  Script("three.sh",
         "i=1\nwhile [ $i -le 5 ]; do\n"
         "  echo \"{\\\"step\\\": $i, \\\"loss\\\": $i, \\\"acc\\\": 0.5, "
         "\\\"my/own\\\": -$i}\" >> \"$TAILSWEEP_METRICS_FILE\"\n"
         "  i=$((i+1))\ndone\n");
  StartCoordinator();
  Submit(Spec("three", "[./three.sh, \"${args}\"]"));
  StartWorker("w", {"--exit-when-idle"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 1));
  EXPECT_EQ(Query("SELECT COUNT(*) FROM metrics"), 15);
  EXPECT_EQ(Query("SELECT COUNT(DISTINCT name) FROM metrics"), 3);
  EXPECT_EQ(QueryText("SELECT value FROM metrics WHERE name = 'my/own' AND "
                      "step = 5"),
            "-5.0");
  const testing::CommandResult table = Cli("results three");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  for (const char* column : {"acc", "loss", "my/own"}) {
    EXPECT_NE(table.out.find(column), std::string::npos) << table.out;
  }
  const testing::CommandResult curve =
      Cli("curves three --metric my/own --format csv");
  EXPECT_NE(curve.out.find("-5"), std::string::npos) << curve.out << curve.err;
}

TEST_F(CommandE2E, KillNineThenResumeFromTheCheckpointDirectoryWithOneCurve) {
  // Steps 1..20, a checkpoint directory every 5; the first attempt is
  // killed (-9) right after step 12, the next resumes from step-10/.
  Script("resume.sh",
         "start=$TAILSWEEP_RESUME_STEP\n"
         "if [ \"$start\" -gt 0 ]; then\n"
         "  test -f \"$TAILSWEEP_CHECKPOINT_DIR/step-$start/state\" || exit 9\n"
         "  echo resumed-from-$start >&2\nfi\n"
         "i=$((start+1))\nwhile [ $i -le 20 ]; do\n"
         "  echo \"{\\\"step\\\": $i, \\\"loss\\\": $i}\" >> "
         "\"$TAILSWEEP_METRICS_FILE\"\n"
         "  if [ $((i % 5)) -eq 0 ]; then\n"
         "    d=\"$TAILSWEEP_CHECKPOINT_DIR/step-$i\"; mkdir -p \"$d\"\n"
         "    echo $i > \"$d/state\"; touch \"$d/COMPLETE\"\n  fi\n"
         "  if [ $i -eq 12 ] && [ ! -f ../killed ]; then touch ../killed; "
         "kill -9 $$; fi\n"
         "  i=$((i+1))\ndone\n");
  std::filesystem::create_directories(dir_ + "/sub");
  std::filesystem::copy(dir_ + "/resume.sh", dir_ + "/sub/resume.sh");
  StartCoordinator();
  Submit(Spec("resume", "[./resume.sh]", "workdir: sub\n"));
  StartWorker("w", {"--exit-when-idle"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 1))
      << QueryText("SELECT last_error FROM jobs");
  // One run per step, 1..20, each once; the steps past the checkpoint are
  // the second attempt's.
  EXPECT_EQ(Query("SELECT COUNT(*) FROM metrics WHERE name = 'loss'"), 20);
  EXPECT_EQ(Query("SELECT SUM(step) FROM metrics WHERE name = 'loss'"), 210);
  EXPECT_EQ(Query("SELECT SUM(value = step) FROM metrics"), 20);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM metrics WHERE step > 10 AND epoch = 2"),
            10);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'failed'"), 1);
  const std::string id = QueryText("SELECT job_id FROM jobs");
  EXPECT_NE(Cli("logs " + id).out.find("resumed-from-10"), std::string::npos);
  // The result says where the last attempt resumed.
  const json result =
      json::parse(QueryText("SELECT result FROM results"), nullptr, false);
  EXPECT_EQ(result["resumed_from_step"], 10) << result.dump();
  EXPECT_EQ(result["summary"]["loss"]["points"], 20) << result.dump();
}

TEST_F(CommandE2E, AnyJobsCheckpointComesOffTheCoordinatorAsATar) {
  // Steps 1..20, a checkpoint directory every 5 with a nested file.
  Script("ck.sh",
         "i=1\nwhile [ $i -le 20 ]; do\n"
         "  echo \"{\\\"step\\\": $i, \\\"loss\\\": $i}\" >> "
         "\"$TAILSWEEP_METRICS_FILE\"\n"
         "  if [ $((i % 5)) -eq 0 ]; then\n"
         "    d=\"$TAILSWEEP_CHECKPOINT_DIR/step-$i\"; mkdir -p \"$d/sub\"\n"
         "    echo $i > \"$d/sub/state\"; touch \"$d/COMPLETE\"; sleep 0.3\n"
         "  fi\n  i=$((i+1))\ndone\n");
  StartCoordinator();
  Submit(Spec("ck", "[./ck.sh]"));
  StartWorker("w", {"--exit-when-idle"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 1))
      << QueryText("SELECT last_error FROM jobs");
  ASSERT_TRUE(WaitFor("SELECT MAX(step) FROM checkpoints", 20));
  const std::string id = QueryText("SELECT job_id FROM jobs").substr(0, 10);
  // The newest, unpacked where --out says.
  testing::CommandResult got =
      Cli("checkpoint " + id + " --out " + dir_ + "/got");
  ASSERT_EQ(got.exit_code, 0) << got.err;
  std::ifstream state(dir_ + "/got/step-20/sub/state");
  std::string text;
  state >> text;
  EXPECT_EQ(text, "20");
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/got/step-20/COMPLETE"));
  // The list names the steps kept (the worker uploads the newest it sees:
  // 20 and one before it); the older one as the tar it travels as, which
  // tar opens.
  testing::CommandResult list =
      Cli("checkpoint " + id + " --list --format json");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const json kept = json::parse(list.out, nullptr, false)["checkpoints"];
  ASSERT_EQ(kept.size(), 2u) << list.out;
  EXPECT_EQ(kept[0]["step"], 20);
  const std::string older = kept[1]["step"].dump();
  got = Cli("checkpoint " + id + " --step " + older + " --tar --out " + dir_ +
            "/tar");
  ASSERT_EQ(got.exit_code, 0) << got.err;
  EXPECT_EQ(std::system(absl::StrCat("cd ", dir_, "/tar && tar -xf step-*.pt ",
                                     "&& grep -qx ", older, " step-", older,
                                     "/sub/state")
                            .c_str()),
            0);
  // A step not kept: exit 2, naming those that are.
  got = Cli("checkpoint " + id + " --step 3 --out " + dir_ + "/none");
  EXPECT_EQ(got.exit_code, 2);
  EXPECT_NE(got.err.find("steps kept: 20, " + older), std::string::npos)
      << got.err;
  EXPECT_NE(Cli("checkpoint " + id).err.find("--out"), std::string::npos);
}

TEST_F(CommandE2E, WholeLogsAndArtifactsLeaveTheNode) {
  // 3,000 lines of stdout (a print() per step), plots, a CSV, a file over
  // the artifacts cap, and links that reach out of the job directory.
  Script("outs.sh",
         "cd \"$TAILSWEEP_JOB_DIR\"\n"
         "i=1\nwhile [ $i -le 3000 ]; do echo \"step $i: loss=$i\"; "
         "i=$((i+1)); done\n"
         "echo progress >&2\n"
         "mkdir -p plots sub\nprintf 'PNG\\0one' > plots/a.png\n"
         "printf 'PNG\\0two' > plots/b.png\necho 'x,y' > predictions.csv\n"
         "head -c 2200000 /dev/zero > big.bin\n"
         "ln -s /etc/passwd plots/evil.png\nln -s /etc sub/etc\n");
  StartCoordinator();
  Submit(Spec("outs", "[./outs.sh]",
              "artifacts: [plots/*.png, predictions.csv, big.bin, "
              "sub/etc/passwd]\nartifacts_max_mib: 2\n"));
  StartWorker("w", {"--exit-when-idle"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 1))
      << QueryText("SELECT last_error FROM jobs");
  const std::string id = QueryText("SELECT job_id FROM jobs").substr(0, 10);
  std::string expected;
  for (int i = 1; i <= 3000; ++i) {
    absl::StrAppend(&expected, "step ", i, ": loss=", i, "\n");
  }
  testing::CommandResult out = Cli("logs " + id + " --stdout");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out, expected);  // byte-exact, though stored compressed
  out = Cli("logs " + id + " --stderr");
  EXPECT_NE(out.out.find("progress\n"), std::string::npos) << out.out;
  // The file over the cap is named, with its size, in the job's log.
  EXPECT_NE(out.out.find("artifact big.bin (2.2 MB) not uploaded"),
            std::string::npos)
      << out.out;
  // And in `tailsweep jobs`, under the table; the job is done all the same.
  out = Cli("jobs outs");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_NE(out.out.find("not kept"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find(": artifact big.bin (2.2 MB) not uploaded"),
            std::string::npos)
      << out.out;
  // Only regular files inside the job directory; the links stay behind.
  out = Cli("artifacts " + id + " --format json");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  std::vector<std::string> names;
  const json listed = json::parse(out.out, nullptr, false);
  for (const json& a : listed["artifacts"]) {
    names.push_back(a["name"]);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"plots/a.png", "plots/b.png",
                                             "predictions.csv"}))
      << out.out;
  out = Cli("artifacts " + id + " --out " + dir_ + "/got");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  std::ifstream got(dir_ + "/got/plots/b.png", std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(got), {}),
            std::string("PNG\0two", 7));
}

TEST_F(CommandE2E, KeepBestStoresTheDipAndResumeStillTakesTheLast) {
  // loss = |step - 10| + 1: it dips at step 10 and rises; a checkpoint
  // every 5 steps; the first attempt is killed (-9) after step 17, the
  // second resumes from the newest (15), not the best (10).
  Script("dip.sh",
         "start=$TAILSWEEP_RESUME_STEP\necho \"resumed-from-$start\"\n"
         "i=$((start+1))\nwhile [ $i -le 20 ]; do\n"
         "  d=$((i - 10)); [ $d -lt 0 ] && d=$((-d))\n"
         "  echo \"{\\\"step\\\": $i, \\\"loss\\\": $((d + 1))}\" >> "
         "\"$TAILSWEEP_METRICS_FILE\"\n"
         "  if [ $((i % 5)) -eq 0 ]; then\n"
         "    c=\"$TAILSWEEP_CHECKPOINT_DIR/step-$i\"; mkdir -p \"$c\"\n"
         "    echo $i > \"$c/state\"; touch \"$c/COMPLETE\"; sleep 0.4\n"
         "  fi\n"
         "  if [ $i -eq 17 ] && [ ! -f killed ]; then touch killed; "
         "kill -9 $$; fi\n"
         "  i=$((i+1))\ndone\n");
  StartCoordinator();
  Submit(Spec("dip", "[./dip.sh]",
              "checkpoints: {keep: best, metric: loss, goal: minimize}\n"));
  StartWorker("w", {"--exit-when-idle"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 1))
      << QueryText("SELECT last_error FROM jobs");
  EXPECT_EQ(QueryText("SELECT step FROM kept_checkpoints"), "10");
  const std::string id = QueryText("SELECT job_id FROM jobs").substr(0, 10);
  testing::CommandResult out = Cli("logs " + id + " --stdout");
  EXPECT_NE(out.out.find("resumed-from-15"), std::string::npos) << out.out;
  // `jobs` and the checkpoint list name the best step; it comes down.
  out = Cli("jobs dip --format json");
  EXPECT_NE(out.out.find("\"best_checkpoint_step\": 10"), std::string::npos)
      << out.out;
  out = Cli("checkpoint " + id + " --list --format json");
  const json listed = json::parse(out.out, nullptr, false);
  int best = 0;
  for (const json& c : listed["checkpoints"]) {
    if (c["best"] == true) best = c["step"];
  }
  EXPECT_EQ(best, 10) << out.out;
  EXPECT_EQ(listed["checkpoints"][0]["step"], 20) << out.out;
  out = Cli("checkpoint " + id + " --step 10 --out " + dir_ + "/best");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  std::ifstream state(dir_ + "/best/step-10/state");
  std::string text;
  state >> text;
  EXPECT_EQ(text, "10");
}

TEST_F(CommandE2E, NoticesReachAWebhookRetriedAndPreemptionsNever) {
  // A local webhook that answers 500 once, then takes every notice.
  httplib::Server hook;
  std::mutex mu;
  std::vector<json> notices;
  int posts = 0;
  hook.Post("/hook", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    if (posts++ == 0) {
      res.status = 500;
      return;
    }
    notices.push_back(json::parse(req.body, nullptr, false));
  });
  const int port = hook.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { hook.listen_after_bind(); });
  Script("job.sh",
         "case $1 in ok) exit 0 ;; bad) echo boom >&2; exit 1 ;;\n"
         "pre) if [ ! -f ../preempted ]; then touch ../preempted; exit 3; fi; "
         "exit 0 ;;\nesac\n");
  StartCoordinator({"--max-attempts", "1"});
  Submit(absl::StrCat(
      "name: hooked\nkind: command\ncommand: [./job.sh, \"${x}\"]\n"
      "notify:\n  - {on: [failed, done, sweep_done], url: "
      "'http://127.0.0.1:",
      port, "/hook', format: json}\ngrid:\n  x: [ok, bad, pre]\n"));
  StartWorker("w", {"--exit-when-idle"});
  const bool all = testing::WaitUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return notices.size() >= 4;
  });
  hook.stop();
  serving.join();
  ASSERT_TRUE(all) << notices.size() << " notices";
  std::map<std::string, int> kinds;
  for (const json& n : notices) {
    kinds[n.value("event", "?")]++;
    EXPECT_EQ(n["sweep"], "hooked");
    if (n["event"] == "failed") {
      EXPECT_NE(n["reason"].get<std::string>().find("boom"), std::string::npos)
          << n.dump();
    }
  }
  // ok and pre done (pre's preemption said nothing), bad failed, then the
  // sweep; the first POST's 500 was retried.
  EXPECT_EQ(kinds, (std::map<std::string, int>{
                       {"done", 2}, {"failed", 1}, {"sweep_done", 1}}));
  EXPECT_EQ(posts, 5);  // (a retried notice may come after later ones)
}

TEST_F(CommandE2E, AJobWhoseLastLeaseRunsOutFailsWithANotice) {
  // The worker dies with its job (kill -9): its lease runs out, and with
  // one attempt allowed the job has failed for good: that is a notice too.
  httplib::Server hook;
  std::mutex mu;
  std::vector<json> notices;
  hook.Post("/hook", [&](const httplib::Request& req, httplib::Response&) {
    std::lock_guard<std::mutex> lock(mu);
    notices.push_back(json::parse(req.body, nullptr, false));
  });
  const int port = hook.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { hook.listen_after_bind(); });
  // (It ends when its worker is gone.)
  Script("lost.sh", absl::StrCat("touch '", dir_, "/started'\n",
                                 "while kill -0 $PPID; do sleep 0.05; done\n"));
  StartCoordinator({"--max-attempts", "1", "--lease-grace-ms", "0"});
  Submit(absl::StrCat("name: lost\nkind: command\ncommand: [./lost.sh]\n",
                      "notify:\n  - {on: [failed], url: 'http://127.0.0.1:",
                      port, "/hook'}\ngrid:\n  x: [1]\n"));
  ChildProcess& worker = StartWorker("w", {"--lease-ms", "2000"});
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return std::filesystem::exists(dir_ + "/started"); }));
  worker.Signal(SIGKILL);
  const bool told = testing::WaitUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return !notices.empty();
  });
  hook.stop();
  serving.join();
  ASSERT_TRUE(told) << QueryText("SELECT state FROM jobs");
  EXPECT_EQ(notices[0]["event"], "failed") << notices[0].dump();
  EXPECT_NE(notices[0]["reason"].get<std::string>().find("lease"),
            std::string::npos)
      << notices[0].dump();
  EXPECT_EQ(QueryText("SELECT state FROM jobs"), "failed");
}

TEST_F(CommandE2E, ThePreemptExitCodeRequeuesWithoutSpendingAnAttempt) {
  Script("preempt.sh",
         "if [ ! -f preempted ]; then touch preempted; exit 3; fi\nexit 0\n");
  StartCoordinator({"--max-attempts", "1"});
  Submit(Spec("preempt", "[./preempt.sh]"));
  StartWorker("w", {"--exit-when-idle"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 1))
      << QueryText("SELECT last_error FROM jobs");
  EXPECT_EQ(Query("SELECT attempt FROM jobs"), 1);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'preempted'"), 1);
}

TEST_F(CommandE2E, AChildThatIgnoresSigtermIsKilledWithItsGroupAfterTheGrace) {
  Script("stubborn.sh",
         "trap '' TERM\n(trap '' TERM; exec sleep 4321.5) &\n"
         "touch running\nwhile true; do sleep 0.05; done\n");
  StartCoordinator();
  ChildProcess& worker = StartWorker("w");
  Submit(Spec("stubborn", "[./stubborn.sh]", "stop_grace_s: 1\n"));
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return std::filesystem::exists(dir_ + "/running"); }));
  worker.Signal(SIGTERM);
  ASSERT_TRUE(WaitForLog("w", "killing its process group"));
  ASSERT_TRUE(testing::WaitUntil([&] { return worker.Poll().has_value(); }));
  // SIGKILLed processes leave the process table a moment later (they are
  // torn down, then reaped by init): wait for that, not for a guess.
  EXPECT_TRUE(testing::WaitUntil([&] {
    return ProcessesMentioning("stubborn.sh") == 0 &&
           ProcessesMentioning("sleep 4321.5") == 0;
  })) << ProcessesMentioning("stubborn.sh")
      << " " << ProcessesMentioning("sleep 4321.5");
  // Preempted, not failed: back in the queue, the attempt not spent.
  EXPECT_EQ(JobCount("queued"), 1) << QueryText("SELECT last_error FROM jobs");
  EXPECT_EQ(Query("SELECT attempt FROM jobs"), 0);
}

TEST_F(CommandE2E, ACancelledChildGetsSigtermAndItsGraceThenTheGroupIsKilled) {
  // The child saves on SIGTERM (its trap), its grandchild ignores it: both
  // happen, the first at cancel, the second once the grace is over.
  Script("polite.sh",
         "trap 'echo saved > saved; sleep 30' TERM\n"
         "(trap '' TERM; exec sleep 4323.5) &\n"
         "touch running\nwhile true; do sleep 0.05; done\n");
  StartCoordinator();
  StartWorker("w");
  Submit(Spec("polite", "[./polite.sh]", "stop_grace_s: 1\n"));
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return std::filesystem::exists(dir_ + "/running"); }));
  const testing::CommandResult cancel = Cli("cancel polite");
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return std::filesystem::exists(dir_ + "/saved"); }));
  ASSERT_TRUE(WaitForLog("w", "killing its process group"));
  ASSERT_TRUE(WaitForLog("w", "stopped (its lease is gone)"));
  EXPECT_TRUE(testing::WaitUntil([&] {
    return ProcessesMentioning("polite.sh") == 0 &&
           ProcessesMentioning("sleep 4323.5") == 0;
  }));
  EXPECT_EQ(JobCount("cancelled"), 1);
}

TEST_F(CommandE2E, AGrandchildThatOutlivesItsParentIsKilledWithTheGroup) {
  Script("orphan.sh", "sleep 4322.5 &\necho started >&2\nexit 0\n");
  StartCoordinator();
  Submit(Spec("orphan", "[./orphan.sh]"));
  StartWorker("w", {"--exit-when-idle"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 1));
  EXPECT_TRUE(testing::WaitUntil(
      [&] { return ProcessesMentioning("sleep 4322.5") == 0; }));
}

TEST_F(CommandE2E, WhatAJobLeftInASessionOfItsOwnEndsWithIt) {
  LeaversEndWithTheirJob("off");
  EXPECT_TRUE(WaitForLog("w", "found by a marker in their environment"));
}

TEST_F(CommandE2E, WhatAJobLeftEndsWithItsCgroupWhereTheWorkerMayMakeOne) {
  std::string why;
  absl::StatusOr<std::string> root = AttemptCgroupRoot("auto", &why);
  ASSERT_TRUE(root.ok());
  if (root->empty()) GTEST_SKIP() << "no cgroup for attempts here: " << why;
  LeaversEndWithTheirJob("auto");
  EXPECT_TRUE(WaitForLog("w", "in a cgroup of their own under"));
}

TEST_F(CommandE2E, ADeletedDatabaseRestoredFromItsBackupLosesNoFinishedJob) {
  // Each job logs two points and takes a moment; 8 of them, one at a time.
  Script("steps.sh",
         "echo '{\"step\": 1, \"loss\": 2}' >> \"$TAILSWEEP_METRICS_FILE\"\n"
         "echo '{\"step\": 2, \"loss\": 1}' >> \"$TAILSWEEP_METRICS_FILE\"\n"
         "sleep 0.3\n");
  const std::string backups = dir_ + "/backups";
  ChildProcess& coordinator =
      StartCoordinator({"--backup-dir", backups, "--backup-every", "1",
                        "--backup-keep", "3", "--http-listen", "127.0.0.1:0"});
  Submit(
      "name: lost\nkind: command\ncommand: [./steps.sh]\n"
      "grid:\n  x: [1, 2, 3, 4, 5, 6, 7, 8]\n");
  StartWorker("w");
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) >= 3 FROM jobs WHERE state = 'done'", 1));
  // A backup taken after those three were done (a file named later).
  const auto newest = [&] {
    std::string last;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(backups, ec)) {
      const std::string name = e.path().filename().string();
      if (absl::EndsWith(name, ".db") && name > last) last = name;
    }
    return last;
  };
  const std::string before = newest();
  ASSERT_TRUE(testing::WaitUntil([&] { return newest() > before; }));
  // /metrics says when the newest good backup was written (to alert on
  // its age) and counts them.
  const std::string metrics =
      testing::RunCommand(absl::StrCat("curl -s http://127.0.0.1:",
                                       WaitForHttpPort(), "/metrics"))
          .out;
  EXPECT_NE(metrics.find("tailsweep_backup_last_success_timestamp_seconds 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("tailsweep_backups_total{outcome=\"ok\"}"),
            std::string::npos);
  EXPECT_EQ(metrics.find("tailsweep_backups_total{outcome=\"failed\"}"),
            std::string::npos);
  coordinator.Signal(SIGKILL);
  ASSERT_TRUE(
      testing::WaitUntil([&] { return coordinator.Poll().has_value(); }));
  for (const char* f : {"/db", "/db-wal", "/db-shm"}) {
    std::filesystem::remove(dir_ + f);
  }
  StartCoordinator({"--restore-from", backups, "--restore-hold", "1"});
  ASSERT_TRUE(WaitForLog("coordinator", "restored"));
  // The worker carries on against the restored database: every job ends
  // done, each with both of its points.
  EXPECT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 8));
  EXPECT_EQ(Query("SELECT COUNT(*) FROM metrics WHERE name = 'loss'"), 16);
}

TEST_F(CommandE2E, AProgramThatCannotRunFailsWithTheReasonInJobsAndLogs) {
  std::ofstream(dir_ + "/not-executable.sh") << "#!/bin/sh\nexit 0\n";
  // Three attempts allowed, one spent: it would fail the same again.
  StartCoordinator({"--max-attempts", "3"});
  StartWorker("w");
  Submit(Spec("missing", "[no-such-program-tailsweep]"));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'failed'", 1));
  const std::string error = QueryText("SELECT last_error FROM jobs");
  EXPECT_NE(error.find("cannot run 'no-such-program-tailsweep': No such "
                       "file or directory"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("not retried"), std::string::npos) << error;
  EXPECT_EQ(Query("SELECT attempt FROM jobs"), 1);
  const std::string id = QueryText("SELECT job_id FROM jobs");
  EXPECT_NE(Cli("logs " + id).out.find("cannot run"), std::string::npos);
  Submit(Spec("noexec", "[./not-executable.sh]"));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'failed'", 2));
  EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE last_error LIKE "
                  "'%not-executable.sh%Permission denied%'"),
            1)
      << QueryText("SELECT last_error FROM jobs");
}

TEST_F(CommandE2E, AResultOverItsLimitFailsAtOnceWithWhyAndIsNotRetried) {
  // 3 MB of result: the coordinator would refuse it every time. The worker
  // fails the attempt itself, at once, saying why; no lease runs out.
  Script(
      "big.sh",
      "printf '{\"x\": \"' > \"$TAILSWEEP_RESULT_FILE\"\n"
      "head -c 3000000 /dev/zero | tr '\\0' a >> \"$TAILSWEEP_RESULT_FILE\"\n"
      "printf '\"}' >> \"$TAILSWEEP_RESULT_FILE\"\n");
  StartCoordinator({"--max-attempts", "3"});
  StartWorker("w");
  Submit(Spec("bigresult", "[./big.sh]"));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'failed'", 1))
      << QueryText("SELECT state || ' ' || COALESCE(last_error, '') FROM jobs");
  const std::string error = QueryText("SELECT last_error FROM jobs");
  EXPECT_NE(error.find("the result file is 3.0 MB, over the 1 MiB"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("not retried"), std::string::npos) << error;
  EXPECT_EQ(Query("SELECT attempt FROM jobs"), 1);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'expired'"), 0);
  const testing::CommandResult jobs = Cli("jobs bigresult");
  EXPECT_NE(jobs.out.find("over the 1 MiB"), std::string::npos) << jobs.out;
}

TEST_F(CommandE2E, GarbageAndHugeMetricLinesAreSkippedAndCounted) {
  Script("garbage.sh",
         "f=$TAILSWEEP_METRICS_FILE\n"
         "echo '{\"step\": 1, \"loss\": 1}' >> $f\n"
         "echo 'not json at all' >> $f\n"
         "echo '{\"step\": 2, \"loss\": \"abc\"}' >> $f\n"
         "echo '{\"loss\": 2}' >> $f\n"
         "{ printf '{\"step\": 3, \"loss\": \"'; head -c 10000000 /dev/zero "
         "| tr '\\0' a; echo '\"}'; } >> $f\n"
         "echo '{\"step\": 4, \"loss\": 4, \"new_name\": \"inf\"}' >> $f\n");
  StartCoordinator();
  Submit(Spec("garbage", "[./garbage.sh]"));
  StartWorker("w", {"--exit-when-idle"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 1))
      << QueryText("SELECT last_error FROM jobs");
  EXPECT_EQ(Query("SELECT COUNT(*) FROM metrics WHERE name = 'loss'"), 2);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM metrics WHERE name = 'new_name'"), 1);
  const std::string id = QueryText("SELECT job_id FROM jobs");
  EXPECT_NE(Cli("logs " + id).out.find("skipped 4 line(s)"), std::string::npos)
      << Cli("logs " + id).out;
  const json result =
      json::parse(QueryText("SELECT result FROM results"), nullptr, false);
  EXPECT_EQ(result["skipped_metric_lines"], 4) << result.dump();
}

TEST_F(CommandE2E, AChildThatNeverWritesAMetricIsDone) {
  Script("quiet.sh", "exit 0\n");
  StartCoordinator();
  Submit(Spec("quiet", "[./quiet.sh]"));
  StartWorker("w", {"--exit-when-idle"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 1));
  EXPECT_EQ(Query("SELECT COUNT(*) FROM metrics"), 0);
  const testing::CommandResult table = Cli("results quiet --format json");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const nlohmann::json rows = nlohmann::json::parse(table.out);
  ASSERT_EQ(rows.size(), 1u) << table.out;
  EXPECT_EQ(rows[0]["jobs"], 1);
  EXPECT_EQ(rows[0]["done"], 1);
}

TEST_F(CommandE2E, AStopOnOutcomeEndsTheRunEarlyAndTheCoordinatorJudgesIt) {
  // loss becomes NaN at step 3 in one cell; stop_on ends that run there,
  // the other runs to step 50. A boundary-style outcome table follows.
  Script("diverge.sh", R"(trap 'exit 3' TERM
i=1
while [ $i -le 50 ]; do
  if [ "$1" = "--blow=true" ] && [ $i -ge 3 ]; then v='"nan"'; else v=$i; fi
  echo "{\"step\": $i, \"loss\": $v}" >> "$TAILSWEEP_METRICS_FILE"
  sleep 0.05; i=$((i+1))
done
)");
  StartCoordinator();
  Submit(
      "name: stop\nkind: command\ncommand: [./diverge.sh, \"--blow=${blow}\"]\n"
      "outcomes:\n  diverged: {metric: loss, not_finite: true}\n"
      "  big: {metric: loss, above: 40, at: max}\n"
      "stop_on: [diverged]\ngrid:\n  blow: [true, false]\n");
  StartWorker("w", {"--exit-when-idle"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2))
      << QueryText("SELECT last_error FROM jobs");
  // One curve stops short of step 50, the other reaches it.
  EXPECT_LT(Query("SELECT MIN(top) FROM (SELECT MAX(step) AS top FROM "
                  "metrics GROUP BY job_id)"),
            50);
  EXPECT_EQ(Query("SELECT MAX(step) FROM metrics"), 50);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM results WHERE "
                  "json_extract(result, '$.early_stop') = 'diverged'"),
            1);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM results WHERE "
                  "json_extract(result, '$.outcomes.diverged') = 1"),
            1);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM results WHERE "
                  "json_extract(result, '$.outcomes.big') = 1"),
            1);
  const testing::CommandResult table = Cli("results stop");
  EXPECT_NE(table.out.find("diverged"), std::string::npos) << table.out;
}

TEST_F(CommandE2E, StopAfterStepsLetsARunGoOnThatManyStepsPastTheOutcome) {
  // loss is NaN from step 3; the run is stopped 10 steps later, not at
  // once, and not at step 60.
  Script("diverge.sh", R"(trap 'exit 3' TERM
i=1
while [ $i -le 60 ]; do
  if [ $i -ge 3 ]; then v='"nan"'; else v=$i; fi
  echo "{\"step\": $i, \"loss\": $v}" >> "$TAILSWEEP_METRICS_FILE"
  sleep 0.05; i=$((i+1))
done
)");
  StartCoordinator();
  Submit(
      "name: later\nkind: command\ncommand: [./diverge.sh]\n"
      "outcomes:\n  diverged: {metric: loss, not_finite: true}\n"
      "stop_on: [diverged]\nstop_after_steps: 10\ngrid:\n  x: [1]\n");
  StartWorker("w", {"--exit-when-idle"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 1))
      << QueryText("SELECT last_error FROM jobs");
  const int64_t last = Query("SELECT MAX(step) FROM metrics");
  EXPECT_GE(last, 13);
  EXPECT_LT(last, 60);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM results WHERE "
                  "json_extract(result, '$.early_stop') = 'diverged'"),
            1);
}

}  // namespace
}  // namespace tailsweep
