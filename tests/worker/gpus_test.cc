// GPUs found without LibTorch (worker/gpus.h): nvidia-smi's output parsed,
// `--devices auto` chosen within an allocation, a hanging or garbled or
// missing nvidia-smi, and a job's GPU samples as its system/ metrics.

#include "worker/gpus.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "tests/testing/wait.h"

namespace tailsweep {
namespace {

using Strings = std::vector<std::string>;

constexpr char kTwoGpus[] =
    "0, GPU-aaaa-1111, NVIDIA H100 80GB HBM3, 81559\n"
    "1, GPU-bbbb-2222, NVIDIA H100 80GB HBM3, 81559\n";

// A GpuTool that answers `out` (or fails with `status`) and records argv.
GpuTool Answer(absl::StatusOr<std::string> out, Strings* argv = nullptr) {
  return [out, argv](const Strings& a, int64_t) {
    if (argv != nullptr) *argv = a;
    return out;
  };
}

Allocation Given(std::optional<Strings> gpus, std::string from = "") {
  Allocation a;
  a.gpus = std::move(gpus);
  a.gpus_from = std::move(from);
  return a;
}

TEST(Gpus, ParsesTheListQuery) {
  absl::StatusOr<std::vector<GpuInfo>> gpus = ParseGpuList(kTwoGpus);
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[1].index, "1");
  EXPECT_EQ((*gpus)[1].uuid, "GPU-bbbb-2222");
  EXPECT_EQ((*gpus)[1].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ((*gpus)[1].memory_mib, 81559);
  EXPECT_TRUE(ParseGpuList("").ok() && ParseGpuList("\n")->empty());
}

TEST(Gpus, GarbageIsAnErrorNamingTheLine) {
  for (const char* garbage :
       {"NVIDIA-SMI has failed because it couldn't communicate with the "
        "NVIDIA driver.\n",
        "0, GPU-a, name\n", "x, GPU-a, name, 10\n"}) {
    absl::StatusOr<std::vector<GpuInfo>> gpus = ParseGpuList(garbage);
    ASSERT_FALSE(gpus.ok()) << garbage;
    EXPECT_EQ(gpus.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(
        absl::StrContains(gpus.status().message(), "nvidia-smi printed"))
        << gpus.status();
  }
}

TEST(Gpus, SamplesKeepWhatTheDriverDoesNotSayAsNaN) {
  absl::StatusOr<std::vector<GpuSample>> s =
      ParseGpuSamples("0, GPU-a, 37, 1234\n1, GPU-b, [N/A], 99\n");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].util_percent, 37);
  EXPECT_EQ((*s)[0].memory_used_mib, 1234);
  EXPECT_TRUE(std::isnan((*s)[1].util_percent));
  EXPECT_FALSE(ParseGpuSamples("0, GPU-a, 37\n").ok());
}

TEST(Gpus, AutoTakesEveryListedGpuWithoutAnAllocation) {
  Strings argv;
  const AutoDevices d =
      FindAutoDevices(Given(std::nullopt), Answer(kTwoGpus, &argv));
  EXPECT_EQ(d.devices, (Strings{"cuda:0", "cuda:1"}));
  EXPECT_TRUE(absl::StrContains(d.why, "2 GPU(s) from nvidia-smi")) << d.why;
  EXPECT_TRUE(absl::StrContains(d.why, "NVIDIA H100")) << d.why;
  EXPECT_EQ(argv, (Strings{kNvidiaSmi, kListQuery, kCsvFormat}));
}

TEST(Gpus, AutoKeepsToTheAllocationsGpus) {
  const AutoDevices one = FindAutoDevices(
      Given(Strings{"GPU-bbbb-2222"}, "CUDA_VISIBLE_DEVICES=GPU-bbbb-2222"),
      Answer(kTwoGpus));
  EXPECT_EQ(one.devices, (Strings{"cuda:0"}));
  EXPECT_TRUE(absl::StrContains(one.why, "given by CUDA_VISIBLE_DEVICES"))
      << one.why;
  EXPECT_TRUE(absl::StrContains(one.why, "1 NVIDIA H100")) << one.why;
  const AutoDevices none = FindAutoDevices(
      Given(Strings{}, "CUDA_VISIBLE_DEVICES="), Answer(kTwoGpus));
  EXPECT_EQ(none.devices, (Strings{"cpu"}));
  EXPECT_TRUE(absl::StrContains(none.why, "gives this worker no GPU"))
      << none.why;
}

TEST(Gpus, AutoFallsBackToTheCpuSayingWhy) {
  const AutoDevices missing = FindAutoDevices(
      Given(std::nullopt),
      Answer(absl::NotFoundError("nvidia-smi not found on PATH")));
  EXPECT_EQ(missing.devices, (Strings{"cpu"}));
  EXPECT_TRUE(absl::StrContains(missing.why, "not found on PATH"))
      << missing.why;
  const AutoDevices garbage = FindAutoDevices(
      Given(std::nullopt), Answer(std::string("No devices were found!\n")));
  EXPECT_EQ(garbage.devices, (Strings{"cpu"}));
  EXPECT_TRUE(absl::StrContains(garbage.why, "nvidia-smi printed"))
      << garbage.why;
  const AutoDevices empty =
      FindAutoDevices(Given(std::nullopt), Answer(std::string()));
  EXPECT_EQ(empty.devices, (Strings{"cpu"}));
  EXPECT_TRUE(absl::StrContains(empty.why, "lists no GPU")) << empty.why;
  const AutoDevices named_but_no_driver = FindAutoDevices(
      Given(Strings{"0"}, "SLURM_STEP_GPUS=0"),
      Answer(absl::UnknownError("nvidia-smi exited with status 9")));
  EXPECT_EQ(named_but_no_driver.devices, (Strings{"cpu"}));
  EXPECT_TRUE(absl::StrContains(named_but_no_driver.why,
                                "SLURM_STEP_GPUS=0 names GPUs, but"))
      << named_but_no_driver.why;
}

// The real tool, on scripts in a folder of their own.
class GpuToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tailsweep_gpus_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Script(const std::string& name, const std::string& body) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << "#!/bin/sh\n" << body;
    chmod(path.c_str(), 0755);
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(GpuToolTest, RunsTheProgramAndReadsItsOutput) {
  const std::string smi = Script("smi", "echo \"0, GPU-a, Fake, 10\"\n");
  absl::StatusOr<std::string> out =
      RunGpuTool((dir_ / "scratch").string())({smi, kListQuery}, 5000);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "0, GPU-a, Fake, 10\n");
}

TEST_F(GpuToolTest, AHangingProgramIsKilledAtItsDeadline) {
  const std::string smi = Script("smi", "exec sleep 600\n");
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> out =
      RunGpuTool((dir_ / "scratch").string())({smi}, 300);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(absl::StrContains(out.status().message(), "did not answer"))
      << out.status();
  // Killed, not waited for: far less than the sleep.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

TEST_F(GpuToolTest, AMissingOrFailingProgramSaysSo) {
  GpuTool tool = RunGpuTool((dir_ / "scratch").string());
  absl::StatusOr<std::string> missing =
      tool({(dir_ / "no-such-smi").string()}, 5000);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound)
      << missing.status();
  const std::string smi =
      Script("smi",
             "echo 'Failed to initialize NVML: Driver/library version "
             "mismatch' >&2\nexit 18\n");
  absl::StatusOr<std::string> failed = tool({smi}, 5000);
  EXPECT_FALSE(failed.ok());
  EXPECT_TRUE(absl::StrContains(failed.status().message(), "status 18"))
      << failed.status();
  EXPECT_TRUE(absl::StrContains(failed.status().message(), "version mismatch"))
      << failed.status();
}

TEST(Gpus, AJobsPointsAreItsOwnGpusNumberedFromZero) {
  const std::vector<GpuSample> samples = {{"0", "GPU-a", 10, 100},
                                          {"1", "GPU-b", 20, 200},
                                          {"2", "GPU-c", NAN, 300}};
  // No allocation: cuda:N is the machine's GPU N.
  std::vector<MetricPoint> p =
      GpuPointsFor(Given(std::nullopt), {"cuda:2", "cuda:1"}, samples, 7);
  ASSERT_EQ(p.size(), 3u);  // GPU 2's utilisation is not known
  EXPECT_EQ(p[0], (MetricPoint{"system/gpu_mem_mib/0", 7, 300}));
  EXPECT_EQ(p[1], (MetricPoint{"system/gpu_util/1", 7, 20}));
  EXPECT_EQ(p[2], (MetricPoint{"system/gpu_mem_mib/1", 7, 200}));
  // An allocation of UUIDs: the worker's cuda:0 is GPU-b.
  p = GpuPointsFor(Given(Strings{"GPU-b"}, "CUDA_VISIBLE_DEVICES=GPU-b"),
                   {"cuda:0"}, samples, 3);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0], (MetricPoint{"system/gpu_util/0", 3, 20}));
  EXPECT_TRUE(GpuPointsFor(Given(std::nullopt), {"cpu"}, samples, 1).empty());
}

TEST(Gpus, TheSamplerKeepsTheNewestAnswer) {
  std::atomic<int> calls{0};
  GpuSampler sampler(
      [&](const Strings&, int64_t) -> absl::StatusOr<std::string> {
        if (++calls == 1) return absl::UnavailableError("driver busy");
        return std::string("0, GPU-a, 50, 512\n");
      },
      100);
  std::vector<GpuSample> got;
  ASSERT_TRUE(testing::WaitUntil([&] { return sampler.Latest(&got) > 0; }));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].util_percent, 50);
  EXPECT_GE(calls.load(), 2);
}

}  // namespace
}  // namespace tailsweep
