// GPUs found without LibTorch, with real processes: a worker started with
// `--devices auto` beside a fake nvidia-smi that reports two GPUs runs
// `gpus: 1` command jobs on them (each sees one in CUDA_VISIBLE_DEVICES) and
// stores their GPUs' samples as system/ metrics, while a worker on the CPU
// alone is never leased one (`tailsweep workers` says why).

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/testing/cluster.h"
#include "tests/testing/wait.h"

namespace tailsweep {
namespace {

class GpuPlacementE2E : public ::testing::Test, public testing::Cluster {
 protected:
  GpuPlacementE2E() : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_gpus_") {}

  void Script(const std::string& path, const std::string& body) {
    std::ofstream(path) << "#!/bin/sh\n" << body;
    chmod(path.c_str(), 0755);
  }
  // PATH with a fake nvidia-smi first: two GPUs, each at a utilisation and
  // memory of its own.
  std::vector<std::string> FakeDriver() {
    const std::string bin = dir_ + "/fake-bin";
    std::filesystem::create_directories(bin);
    Script(bin + "/nvidia-smi",
           "case \"$1\" in\n"
           "  --query-gpu=index,uuid,name,memory.total)\n"
           "    echo '0, GPU-fake-0, Fake GPU, 81559'\n"
           "    echo '1, GPU-fake-1, Fake GPU, 81559' ;;\n"
           "  --query-gpu=index,uuid,utilization.gpu,memory.used)\n"
           "    echo '0, GPU-fake-0, 37, 1000'\n"
           "    echo '1, GPU-fake-1, 64, 2000' ;;\n"
           "  *) echo \"fake nvidia-smi: $*\" >&2; exit 2 ;;\n"
           "esac\n");
    const char* path = std::getenv("PATH");
    return {absl::StrCat("PATH=", bin, ":", path ? path : "/usr/bin:/bin")};
  }
};

TEST_F(GpuPlacementE2E, GpuJobsRunOnTheFoundGpusAndNeverOnACpuWorker) {
  // Each job says which GPU it saw, then waits for the test's go (once its
  // GPU's samples are stored), so it runs long enough to be sampled.
  Script(dir_ + "/job.sh",
         "echo \"$TAILSWEEP_JOB_ID $CUDA_VISIBLE_DEVICES\" >> seen.txt\n"
         "echo '{\"step\": 1, \"loss\": 1}' >> \"$TAILSWEEP_METRICS_FILE\"\n"
         "while [ ! -f go ]; do sleep 0.1; done\n");
  StartCoordinator();
  Submit(
      "name: gpus\nkind: command\ncommand: [./job.sh]\n"
      "fixed: {gpus: 1}\ngrid:\n  x: [1, 2, 3, 4]\n");
  // The CPU worker polls first, with 8 slots: it must take none.
  StartWorker("cpu", {"--devices", "cpu", "--slots-per-device", "8"});
  ASSERT_TRUE(WaitForLog("cpu", "devices cpu x 8 slot(s)"));
  ASSERT_TRUE(WaitForAPollFromNow());
  EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'leased'"), 0);
  StartWorker("gpu",
              {"--devices", "auto", "--slots-per-device", "1",
               "--gpu-sample-seconds", "0.5", "--exit-when-idle"},
              "", FakeDriver());
  ASSERT_TRUE(WaitForLog("gpu", "--devices auto: 2 GPU(s) from nvidia-smi"));
  ASSERT_TRUE(WaitForLog("gpu", "devices cuda:0,cuda:1 x 1 slot(s)"));
  // Both GPUs busy, each job's own GPU sampled.
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(DISTINCT job_id) FROM metrics WHERE name "
              "= 'system/gpu_util/0'",
              2))
      << testing::ReadFile(dir_ + "/gpu.err");
  std::ofstream(dir_ + "/go") << "go\n";
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 4))
      << testing::ReadFile(dir_ + "/gpu.err");

  // Every job saw exactly one of the two GPUs; both were used.
  std::set<std::string> gpus_seen;
  int lines = 0;
  for (absl::string_view line : absl::StrSplit(
           testing::ReadFile(dir_ + "/seen.txt"), '\n', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(line, ' ');
    ASSERT_EQ(parts.size(), 2u) << line;
    EXPECT_TRUE(parts[1] == "0" || parts[1] == "1") << line;
    gpus_seen.insert(parts[1]);
    ++lines;
  }
  EXPECT_EQ(lines, 4);
  EXPECT_EQ(gpus_seen.size(), 2u);
  // The samples are the job's own GPU's: utilisation 37 on GPU 0, 64 on 1,
  // and memory beside it.
  EXPECT_EQ(Query("SELECT COUNT(*) FROM metrics WHERE name = "
                  "'system/gpu_util/0' AND value NOT IN (37, 64)"),
            0);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM metrics WHERE name = "
                  "'system/gpu_mem_mib/0' AND value NOT IN (1000, 2000)"),
            0);
  EXPECT_GE(Query("SELECT COUNT(DISTINCT job_id) FROM metrics WHERE name = "
                  "'system/gpu_mem_mib/0'"),
            2);

  // No lease ever went to the CPU worker, and `tailsweep workers` says
  // where each stands.
  const nlohmann::json workers =
      nlohmann::json::parse(Cli("workers --format json").out, nullptr, false);
  ASSERT_TRUE(workers.is_array()) << workers;
  std::string cpu_id;
  std::set<std::string> devices;
  for (const auto& w : workers) {
    devices.insert(w["devices"].get<std::string>());
    if (w["devices"] == "cpu") cpu_id = w["worker_id"].get<std::string>();
  }
  EXPECT_EQ(devices, (std::set<std::string>{"cpu", "cuda:0,cuda:1"}));
  ASSERT_FALSE(cpu_id.empty());
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'leased' AND "
                  "detail = '" +
                  cpu_id + "'"),
            0);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'leased'"), 4);
  const testing::CommandResult table = Cli("workers");
  EXPECT_NE(table.out.find("cpu (no gpus jobs)"), std::string::npos)
      << table.out;
}

}  // namespace
}  // namespace tailsweep
