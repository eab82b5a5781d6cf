#include "coordinator/notices.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/number_text.h"

namespace tailsweep {
namespace {

// No job is stalled sooner than this (stall_after_s's least).
constexpr int64_t kMinStallMs = 60 * 1000;

}  // namespace

Notices::Notices(Store* store, Clock* clock, Notifier* notifier,
                 NoticesOptions options)
    : store_(store),
      clock_(clock),
      notifier_(notifier),
      options_(std::move(options)) {}

bool Notices::Enabled(const RunOutputs& outputs) const {
  return notifier_ != nullptr &&
         (!outputs.notify.empty() || !options_.everywhere.empty());
}

void Notices::Tell(const std::string& sweep, const RunOutputs& outputs,
                   Notice n) {
  n.sweep = sweep;
  n.at_ms = clock_->WallMs();
  if (!options_.report_base.empty()) {
    n.link = absl::StrCat(options_.report_base, "/sweeps/", sweep);
  }
  for (const std::vector<NotifyTarget>* targets :
       {&outputs.notify, &options_.everywhere}) {
    for (const NotifyTarget& t : *targets) {
      if (Wants(t, n.kind)) notifier_->Send(t, n);
    }
  }
}

void Notices::MaybeSweepDone(const std::string& sweep,
                             const RunOutputs& outputs) {
  absl::StatusOr<JobCounts> counts = store_->Counts(sweep);
  if (!counts.ok() || counts->Of(JobState::kQueued) > 0 ||
      counts->Of(JobState::kLeased) > 0) {
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_told_.insert(sweep).second) return;  // told already
  }
  Notice n;
  n.kind = "sweep_done";
  n.reason = absl::StrCat(counts->Of(JobState::kDone), " done, ",
                          counts->Of(JobState::kFailed), " failed, ",
                          counts->Of(JobState::kCancelled), " cancelled");
  Tell(sweep, outputs, n);
}

void Notices::JobEnded(const std::string& job_id, const std::string& kind,
                       const std::string& reason) {
  absl::StatusOr<std::vector<Store::SweepOutputs>> sweeps =
      store_->SweepsOfJob(job_id);
  if (!sweeps.ok()) return;
  for (const Store::SweepOutputs& s : *sweeps) {
    if (!Enabled(s.outputs)) continue;
    Notice n;
    n.kind = kind;
    n.job_id = job_id;
    n.reason = reason.substr(0, 500);
    Tell(s.sweep, s.outputs, n);
    MaybeSweepDone(s.sweep, s.outputs);
  }
}

void Notices::JobDone(const std::string& job_id) {
  Ended(job_id);
  if (notifier_ != nullptr) JobEnded(job_id, "done", "");
}

void Notices::JobFailed(const std::string& job_id, const std::string& error) {
  Ended(job_id);
  if (notifier_ == nullptr) return;
  absl::StatusOr<JobRow> job = store_->Job(job_id);
  if (!job.ok() || job->state != JobState::kFailed) return;  // retried
  JobEnded(job_id, "failed", error);
}

void Notices::SweepReopened(const std::string& sweep) {
  std::lock_guard<std::mutex> lock(mu_);
  done_told_.erase(sweep);
}

void Notices::Progress(const std::string& job_id, int64_t epoch) {
  if (notifier_ == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  Watch& w = running_[job_id];
  if (w.epoch != epoch) w = Watch{epoch, 0, 0, false};
  w.last_ms = clock_->WallMs();
  w.check_ms = w.last_ms + kMinStallMs;
}

void Notices::Ended(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  running_.erase(job_id);
}

void Notices::Scan() {
  if (notifier_ == nullptr) return;
  const int64_t now = clock_->WallMs();
  std::vector<std::pair<std::string, Watch>> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [job_id, w] : running_) {
      if (!w.told && now >= w.check_ms) due.emplace_back(job_id, w);
    }
  }
  for (const auto& [job_id, w] : due) {
    absl::StatusOr<JobRow> job = store_->Job(job_id);
    absl::StatusOr<std::vector<Store::SweepOutputs>> sweeps =
        store_->SweepsOfJob(job_id);
    if (!job.ok() || job->state != JobState::kLeased || job->epoch != w.epoch ||
        !sweeps.ok()) {
      Ended(job_id);  // no longer running as watched
      continue;
    }
    // The soonest any of its sweeps calls it stalled.
    double after_s = 0;
    const Store::SweepOutputs* first = nullptr;
    for (const Store::SweepOutputs& s : *sweeps) {
      if (!Enabled(s.outputs)) continue;
      const double a = s.outputs.notify.empty() ? options_.stall_after_s
                                                : s.outputs.stall_after_s;
      if (first == nullptr || a < after_s) {
        after_s = a;
        first = &s;
      }
    }
    const int64_t stall_ms = w.last_ms + static_cast<int64_t>(after_s * 1000);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = running_.find(job_id);
      if (it == running_.end() || it->second.epoch != w.epoch ||
          it->second.last_ms != w.last_ms) {
        continue;  // a point came meanwhile
      }
      if (first == nullptr || now < stall_ms) {
        it->second.check_ms = first == nullptr ? INT64_MAX : stall_ms;
        continue;
      }
      it->second.told = true;
    }
    Notice n;
    n.kind = "stalled";
    n.job_id = job_id;
    n.reason = absl::StrCat("no metric point for ",
                            FormatDouble((now - w.last_ms) / 1000.0),
                            " s (stall_after_s ", FormatDouble(after_s), ")");
    for (const Store::SweepOutputs& s : *sweeps) {
      if (Enabled(s.outputs)) Tell(s.sweep, s.outputs, n);
    }
  }
}

}  // namespace tailsweep
