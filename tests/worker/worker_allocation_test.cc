// The worker inside an allocation: the GPUs, CPUs and end time it reads
// (allocation.h), draining on SIGUSR1, and no job leased too near the end.

#include <csignal>
#include <map>

#include "absl/strings/match.h"
#include "tests/testing/status_matchers.h"
#include "tests/worker/worker_fixture.h"
#include "worker/allocation.h"

namespace tailsweep {
namespace {

using Strings = std::vector<std::string>;

GetEnv Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Allocation, NothingSetMeansTheMachinesGpusAndTheAffinitysCpus) {
  TS_ASSERT_OK_AND_ASSIGN(Allocation a, ReadAllocation(Env({}), 16));
  EXPECT_FALSE(a.gpus.has_value());
  EXPECT_EQ(a.cpus, 16);
  EXPECT_EQ(a.end_wall_ms, 0);
  EXPECT_EQ(*VisibleDeviceFor(a, "cuda:3"), "3");
}

// Slot cuda:N gets the N-th GPU the worker inherited, never GPU N.
TEST(Allocation, CudaNIsTheNthInheritedGpu) {
  TS_ASSERT_OK_AND_ASSIGN(Allocation a,
                          ReadAllocation(Env({{"CUDA_VISIBLE_DEVICES", "2,5"},
                                              {"SLURM_STEP_GPUS", "0,1"}}),
                                         8));
  EXPECT_EQ(*VisibleDeviceFor(a, "cuda:0"), "2");
  EXPECT_EQ(*VisibleDeviceFor(a, "cuda:1"), "5");
  const absl::StatusOr<std::string> beyond = VisibleDeviceFor(a, "cuda:2");
  EXPECT_EQ(beyond.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(absl::StrContains(beyond.status().message(),
                                "given 2 GPU(s) (CUDA_VISIBLE_DEVICES=2,5)"))
      << beyond.status();
  EXPECT_EQ(VisibleDeviceFor(a, "gpu0").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Allocation, SlurmsGpusWhenCudaVisibleDevicesIsUnsetAndNoneWhenEmpty) {
  TS_ASSERT_OK_AND_ASSIGN(
      Allocation step, ReadAllocation(Env({{"SLURM_STEP_GPUS", "3, 7"}}), 8));
  EXPECT_EQ(*step.gpus, (Strings{"3", "7"}));
  TS_ASSERT_OK_AND_ASSIGN(
      Allocation uuids,
      ReadAllocation(Env({{"CUDA_VISIBLE_DEVICES", "GPU-aa,GPU-bb"}}), 8));
  EXPECT_EQ(*VisibleDeviceFor(uuids, "cuda:1"), "GPU-bb");
  for (const char* none : {"", "NoDevFiles"}) {
    TS_ASSERT_OK_AND_ASSIGN(
        Allocation a, ReadAllocation(Env({{"CUDA_VISIBLE_DEVICES", none}}), 8));
    EXPECT_TRUE(a.gpus.has_value() && a.gpus->empty()) << none;
    EXPECT_FALSE(VisibleDeviceFor(a, "cuda:0").ok()) << none;
  }
}

TEST(Allocation, CpusPerTaskWithinTheAffinityAndTheEndTime) {
  TS_ASSERT_OK_AND_ASSIGN(
      Allocation a, ReadAllocation(Env({{"SLURM_CPUS_PER_TASK", "4"},
                                        {"SLURM_JOB_END_TIME", "1800000000"}}),
                                   32));
  EXPECT_EQ(a.cpus, 4);
  EXPECT_EQ(a.cpus_from, "SLURM_CPUS_PER_TASK");
  EXPECT_EQ(a.end_wall_ms, 1800000000000);
  TS_ASSERT_OK_AND_ASSIGN(
      Allocation capped,
      ReadAllocation(Env({{"SLURM_CPUS_PER_TASK", "64"},
                          {"TAILSWEEP_ALLOCATION_END", "1700000000"},
                          {"SLURM_JOB_END_TIME", "1800000000"}}),
                     8));
  EXPECT_EQ(capped.cpus, 8);
  EXPECT_EQ(capped.end_wall_ms, 1700000000000);
  for (const auto& [name, value] :
       std::map<std::string, std::string>{{"SLURM_CPUS_PER_TASK", "0"},
                                          {"SLURM_CPUS_PER_TASK", "four"},
                                          {"SLURM_JOB_END_TIME", "soon"}}) {
    const absl::StatusOr<Allocation> bad =
        ReadAllocation(Env({{name, value}}), 8);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(bad.status().message(), name));
  }
}

class WorkerAllocationTest : public WorkerFixture {};

// Slurm's early warning: the job checkpoints and goes back as drained.
TEST_F(WorkerAllocationTest, Sigusr1DrainsTheJobBackUncounted) {
  Offer({{Lease("a", 1, {{"checkpoint_every", "0"}})}});
  clock_.At(250, [this] { stop_ = SIGUSR1; });
  RunWorker();
  EXPECT_EQ(calls_,
            (Strings{"LeaseJobs -> a", "DownloadCheckpoint job=a: NOT_FOUND",
                     "start a", "ReportMetrics seq=1 points=9 steps=1",
                     "ReportMetrics seq=2 points=9 steps=2", "term a",
                     "ReportMetrics seq=3 points=9 steps=3",
                     "UploadCheckpoint step=3",
                     "ReleaseJob reason=drained (SIGUSR1)"}));
}

// Ten minutes' margin and five minutes left: nothing is leased, and the
// worker exits without waiting to be idle.
TEST_F(WorkerAllocationTest, NothingIsLeasedWhenTheEndIsTooNear) {
  options_.exit_when_idle = false;
  options_.allocation.end_wall_ms = clock_.WallMs() + 300000;
  options_.end_margin_ms = 600000;
  Offer({{Lease("a", 1)}});
  RunWorker();
  EXPECT_EQ(calls_, Strings{});
  EXPECT_LT(clock_.SteadyMs(), 1000);
}

// The end comes within the margin while a job runs: it finishes and is
// reported, and the next job is not leased.
TEST_F(WorkerAllocationTest,
       AJobRunningWhenTheEndNearsFinishesAndNoMoreIsLeased) {
  options_.exit_when_idle = false;
  options_.allocation.end_wall_ms = clock_.WallMs() + 10000 + 200;
  options_.end_margin_ms = 10000;
  Offer({{Lease("a", 1, {{"checkpoint_every", "0"}})}, {Lease("b", 1)}});
  RunWorker();
  EXPECT_EQ(calls_.front(), "LeaseJobs -> a");
  EXPECT_EQ(calls_.back(), "CompleteJob");
  EXPECT_EQ(std::count_if(calls_.begin(), calls_.end(),
                          [](const std::string& c) {
                            return absl::StartsWith(c, "LeaseJobs");
                          }),
            1);
}

// The margin grows to the longest a job here went between checkpoints:
// 200 s between them, 100 s left after the first job: no second one,
// though the configured margin is 10 s.
TEST_F(WorkerAllocationTest, TheMarginGrowsToTheCheckpointIntervalSeen) {
  options_.exit_when_idle = false;
  options_.lease_ms = 3600000;
  options_.allocation.end_wall_ms = clock_.WallMs() + 500000;
  options_.end_margin_ms = 10000;
  Offer({{Lease("a", 1, {{"step_ms", "100000"}})}, {Lease("b", 1)}});
  RunWorker();
  EXPECT_EQ(calls_.back(), "CompleteJob");
  EXPECT_EQ(std::count_if(calls_.begin(), calls_.end(),
                          [](const std::string& c) {
                            return absl::StartsWith(c, "LeaseJobs");
                          }),
            1);
}

// --exit-when-idle (arrays): while the coordinator says jobs are queued or
// leased elsewhere, an idle worker keeps asking; it exits once none is.
TEST_F(WorkerAllocationTest, ExitWhenIdleWaitsWhileJobsAreUnfinished) {
  Offer({{Lease("a", 1)}});
  unfinished_answers_ = 3;
  RunWorker();
  EXPECT_EQ(std::count(calls_.begin(), calls_.end(),
                       "LeaseJobs -> none (unfinished)"),
            3);
  EXPECT_EQ(calls_.back(), "LeaseJobs -> none");
}

// A job of two GPUs on a worker of three: the request says which GPUs are
// free, the job gets two slots on different GPUs, sees both (the inherited
// entries, in order) and their threads; the third GPU's slot is leased to
// the next job while it runs.
TEST_F(WorkerAllocationTest, AJobOfTwoGpusGetsTwoSlotsAndSeesBothGpus) {
  options_.devices = {"cuda:0", "cuda:1", "cuda:2"};
  options_.threads_per_slot = 3;
  options_.allocation.gpus = Strings{"4", "6", "7"};
  std::vector<std::vector<int>> free_slots;
  answer_lease_ = [&](const v1::LeaseJobsRequest& req) {
    free_slots.emplace_back(req.free_slots().begin(), req.free_slots().end());
    return grpc::Status::OK;
  };
  Offer(
      {{Lease("a", 1, {{"gpus", "2"}, {"step_ms", "500"}})}, {Lease("b", 1)}});
  RunWorker();
  ASSERT_GE(free_slots.size(), 2u);
  EXPECT_EQ(free_slots[0], (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(free_slots[1], (std::vector<int>{0, 0, 1}));
  ASSERT_EQ(launcher_.started().size(), 2u);
  const ChildJob& a = launcher_.started()[0];
  EXPECT_EQ(a.device, "cuda:0");
  EXPECT_EQ(a.visible_devices, "4,6");
  EXPECT_EQ(a.threads, 6);
  const ChildJob& b = launcher_.started()[1];
  EXPECT_EQ(b.visible_devices, "7");
  EXPECT_EQ(b.threads, 3);
}

// On the CPU every slot is a unit: a job of gpus 2 takes two CPU slots and
// their threads.
TEST_F(WorkerAllocationTest, OnTheCpuAJobOfTwoTakesTwoSlotsAndTheirThreads) {
  options_.devices = {"cpu"};
  options_.slots_per_device = 2;
  options_.threads_per_slot = 2;
  std::vector<int> free_slots;
  answer_lease_ = [&](const v1::LeaseJobsRequest& req) {
    if (free_slots.empty()) {
      free_slots.assign(req.free_slots().begin(), req.free_slots().end());
    }
    return grpc::Status::OK;
  };
  Offer({{Lease("a", 1, {{"gpus", "2"}})}});
  RunWorker();
  EXPECT_EQ(free_slots, (std::vector<int>{1, 1}));
  ASSERT_EQ(launcher_.started().size(), 1u);
  EXPECT_EQ(launcher_.started()[0].device, "cpu");
  EXPECT_EQ(launcher_.started()[0].threads, 4);
}

// The worker names its devices on every lease call (a CPU worker is then
// leased no GPU job), and each new GPU sample becomes points of the running
// job on those GPUs, its own GPU numbered from 0 as the job sees it.
TEST_F(WorkerAllocationTest, EachNewGpuSampleBecomesTheJobsSystemMetrics) {
  options_.devices = {"cuda:0", "cuda:1"};
  options_.allocation.gpus = Strings{"4", "6"};
  int64_t seq = 0;
  options_.gpu_samples = [&](std::vector<GpuSample>* out) {
    ++seq;  // a new sample at every round
    *out = {{"4", "GPU-four", 40, 400}, {"6", "GPU-six", 60, 600}};
    return seq;
  };
  std::vector<std::string> devices;
  answer_lease_ = [&](const v1::LeaseJobsRequest& req) {
    devices.assign(req.devices().begin(), req.devices().end());
    return grpc::Status::OK;
  };
  Offer({{Lease("a", 1, {{"step_ms", "2000"}})}});
  RunWorker();
  EXPECT_EQ(devices, (Strings{"cuda:0", "cuda:1"}));
  int util = 0, mem = 0;
  for (const v1::ReportMetricsRequest& batch : reported_) {
    for (const auto& p : batch.points()) {
      if (p.name() == "system/gpu_util/0") {
        ++util;
        EXPECT_EQ(p.value(), 40);  // the job's slot is cuda:0: GPU 4
      }
      if (p.name() == "system/gpu_mem_mib/0") ++mem;
      EXPECT_NE(p.name(), "system/gpu_util/1");  // not the job's GPU
    }
  }
  EXPECT_GE(util, 1);
  EXPECT_EQ(util, mem);
}

TEST_F(WorkerAllocationTest, ACpuWorkerSaysSoWhenItLeases) {
  options_.devices = {"cpu"};
  std::vector<std::string> devices;
  answer_lease_ = [&](const v1::LeaseJobsRequest& req) {
    devices.assign(req.devices().begin(), req.devices().end());
    return grpc::Status::OK;
  };
  Offer({{Lease("a", 1)}});
  RunWorker();
  EXPECT_EQ(devices, (Strings{"cpu"}));
}

}  // namespace
}  // namespace tailsweep
