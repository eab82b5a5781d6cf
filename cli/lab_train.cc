// `tailsweep lab train` and `tailsweep lab eval`: one job run locally,
// without any service (science.md sections 5 and 6).

#include <torch/cuda.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/command.h"
#include "cli/lab_config.h"
#include "cli/metrics_file.h"
#include "cli/output.h"
#include "core/job_config.h"
#include "core/job_runner.h"
#include "core/number_text.h"
#include "core/schema/file_util.h"
#include "core/schema/job_protocol.h"
#include "core/schema/job_result.h"
#include "core/schema/lease_file.h"
#include "core/schema/train_kind.h"
#include "core/schema/version.h"

namespace tailsweep::cli {
namespace {

using nlohmann::json;

volatile std::sig_atomic_t stop_signalled = 0;
void RequestStopOnSignal(int) { stop_signalled = 1; }

absl::StatusOr<torch::Device> ParseDevice(const std::string& name) {
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name == "cuda" || absl::StartsWith(name, "cuda:")) {
    if (!torch::cuda::is_available()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--device ", name,
                       ": no CUDA device (this build or machine has "
                       "none); allowed here: cpu"));
    }
    try {
      return torch::Device(name);
    } catch (const c10::Error&) {
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--device '", name, "'; allowed: cpu, cuda, cuda:N"));
}

// Forwards metrics to the file and shows progress on stderr.
class ProgressSink : public MetricsSink {
 public:
  ProgressSink(MetricsFile* file, int64_t steps)
      : file_(file), progress_("train", steps) {}
  absl::Status Write(const StepMetrics& m) override {
    progress_.Update(m.step,
                     absl::StrCat("loss ", FormatLoss(m.loss), " spread ",
                                  FormatLoss(m.spread_ratio)));
    return file_->Write(m);
  }

 private:
  static std::string FormatLoss(double v) { return FormatForPeople(v); }
  MetricsFile* file_;
  Progress progress_;
};

// The logged steps' spread ratios in `metrics_path`: every attempt's lines,
// those past a resumed checkpoint dropped (metrics_file.h).
std::vector<std::pair<int64_t, double>> LoggedSpreads(
    const std::string& metrics_path) {
  std::vector<std::pair<int64_t, double>> out;
  std::ifstream in(metrics_path);
  for (std::string line; std::getline(in, line);) {
    absl::StatusOr<StepMetrics> m = ParseMetricsLine(line);
    if (m.ok() && m->step > 0) out.emplace_back(m->step, m->spread_ratio);
  }
  return out;
}

// result.json of a run (job_result.h); `metrics_path`: its metrics lines.
TrainResult ResultOf(const JobResult& result, const JobConfig& config,
                     const torch::Device& device, bool lease_ran_out,
                     const std::string& metrics_path) {
  const TrainOutcome& t = result.training;
  TrainResult r;
  r.steps_done = t.steps_done;
  r.resumed_from_step = result.start_step;
  r.final_loss = t.final_loss;
  r.diverged = t.diverged;
  r.diverged_step = t.diverged_step;
  r.collapsed = t.collapsed;
  r.collapse_step = t.collapse_step;
  r.stopped = t.stopped;
  r.lease_ran_out = t.stopped && lease_ran_out;
  r.early_stop = t.early_stop;
  r.version = Version();
  r.device = device.str();
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
      device.is_cuda() && visible != nullptr) {
    r.device += absl::StrCat(" (CUDA_VISIBLE_DEVICES=", visible, ")");
  }
  r.config = JobConfigToKeyValues(config, KeyListing::kEvery);
  if (result.evaluation) {
    r.evaluation = SummaryOf(*result.evaluation);
    r.samples = result.evaluation->samples;
    // Judged under every rule; collapsed follows the config's.
    r.collapse_onsets =
        JudgeCollapse(result.training_onset, LoggedSpreads(metrics_path),
                      config.collapse_threshold, t.steps_done,
                      result.evaluation->spread_ratio);
    r.collapse_rule = std::string(CollapseRuleName(config.collapse_rule));
    r.collapse_step = OnsetUnder(*r.collapse_onsets, config.collapse_rule);
    r.collapsed = r.collapse_step >= 0;
  }
  return r;
}

RunFn DefineTrain(CLI::App& app) {
  struct Flags {
    std::vector<std::string> sets;
    std::string config_file, out_dir, device = "cpu";
    bool resume = false;
  };
  auto f = std::make_shared<Flags>();
  AddJobConfigFlags(app, &f->sets, &f->config_file);
  app.add_option("--out-dir", f->out_dir,
                 "Writes metrics.jsonl, checkpoints/, result.json here")
      ->required();
  app.add_flag("--resume", f->resume,
               "Continue from the newest checkpoint in OUT_DIR/checkpoints");
  app.add_option("--device", f->device, "cpu, cuda or cuda:N")
      ->capture_default_str();
  return [f]() -> absl::Status {
    absl::StatusOr<JobConfig> parsed =
        JobConfigFromFlags(f->config_file, f->sets);
    if (!parsed.ok()) return parsed.status();
    const JobConfig& config = *parsed;
    absl::StatusOr<torch::Device> device = ParseDevice(f->device);
    if (!device.ok()) return device.status();
    const std::filesystem::path dir(f->out_dir);
    std::error_code ec;
    std::filesystem::create_directories(dir / kCheckpointDirName, ec);
    if (ec) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--out-dir ", f->out_dir, ": cannot create (", ec.message(), ")"));
    }
    MetricsFile file((dir / kMetricsFileName).string());
    ProgressSink sink(&file, config.steps);
    // SIGUSR1 too: Slurm's early warning (--signal=USR1@T) reaches every
    // process of a job step, this one included.
    std::signal(SIGTERM, RequestStopOnSignal);
    std::signal(SIGINT, RequestStopOnSignal);
    std::signal(SIGUSR1, RequestStopOnSignal);
    JobRunOptions options;
    options.device = *device;
    options.resume = f->resume;
    options.trainer.sink = &sink;
    options.trainer.checkpoint_dir = (dir / kCheckpointDirName).string();
    // Run by a worker: stop too when the worker has not renewed the lease
    // in time (lease_file.h).
    SystemClock clock;
    LeaseWatchdog watchdog(f->out_dir, &clock);
    bool lease_ran_out = false;
    options.trainer.stop_requested = [&] {
      if (stop_signalled != 0) return true;
      if (!lease_ran_out && watchdog.Expired()) {
        lease_ran_out = true;
        std::fprintf(stderr,
                     "train: the worker has not renewed this job's lease in "
                     "time (%s); stopping\n",
                     JobPath(f->out_dir, kLeaseFileName).c_str());
      }
      return lease_ran_out;
    };
    absl::Status open_status;
    options.on_start = [&](int64_t step) { open_status = file.Open(step); };
    absl::StatusOr<JobResult> result = RunJob(config, options);
    if (!open_status.ok()) return open_status;
    if (!result.ok()) return result.status();
    const TrainOutcome& t = result->training;
    const TrainResult r = ResultOf(*result, config, *device, lease_ran_out,
                                   (dir / kMetricsFileName).string());
    if (absl::Status s = WriteFileAtomic((dir / kResultFileName).string(),
                                         TrainResultJson(r) + "\n");
        !s.ok()) {
      return s;
    }
    if (t.stopped) {
      std::fprintf(stderr,
                   "train: stopped at step %lld; checkpoint saved, "
                   "continue with --resume\n",
                   static_cast<long long>(t.steps_done));
    }
    return absl::OkStatus();
  };
}

RunFn DefineEval(CLI::App& app) {
  struct Flags {
    std::string checkpoint, device = "cpu";
    int64_t eval_instances = 0;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("--checkpoint", f->checkpoint,
                 "A checkpoint written by lab train")
      ->required();
  app.add_option("--eval-instances", f->eval_instances,
                 "Held-out instances (default: the job's eval_instances)");
  app.add_option("--device", f->device, "cpu, cuda or cuda:N")
      ->capture_default_str();
  return [f]() -> absl::Status {
    absl::StatusOr<torch::Device> device = ParseDevice(f->device);
    if (!device.ok()) return device.status();
    if (f->eval_instances < 0 || f->eval_instances == 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--eval-instances must be >= 2 (got ", f->eval_instances, ")"));
    }
    absl::StatusOr<CheckpointEval> eval =
        EvaluateCheckpoint(f->checkpoint, f->eval_instances, *device);
    if (!eval.ok()) return eval.status();
    // A result as the job would have written it at this checkpoint.
    TrainResult r;
    r.steps_done = eval->state.step;
    r.final_loss = std::numeric_limits<double>::quiet_NaN();  // not known
    r.collapse_step = CollapseOnsetAfterEvaluation(
        eval->state.collapse_onset, eval->state.step,
        eval->evaluation.spread_ratio);
    r.collapsed = r.collapse_step >= 0;
    r.diverged = eval->state.diverged_step >= 0;
    r.diverged_step = eval->state.diverged_step;
    r.config = JobConfigToKeyValues(eval->state.config, KeyListing::kEvery);
    r.evaluation = SummaryOf(eval->evaluation);
    std::cout << TrainResultJson(r) << "\n";
    return absl::OkStatus();
  };
}

RunFn DefineDevices(CLI::App&) {
  return []() -> absl::Status {
    // What this build of LibTorch can use: the worker's --devices auto.
    const int64_t cuda = torch::cuda::is_available()
                             ? static_cast<int64_t>(torch::cuda::device_count())
                             : 0;
    json devices = json::array();
    for (int64_t i = 0; i < cuda; ++i)
      devices.push_back(absl::StrCat("cuda:", i));
    if (cuda == 0) devices.push_back("cpu");
    PrintJson({{"cuda_devices", cuda}, {"devices", devices}});
    return absl::OkStatus();
  };
}

}  // namespace

Command DevicesCommand() {
  return {"devices",
          "The devices this build can train on (JSON; the worker's "
          "--devices auto)",
          DefineDevices};
}

Command TrainCommand() {
  return {kTrainKindName,
          "Train one job locally: metrics.jsonl, checkpoints/, result.json",
          DefineTrain};
}

Command EvalCommand() {
  return {"eval", "Evaluate a checkpoint on held-out instances (JSON)",
          DefineEval};
}

}  // namespace tailsweep::cli
