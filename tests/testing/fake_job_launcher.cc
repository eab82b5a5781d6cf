#include "tests/testing/fake_job_launcher.h"

#include <signal.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include "absl/strings/numbers.h"
#include "core/schema/checkpoint_name.h"
#include "core/schema/job_result.h"
#include "core/schema/metrics_line.h"

namespace tailsweep {

class FakeJobLauncher::Job {
 public:
  Job(const ChildJob& job, int64_t now_ms, std::vector<std::string>* events)
      : dir_(job.dir),
        name_(std::filesystem::path(job.dir).filename().string()),
        start_ms_(now_ms),
        events_(events) {
    for (const auto& [k, v] : job.params) params_[k] = v;
    fake_ = params_["fake"];
    steps_ = Int("steps", 4);
    step_ms_ = Int("step_ms", 100);
    checkpoint_every_ = Int("checkpoint_every", 2);
    nan_at_ = Int("nan_at", 0);
  }

  std::optional<int> exit_code() const { return exit_code_; }

  void Signal(int signal) {
    if (exit_code_) return;
    if (signal == SIGKILL) {
      events_->push_back("kill " + name_);
      exit_code_ = 128 + SIGKILL;
    } else if (signal == SIGTERM) {
      events_->push_back("term " + name_);
      if (fake_ == "no-handler") {
        exit_code_ = 128 + SIGTERM;
      } else if (fake_ != "hang") {
        term_ = true;
      }
    }
  }

  void Advance(int64_t now_ms) {
    if (exit_code_ || fake_ == "hang") return;
    if (newline_due_ms_ && now_ms >= *newline_due_ms_) {
      Append("metrics.jsonl", "\n");
      newline_due_ms_.reset();
    }
    if (term_) {
      if (done_ > 0) Checkpoint(done_);
      Finish(/*stopped=*/true);
      return;
    }
    while (done_ < steps_ && !newline_due_ms_ &&
           now_ms >= start_ms_ + (done_ + 1) * step_ms_) {
      ++done_;
      if (fake_ == "killed-by-term") {
        exit_code_ = 128 + SIGTERM;
        return;
      }
      if ((fake_ == "crash" || fake_ == "garbled-crash") && done_ == 2) {
        Append("stderr.txt",
               fake_ == "crash"
                   ? "Traceback: step 2\nfake: CUDA error: out of memory\n"
                   : "\xff boom \xe2\x82");
        exit_code_ = 1;
        return;
      }
      WriteLine(now_ms);
      if (checkpoint_every_ > 0 && done_ % checkpoint_every_ == 0) {
        Checkpoint(done_);
      }
    }
    if (done_ == steps_ && !newline_due_ms_) Finish(/*stopped=*/false);
  }

 private:
  int64_t Int(const std::string& key, int64_t fallback) {
    int64_t v = 0;
    return absl::SimpleAtoi(params_[key], &v) ? v : fallback;
  }
  void Append(const std::string& file, const std::string& text) {
    std::ofstream(dir_ + "/" + file, std::ios::app) << text;
  }
  void WriteLine(int64_t now_ms) {
    if (fake_ == "torn-line" && done_ == 2) {
      Append("metrics.jsonl", "{\"step\": 2, \"loss\": 0.\n");
      return;
    }
    StepMetrics m;
    m.step = done_;
    m.loss = nan_at_ == done_ ? std::nan("") : 1.0 / done_;
    m.lr = 0.001;
    m.grad_norm =
        nan_at_ == done_ ? std::numeric_limits<double>::infinity() : 0.5;
    m.spread_ratio = 0.9;
    m.step_seconds = 0.1;
    m.attention_entropy = {1.5, 1.25};
    m.attention_max_weight = {0.5, 0.75};
    const std::string line = MetricsLine(m);
    if (fake_ == "slow-metrics") {
      Append("metrics.jsonl", line);
      newline_due_ms_ = now_ms + step_ms_ / 2;
    } else {
      Append("metrics.jsonl", line + "\n");
    }
  }
  void Checkpoint(int64_t step) {
    const std::string path = dir_ + "/checkpoints/" + CheckpointFileName(step);
    std::ofstream(path + ".tmp") << "checkpoint at step " << step;
    std::filesystem::rename(path + ".tmp", path);
  }
  void Finish(bool stopped) {
    if (fake_ != "no-result") {
      TrainResult r;
      r.steps_done = done_;
      r.final_loss = 0.25;
      r.stopped = stopped;
      r.config = {{"steps", std::to_string(steps_)}};
      if (!stopped) {
        EvalSummary e;
        e.ratio_mean = 0.9;
        e.ratio_median = 0.875;
        e.ratio_ci_low = 0.75;
        e.ratio_ci_high = 1.125;
        e.spread_ratio = 0.5;
        e.delta = 0.25;
        e.eval_instances = 8;
        r.evaluation = e;
      }
      std::ofstream(dir_ + "/result.json") << TrainResultJson(r);
    }
    exit_code_ = 0;
  }

  std::string dir_, name_;
  std::map<std::string, std::string> params_;
  std::string fake_;
  int64_t steps_, step_ms_, checkpoint_every_, nan_at_;
  int64_t start_ms_;
  std::vector<std::string>* events_;
  int64_t done_ = 0;  // steps logged
  bool term_ = false;
  std::optional<int64_t> newline_due_ms_;
  std::optional<int> exit_code_;
};

namespace {

class FakeHandle final : public JobHandle {
 public:
  explicit FakeHandle(std::shared_ptr<FakeJobLauncher::Job> job)
      : job_(std::move(job)) {}
  std::optional<int> Poll() override { return job_->exit_code(); }
  void Signal(int signal) override { job_->Signal(signal); }

 private:
  std::shared_ptr<FakeJobLauncher::Job> job_;
};

}  // namespace

FakeJobLauncher::FakeJobLauncher(FakeClock* clock,
                                 std::vector<std::string>* events)
    : clock_(clock), events_(events) {
  clock_->OnAdvance([this](int64_t now) {
    for (const auto& job : jobs_) job->Advance(now);
  });
}

absl::StatusOr<std::unique_ptr<JobHandle>> FakeJobLauncher::Start(
    const ChildJob& job) {
  auto fake = std::make_shared<Job>(job, clock_->SteadyMs(), events_);
  started_.push_back(job);
  events_->push_back("start " +
                     std::filesystem::path(job.dir).filename().string());
  jobs_.push_back(fake);
  return std::make_unique<FakeHandle>(fake);
}

}  // namespace tailsweep
