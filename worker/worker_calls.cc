// The worker's calls about one job (worker.h): renewing its lease and
// telling the child, relaying metrics, uploading checkpoints, reporting the
// outcome, and what their answers mean for the job.

#include <spdlog/spdlog.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/schema/disk_space.h"
#include "core/schema/job_kinds.h"
#include "core/schema/job_result.h"
#include "core/schema/utf8.h"
#include "worker/worker.h"

namespace tailsweep {
namespace {

// FailJob's error carries this much of the end of stderr; both reports
// carry kStderrTailBytes of it as stderr_tail.
constexpr int64_t kErrorStderrBytes = 2000;
constexpr int64_t kStderrTailBytes = 8 * 1024;
// A heartbeat carries at most this much of each of stdout and stderr.
constexpr int64_t kLiveOutputBytes = 64 * 1024;

}  // namespace

void Worker::Fence(Job& job, const char* what, const absl::Status& status) {
  spdlog::warn("{}: {}: lease gone ({}); the job is killed and not reported",
               job.tag, what, std::string(status.message()));
  job.fenced = true;
}

void Worker::TellChildTheLease(Job& job) {
  const absl::Status s = files_->WriteLease(
      job.dir, job.lease_until_ms - options_.lease_margin_ms);
  if (!s.ok()) {
    // The worker still kills the job when the lease runs out.
    spdlog::warn("{}: lease watchdog not written: {}", job.tag,
                 std::string(s.message()));
  }
}

std::vector<WorkerApi::Output> Worker::LiveOutput(const Job& job) const {
  std::vector<WorkerApi::Output> out;
  const char* files[2] = {kStdoutFileName, kStderrFileName};
  const char* names[2] = {"stdout", "stderr"};
  for (int i = 0; i < 2; ++i) {
    const std::string path = JobPath(job.dir, files[i]);
    FileChunk chunk =
        files_->ReadFrom(path, job.live_sent[i], kLiveOutputBytes);
    if (!chunk.exists || chunk.bytes.empty()) continue;
    int64_t offset = job.live_sent[i];
    if (chunk.size - offset > kLiveOutputBytes) {  // only the newest
      offset = chunk.size - kLiveOutputBytes;
      chunk = files_->ReadFrom(path, offset, kLiveOutputBytes);
    }
    out.push_back({names[i], offset, std::move(chunk.bytes)});
  }
  return out;
}

void Worker::Heartbeat(Job& job) {
  const int64_t sent = clock_->SteadyMs();
  std::vector<WorkerApi::Output> output = LiveOutput(job);
  const absl::Status status = client_.Heartbeat(job.lease, output);
  if (status.ok()) {
    for (const WorkerApi::Output& o : output) {
      job.live_sent[o.stream == "stdout" ? 0 : 1] =
          o.offset + static_cast<int64_t>(o.data.size());
    }
  }
  if (absl::IsCancelled(status) && !job.running &&
      job.finished.outcome == JobOutcome::kDone) {
    // Cancelled after it finished: the coordinator still takes the result
    // of the live lease (done wins), so deliver it; nothing needs renewing.
    spdlog::info("{}: cancelled after it finished; its result goes in",
                 job.tag);
    job.next_heartbeat_ms = clock_->SteadyMs() + options_.lease_ms / 3;
    return;
  }
  if (LeaseGone(status)) return Fence(job, "heartbeat", status);
  if (status.ok()) {
    job.lease_until_ms = sent + options_.lease_ms;
    if (job.running) TellChildTheLease(job);
  }
  if (!status.ok() && !Unreachable(status)) {
    spdlog::warn("{}: lease not renewed: {}", job.tag,
                 std::string(status.message()));
  }
  job.next_heartbeat_ms =
      clock_->SteadyMs() +
      (status.ok() ? options_.lease_ms / 3 : options_.poll_ms);
}

void Worker::SendMetrics(Job& job) {
  std::string stop_early;
  const absl::Status status =
      client_.ReportMetrics(job.lease, job.relay->front(), &stop_early);
  if (status.ok()) {
    job.relay->PopFront();
    if (!stop_early.empty()) StopEarly(job, stop_early);
  } else if (LeaseGone(status)) {
    Fence(job, "metrics", status);
  } else if (absl::IsResourceExhausted(status) && job.relay->SplitFront()) {
    // Larger than the coordinator takes (--max-message-bytes): in halves.
    spdlog::info("{}: metric batch {} too large ({}); sent in halves", job.tag,
                 job.relay->front().seq, std::string(status.message()));
  } else if (!Unreachable(status)) {
    // Refused for good (unauthenticated, invalid, a point too large):
    // resending cannot help and dropping would lose points silently. The
    // job stops and is reported failed with the reason.
    const std::string why = absl::StrCat(
        "the coordinator refused metric batch ", job.relay->front().seq, ": ",
        std::string(status.message()));
    spdlog::error("{}: {}; the job is stopped", job.tag, why);
    KillNow(job);
    job.metrics_refused = true;
    job.finished = FinishedJob{JobOutcome::kFailed, "", why};
  }
}

void Worker::QueueResult(Job& job) {
  job.result_points_queued = true;
  const JobKindDef& def = KindDef(job.lease.kind);
  if (def.result_points) {
    job.relay->AddBatch(def.result_points(job.finished.result_json));
  }
}

void Worker::StartTransfer(Job& job, std::unique_ptr<Transfer> transfer) {
  Transfer* t = transfer.get();
  job.transfer = std::move(transfer);
  // The task sees copies and its Transfer only, never the job.
  const JobLease lease = job.lease;
  if (t->outputs) {
    const std::string dir = job.dir;
    t->task = tasks_->Start([this, t, lease, dir] {
      AttemptFiles files = files_->PrepareAttemptFiles(dir, lease.outputs);
      t->notes = std::move(files.notes);
      for (const AttemptFile& f : files.files) {
        if (t->cancel.cancelled()) break;
        absl::Status s = client_.UploadJobFile(lease, f, &t->cancel);
        if (!s.ok()) {
          t->notes.push_back(absl::StrCat(f.kind, " ", f.name, " (",
                                          Megabytes(f.original_bytes),
                                          ") not stored: ", s.message()));
          if (t->status.ok()) t->status = s;
        }
      }
    });
  } else if (t->download) {
    const std::string dir = JobPath(job.dir, kCheckpointDirName);
    t->task = tasks_->Start([this, t, lease, dir] {
      t->status = client_.DownloadCheckpoint(lease, dir, t->step,
                                             &t->stored_step, &t->cancel);
    });
  } else {
    const CheckpointFile file = *job.checkpoint;
    t->task = tasks_->Start([this, t, lease, file] {
      t->status = client_.UploadCheckpoint(lease, file, &t->stored_step,
                                           &t->cancel, t->keep_metric);
    });
  }
  if (t->task->done()) TransferEnded(job);
}

void Worker::TransferEnded(Job& job) {
  const std::unique_ptr<Transfer> t = std::move(job.transfer);
  if (job.fenced) return;
  if (t->outputs) {
    job.outputs_pending = false;
    for (const std::string& note : t->notes) {
      spdlog::warn("{}: {}", job.tag, note);
    }
    job.not_kept = NotKeptNotes(t->notes);
    if (LeaseGone(t->status)) Fence(job, "upload of its files", t->status);
    return;
  }
  if (t->download) {
    job.starting = false;
    // Cancelled (stopped before it started): no checkpoint came.
    Launch(job, t->step,
           t->cancel.cancelled() ? absl::NotFoundError("cancelled") : t->status,
           t->stored_step);
    return;
  }
  if (!t->cancel.cancelled()) Uploaded(job, *t);
}

void Worker::UploadOutputs(Job& job) {
  auto upload = std::make_unique<Transfer>();
  upload->outputs = true;
  StartTransfer(job, std::move(upload));
}

std::optional<double> Worker::KeepMetric(const Job& job, int64_t step) const {
  const CheckpointKeep& keep = job.lease.outputs.checkpoints;
  if (keep.keep != "best" && keep.keep != "all") return std::nullopt;
  // The metrics line at or before the checkpoint's step.
  auto after = job.keep_values.upper_bound(step);
  if (after == job.keep_values.begin()) return std::nullopt;
  const double value = std::prev(after)->second;
  if (keep.keep == "best" && job.best_kept &&
      !(keep.maximize ? value > *job.best_kept : value < *job.best_kept)) {
    return std::nullopt;
  }
  return value;
}

void Worker::Upload(Job& job) {
  auto upload = std::make_unique<Transfer>();
  upload->step = job.checkpoint->step;
  upload->keep_metric = KeepMetric(job, upload->step);
  StartTransfer(job, std::move(upload));
}

void Worker::Uploaded(Job& job, const Transfer& t) {
  const int64_t step = t.step;
  const int64_t stored = t.stored_step;
  const absl::Status& status = t.status;
  if (status.ok()) {
    job.uploaded_step = std::max(step, stored);
    if (t.keep_metric) job.best_kept = t.keep_metric;
    // Values before the newest one at or before this step are not needed.
    auto at = job.keep_values.upper_bound(step);
    if (at != job.keep_values.begin()) {
      job.keep_values.erase(job.keep_values.begin(), std::prev(at));
    }
  } else if (LeaseGone(status)) {
    Fence(job, "checkpoint upload", status);
  } else if (!Unreachable(status)) {
    spdlog::error("{}: checkpoint {} not stored: {}", job.tag, step,
                  std::string(status.message()));
    job.uploaded_step = step;  // do not retry this one; the next may go
  }
}

void Worker::FailForGood(Job& job, std::string error) {
  job.finished.outcome = JobOutcome::kFailed;
  job.finished.error = std::move(error);
  job.finished.permanent = true;
  Report(job, Action::Kind::kFail);
}

void Worker::Report(Job& job, Action::Kind kind) {
  // A child's stderr may hold any bytes, and a tail may start mid-character:
  // text fields must be UTF-8, or the whole call would not parse.
  std::string tail =
      job.bare_report
          ? ""
          : ValidUtf8(files_->StderrTail(job.dir, kStderrTailBytes));
  const std::vector<std::string> not_kept =
      job.bare_report ? std::vector<std::string>{} : job.not_kept;
  const int64_t skipped = job.relay->skipped_lines();
  if (skipped > 0) {
    // Said in the job's log, where its author looks.
    absl::StrAppend(&tail, tail.empty() || tail.back() == '\n' ? "" : "\n",
                    "[tailsweep-worker] warning: skipped ", skipped,
                    " line(s) of ", kMetricsFileName,
                    " (not a metrics line, or longer than 1 MiB; the worker's "
                    "log names each)\n");
  }
  absl::Status status;
  const char* what = "report";
  if (kind == Action::Kind::kComplete) {
    what = "complete";
    const JobKindDef& def = KindDef(job.lease.kind);
    const std::string result =
        def.contract
            ? def.contract->done_result(
                  {job.finished.result_json, job.resumed_from, skipped,
                   !job.stopped_early_for.empty() ? job.stopped_early_for
                   : job.early                    ? job.early->stopped_for()
                                                  : ""})
            : job.finished.result_json;
    if (static_cast<int64_t>(result.size()) > kMaxResultFileBytes) {
      // Refused by the coordinator every time: failed now, with why.
      return FailForGood(job,
                         ResultTooLarge(static_cast<int64_t>(result.size())));
    }
    status = client_.CompleteJob(job.lease, result, tail, not_kept);
    if (status.ok()) ++completed_;
  } else if (kind == Action::Kind::kFail) {
    what = "fail";
    std::string error = job.finished.error;
    if (!tail.empty()) {
      absl::StrAppend(
          &error, ": ",
          tail.substr(tail.size() -
                      std::min<size_t>(tail.size(), kErrorStderrBytes)));
    }
    status = client_.FailJob(job.lease, ValidUtf8(error), tail, not_kept,
                             job.finished.permanent);
    if (status.ok()) ++failed_;
  } else {
    what = "release";
    status = client_.ReleaseJob(
        job.lease,
        job.lapsed ? "stopped: its lease ran out on the worker"
        : !job.give_back_reason.empty() ? job.give_back_reason
        : stop_reason_.empty()          ? "preempted (SIGTERM)"
                                        : stop_reason_,
        not_kept);
  }
  if (Unreachable(status)) return;  // again next round
  if (Refused(status) && kind == Action::Kind::kComplete) {
    // The same completion would be refused again (a limit of this
    // coordinator's the worker could not see): the job fails now, with why,
    // rather than leaving its lease to run out and be retried.
    spdlog::error("{}: complete refused: {}", job.tag,
                  std::string(status.message()));
    return FailForGood(
        job, absl::StrCat("the coordinator refused the job's result: ",
                          status.message()));
  }
  if (Refused(status) && !job.bare_report) {
    spdlog::error(
        "{}: {} refused ({}); sending it again without its stderr "
        "tail and notes",
        job.tag, what, std::string(status.message()));
    job.bare_report = true;
    return Report(job, kind);
  }
  if (LeaseGone(status)) return Fence(job, what, status);
  if (!status.ok()) {
    spdlog::error("{}: {}: {}", job.tag, what, std::string(status.message()));
  } else {
    spdlog::info("{}: {} acknowledged", job.tag, what);
  }
  job.done = true;
}

}  // namespace tailsweep
