#ifndef TAILSWEEP_WORKER_GPUS_H_
#define TAILSWEEP_WORKER_GPUS_H_

// The node's NVIDIA GPUs as the driver reports them, found without
// LibTorch: `nvidia-smi --query-gpu=... --format=csv,noheader,nounits`,
// which ships with every NVIDIA driver. What `--devices auto` uses, and what
// samples a running job's GPUs for its system/ metrics.
//
// The tool is run through an injected GpuTool, so tests give the parsers
// any output and the chooser any failure; RunGpuTool is the real one (a
// child process with a deadline: an nvidia-smi that hangs on a wedged
// driver is killed, never waited for). Torch-free.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/schema/metric_point.h"
#include "worker/allocation.h"

namespace tailsweep {

inline constexpr char kNvidiaSmi[] = "nvidia-smi";
// The arguments of the two queries; their columns, in this order, are what
// the parsers below read.
inline constexpr char kListQuery[] = "--query-gpu=index,uuid,name,memory.total";
inline constexpr char kSampleQuery[] =
    "--query-gpu=index,uuid,utilization.gpu,memory.used";
inline constexpr char kCsvFormat[] = "--format=csv,noheader,nounits";

// The per-GPU system metrics of a job: PREFIX + its N-th GPU (from 0, as
// the job's CUDA_VISIBLE_DEVICES numbers them), e.g. "system/gpu_util/0".
inline constexpr char kGpuUtilMetric[] = "system/gpu_util/";    // percent
inline constexpr char kGpuMemMetric[] = "system/gpu_mem_mib/";  // MiB used

struct GpuInfo {
  std::string index;  // the driver's ordinal, e.g. "0"
  std::string uuid;   // e.g. "GPU-5d1e..."
  std::string name;   // e.g. "NVIDIA H100 80GB HBM3"
  int64_t memory_mib = 0;
};

struct GpuSample {
  std::string index;
  std::string uuid;
  double util_percent = 0;  // NaN when the driver does not say
  double memory_used_mib = 0;
};

// Runs `argv` (argv[0] looked up in PATH) for at most `timeout_ms` and
// returns its standard output. NotFound when the program is not there,
// DeadlineExceeded when it did not finish in time (it is killed), Unknown
// for a non-zero exit (the message holds its first stderr line).
using GpuTool = std::function<absl::StatusOr<std::string>(
    const std::vector<std::string>& argv, int64_t timeout_ms)>;

// The real GpuTool: a child process whose output goes to files under
// `scratch_dir` (created if missing).
GpuTool RunGpuTool(std::string scratch_dir);

// The list query's output, one GPU a line. InvalidArgument naming the line
// and what was expected for anything else (an empty output is no GPU).
absl::StatusOr<std::vector<GpuInfo>> ParseGpuList(absl::string_view csv);
// The sample query's output. InvalidArgument as ParseGpuList.
absl::StatusOr<std::vector<GpuSample>> ParseGpuSamples(absl::string_view csv);

// `--devices auto`'s answer: the devices, and one line saying why, for the
// worker's log (e.g. "2 GPU(s) from nvidia-smi: 0 NVIDIA H100 (81559 MiB),
// ...", or "cpu: nvidia-smi not found on PATH").
struct AutoDevices {
  std::vector<std::string> devices;  // {"cpu"} or {"cuda:0", ...}
  std::string why;
};

// Chooses from what the allocation gives (allocation.h: CUDA_VISIBLE_DEVICES
// or Slurm's GPUs; set but empty means none) and what the driver lists
// (`found`: ParseGpuList's answer, or why the query failed). With GPUs named
// by the allocation, it has that many (cuda:N is its N-th), provided the
// driver answers; with none named, every GPU the driver lists. Otherwise
// cpu, saying why.
AutoDevices ChooseAutoDevices(
    const Allocation& allocation,
    const absl::StatusOr<std::vector<GpuInfo>>& found);

// Runs the list query through `tool` (a few seconds at most) and chooses.
AutoDevices FindAutoDevices(const Allocation& allocation, const GpuTool& tool);

// The system metrics of a job whose slots are on `devices` (cuda:N, its
// GPUs in order; "cpu" ones are skipped) at `step`: for each of its GPUs
// found in `samples` (matched by the allocation's entry, an ordinal or a
// UUID), utilisation (unless NaN) and memory used.
std::vector<MetricPoint> GpuPointsFor(const Allocation& allocation,
                                      const std::vector<std::string>& devices,
                                      const std::vector<GpuSample>& samples,
                                      int64_t step);

// Runs the sample query every `period_ms` on a thread of its own, so the
// worker's loop never waits for the driver; keeps the newest answer. A
// failing query is logged once (and again when it recovers), never fatal.
class GpuSampler {
 public:
  // REQUIRES: period_ms >= 100.
  GpuSampler(GpuTool tool, int64_t period_ms);
  ~GpuSampler();  // stops the thread and waits for it
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;

  // The newest sample into `out` and its number (1, 2, ...); 0, `out`
  // untouched, before the first. Thread-safe.
  int64_t Latest(std::vector<GpuSample>* out) const;

 private:
  void Loop();

  const GpuTool tool_;
  const int64_t period_ms_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  int64_t seq_ = 0;
  std::vector<GpuSample> latest_;
  std::thread thread_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_GPUS_H_
