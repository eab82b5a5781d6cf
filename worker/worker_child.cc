// The worker's side of one job's child (worker.h): starting it (its
// directory, the checkpoint it resumes from, the command its kind gives,
// the early stops its kind asks for), seeing it exit, and stopping it.

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/number_text.h"
#include "core/schema/command_job.h"
#include "core/schema/device_placement.h"
#include "core/schema/file_util.h"
#include "core/schema/job_kinds.h"
#include "worker/worker.h"

namespace tailsweep {

void Worker::Start(const Pending& pending) {
  auto job = std::make_unique<Job>();
  job->id = ++next_id_;
  job->lease = pending.lease;
  job->tag = JobTag(job->lease.job_id, job->lease.epoch);
  job->slots = pending.slots;
  job->dir = JobPath(options_.work_dir, job->lease.job_id);
  job->relay = std::make_unique<MetricsRelay>(
      files_, JobPath(job->dir, kMetricsFileName), job->tag,
      options_.max_batch_points, options_.max_unacked_batches,
      /*generic=*/KindDef(job->lease.kind).contract != nullptr);
  // Renewed a third into the lease, counted from when it began: at once for
  // a lease whose first answers were lost.
  job->next_heartbeat_ms = pending.asked_ms + options_.lease_ms / 3;
  job->lease_until_ms = pending.asked_ms + options_.lease_ms;
  Job& j = *job;
  jobs_.push_back(std::move(job));
  if (absl::Status made = files_->MakeJobDir(j.dir); !made.ok()) {
    j.running = false;
    j.finished.error = std::string(made.message());
    spdlog::error("{}: {}", j.tag, j.finished.error);
    return;
  }
  absl::StatusOr<CheckpointFile> local = files_->NewestCheckpoint(j.dir);
  auto download = std::make_unique<Transfer>();
  download->download = true;
  download->step = local.ok() ? local->step : 0;
  j.starting = true;
  StartTransfer(j, std::move(download));
}

void Worker::WatchKeepMetric(Job& j) {
  const CheckpointKeep& keep = j.lease.outputs.checkpoints;
  if (keep.keep != "best" && keep.keep != "all") return;
  Job* job = &j;
  const std::string metric = keep.metric;
  j.relay->Watch([job, metric](const MetricPoint& p) {
    if (p.name == metric && std::isfinite(p.value)) {
      job->keep_values[p.step] = p.value;
    }
  });
}

void Worker::WatchForEarlyStop(Job& j, const ChildRules& rules) {
  j.early = std::make_unique<EarlyStop>(rules);
  Job* job = &j;
  j.relay->Watch([this, job](const MetricPoint& p) {
    if (!job->running) return;
    EarlyStop& early = *job->early;
    const EarlyStop::Seen seen = early.Observe(p);
    if (seen == EarlyStop::Seen::kNothing) return;
    if (seen != EarlyStop::Seen::kStop) {
      spdlog::info("{}: outcome '{}' holds at step {} ({} = {}){}", job->tag,
                   early.outcome(), p.step, p.name, p.value,
                   early.after_steps() == 0
                       ? "; stopping it early (stop_on)"
                       : absl::StrCat("; it stops ", early.after_steps(),
                                      " steps later (stop_after_steps)"));
    }
    if (seen == EarlyStop::Seen::kOnset) return;
    if (seen == EarlyStop::Seen::kStop) {
      spdlog::info("{}: step {}, {} after '{}' first held: stopping it early",
                   job->tag, p.step, early.after_steps(), early.outcome());
    }
    if (job->handle && !job->stop_sent) {
      job->handle->Signal(SIGTERM);
      job->stop_sent = true;
      job->stop_sent_ms = clock_->SteadyMs();
    }
  });
}

void Worker::Launch(Job& j, int64_t local_step, const absl::Status& download,
                    int64_t stored) {
  if (download.ok()) {
    j.uploaded_step = stored;
  } else if (!absl::IsNotFound(download) && j.running) {
    spdlog::warn("{}: no checkpoint downloaded ({}); it starts from step {}",
                 j.tag, std::string(download.message()), local_step);
  }
  const JobKindDef& kind = KindDef(j.lease.kind);
  if (kind.contract != nullptr) {
    // A downloaded checkpoint is a bundle of the child's step-N/ directory.
    if (absl::Status s = files_->UnpackCheckpoints(j.dir); !s.ok()) {
      spdlog::warn("{}: {}", j.tag, std::string(s.message()));
    }
  }
  const int64_t from = std::max(local_step, download.ok() ? stored : 0);
  j.resumed_from = from;
  // The child keeps metrics.jsonl up to the step it resumes from; so does
  // this, first, or the relay could send an earlier attempt's lines past it
  // under this lease (they would then stand for this attempt's).
  if (absl::Status kept =
          files_->KeepMetricsUpTo(JobPath(j.dir, kMetricsFileName), from);
      !kept.ok()) {
    spdlog::warn("{}: {}", j.tag, std::string(kept.message()));
  }
  if (!j.running) return;  // stopped (or its lease ran out) meanwhile
  if (from > 0) {
    spdlog::info("{} resumes from step {} ({} checkpoint)", j.tag, from,
                 stored > local_step ? "the coordinator's" : "its local");
  }
  ChildJob child;
  child.lab_bin = options_.lab_bin;
  child.kind = std::string(JobKindName(j.lease.kind));
  child.params = j.lease.params;
  // The first slot's device; a job of several GPUs sees all of them (the
  // first is its cuda:0), one of several CPU slots gets all their threads.
  child.device = SlotDevice(j.slots.front());
  child.threads = options_.threads_per_slot * static_cast<int>(j.slots.size());
  child.dir = j.dir;
  child.job_id = j.lease.job_id;
  child.attempt = j.lease.attempt;
  child.resume_step = from;
  const ChildRules rules =
      kind.contract ? kind.contract->rules(j.lease.params) : ChildRules{};
  j.stop_grace_ms = rules.stop_grace_ms;
  if (!rules.stop_on.empty()) WatchForEarlyStop(j, rules);
  WatchKeepMetric(j);
  if (absl::StartsWith(child.device, "cuda:")) {
    std::vector<std::string> visible;
    for (const std::string& slot : j.slots) {
      absl::StatusOr<std::string> one =
          VisibleDeviceFor(options_.allocation, SlotDevice(slot));
      if (!one.ok()) {
        j.running = false;
        j.finished.error = std::string(one.status().message());
        spdlog::error("{} failed: {}", j.tag, j.finished.error);
        return;
      }
      visible.push_back(*one);
    }
    child.visible_devices = absl::StrJoin(visible, ",");
  }
  j.checkpoint_seen_ms = clock_->SteadyMs();
  j.checkpoint_seen_step = from;
  TellChildTheLease(j);
  absl::StatusOr<std::unique_ptr<JobHandle>> handle = launcher_->Start(child);
  if (!handle.ok()) {
    j.running = false;
    j.finished.error =
        absl::StrCat("cannot start the job: ", handle.status().message());
    spdlog::error("{} failed: {}", j.tag, j.finished.error);
    return;
  }
  j.handle = *std::move(handle);
  j.launched_ms = clock_->SteadyMs();
}

void Worker::Exited(Job& job, int exit_code) {
  job.running = false;
  // Its logs and artifacts go up before its outcome is reported (Plan).
  job.outputs_pending = files_->HasAttemptFiles(job.dir, job.lease.outputs);
  job.finished = files_->ReadFinished(std::string(JobKindName(job.lease.kind)),
                                      job.dir, exit_code);
  // Stopped by its lease watchdog (the child says so), not by a signal.
  if (job.finished.lease_ran_out) job.lapsed = true;
  // Ended early by a stop_on outcome or the sweep's stop rule: done,
  // whatever its exit (it was asked to stop).
  if (!job.stopped_early_for.empty() ||
      (job.early && !job.early->stopped_for().empty())) {
    job.finished.outcome = JobOutcome::kDone;
    job.finished.error.clear();
    absl::StatusOr<std::string> result =
        ReadFile(JobPath(job.dir, kResultFileName));
    job.finished.result_json = result.ok() ? *result : "null";
    spdlog::info("{} ended early: {}", job.tag,
                 job.stopped_early_for.empty() ? job.early->stopped_for()
                                               : job.stopped_early_for);
    return;
  }
  // Stopped for its timeout: a failed attempt (unless it finished first).
  if (job.timed_out && job.finished.outcome != JobOutcome::kDone) {
    job.finished.outcome = JobOutcome::kFailed;
    job.finished.error =
        absl::StrCat("timed out after ", FormatDouble(job.lease.timeout_s),
                     " s (the sweep's timeout_s)",
                     job.group_killed ? "; killed after its stop grace" : "");
    spdlog::warn("{} failed: {}", job.tag, job.finished.error);
    return;
  }
  // Asked to stop, then killed when its grace ran out: still a stop (the
  // job was preempted), not the job's failure.
  if (job.stop_sent && exit_code == 128 + SIGKILL &&
      job.finished.outcome == JobOutcome::kFailed) {
    job.finished.outcome = JobOutcome::kStopped;
    job.finished.error =
        "killed after its stop grace period (it ignored SIGTERM)";
  }
  if (job.finished.outcome == JobOutcome::kFailed) {
    // A job that failed because this machine's disk filled up is not the
    // job's fault: it goes back uncounted (after its newest checkpoint),
    // to run again here or elsewhere once there is room.
    const absl::StatusOr<int64_t> free = files_->FreeBytes(job.dir);
    if (free.ok() && *free < kLowDiskBytes) {
      job.give_back_reason =
          absl::StrCat("the worker's work directory ", options_.work_dir,
                       " is full (", Megabytes(*free),
                       " free); the job failed there: ", job.finished.error);
      job.finished.outcome = JobOutcome::kStopped;
      job.finished.error = job.give_back_reason;
    }
  }
  switch (job.finished.outcome) {
    case JobOutcome::kFailed:
      spdlog::warn("{} failed: {}", job.tag, job.finished.error);
      break;
    case JobOutcome::kDone:
      spdlog::info("{} finished", job.tag);
      break;
    case JobOutcome::kStopped:
      spdlog::info(
          "{} stopped ({}); its lease goes back after its newest "
          "checkpoint, if any",
          job.tag,
          job.lapsed                   ? "its lease ran out"
          : job.finished.error.empty() ? "checkpointed"
                                       : job.finished.error);
      break;
  }
}

void Worker::KillAfterGrace(Job& job) {
  if (!job.running || !job.handle || !job.stop_sent || job.stop_grace_ms < 0 ||
      job.group_killed ||
      clock_->SteadyMs() - job.stop_sent_ms <= job.stop_grace_ms) {
    return;
  }
  spdlog::warn(
      "{}: still running {} ms after SIGTERM; killing its process "
      "group",
      job.tag, job.stop_grace_ms);
  job.handle->Signal(SIGKILL);
  job.group_killed = true;  // once
}

void Worker::StopEarly(Job& job, const std::string& why) {
  if (!job.running || !job.handle || job.stop_sent ||
      !job.stopped_early_for.empty()) {
    return;
  }
  spdlog::info("{}: stopping it early: {}", job.tag, why);
  job.stopped_early_for = why;
  job.handle->Signal(SIGTERM);
  job.stop_sent = true;
  job.stop_sent_ms = clock_->SteadyMs();
}

void Worker::StopIfTimedOut(Job& job) {
  // A kind with no stop grace of its own (train, tails) gets this long to
  // checkpoint and exit after SIGTERM.
  constexpr int64_t kTimeoutGraceMs = 30000;
  if (!job.running || !job.handle || job.stop_sent ||
      job.lease.timeout_s <= 0 ||
      clock_->SteadyMs() - job.launched_ms <=
          static_cast<int64_t>(job.lease.timeout_s * 1000)) {
    return;
  }
  spdlog::warn("{}: timed out after {} s (timeout_s); stopping it", job.tag,
               FormatDouble(job.lease.timeout_s));
  job.timed_out = true;
  if (job.stop_grace_ms < 0) job.stop_grace_ms = kTimeoutGraceMs;
  job.handle->Signal(SIGTERM);
  job.stop_sent = true;
  job.stop_sent_ms = clock_->SteadyMs();
}

void Worker::KillNow(Job& job) {
  if (!job.running || !job.handle) return;
  job.handle->Signal(SIGKILL);
  std::optional<int> code;
  while (!(code = job.handle->Poll())) clock_->SleepMs(10);
  job.running = false;
  spdlog::warn("{} killed ({})", job.tag,
               job.fenced ? "its lease is gone" : "stopped now");
}

}  // namespace tailsweep
