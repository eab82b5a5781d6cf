#ifndef TAILSWEEP_WORKER_WORKER_H_
#define TAILSWEEP_WORKER_WORKER_H_

// The worker daemon's loop: lease a job per free slot, run each in its own
// child process (`tailsweep lab train` or `lab tails`), heartbeat its lease,
// relay its metrics, checkpoints and result, and stop it when its lease is
// fenced (FAILED_PRECONDITION, PERMISSION_DENIED, NOT_FOUND) or cancelled.
//
// Three roles, as in Ninja: the plan (plan.h: what to do next, pure), the
// launcher (job_launcher.h: starts and signals children) and the metrics
// relay (metrics_relay.h: metrics.jsonl to numbered batches). This class
// owns the jobs' state, asks the plan, and carries its actions out through
// the coordinator client (coordinator_client.h), the launcher and the job
// files (job_files.h), all injected.
//
// A cell never runs twice at once: each job's lease is also tracked on the
// worker's own steady clock, from when the last successful renewal was
// sent. Its child is told (the lease watchdog file) to stop a margin before
// that lease runs out, and is killed when it does, so a worker frozen or cut
// off from the coordinator has stopped the job before the coordinator,
// which waits a grace past its own later deadline, leases it to anyone
// else. Such a job then counts as stopped: its checkpoint is uploaded and
// its lease given back once the coordinator answers (or it is fenced).
//
// Nothing is lost while the coordinator is unreachable:
// - metrics are read from the job's metrics.jsonl (on disk) into numbered
//   batches; at most `max_unacked_batches` unacknowledged batches are held in
//   memory and resent in order, the rest waits in the file;
// - a checkpoint is uploaded only once every metric logged before it is
//   acknowledged, so resuming from it elsewhere loses no point;
// - a finished job keeps its lease alive (heartbeats) until its metrics and
//   then its result are acknowledged;
// - calls back off exponentially with jitter while the coordinator is
//   unreachable, and carry on when it answers again.
//
// Checkpoint transfers (the download before a job starts, uploads while it
// runs and after it stopped) run as tasks of the injected TaskRunner, off
// the loop: a slow or large transfer delays no other slot's heartbeats, nor
// its own job's. A job waits for its transfer before it starts (download)
// or is reported (upload); one transfer per job at a time.
//
// The loop is single-threaded; every RPC has a deadline or, for
// transfers, a progress deadline. Not thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/schema/checkpoint_name.h"
#include "core/schema/clock.h"
#include "core/schema/job_kinds.h"
#include "core/schema/job_lease.h"
#include "core/schema/job_protocol.h"
#include "worker/allocation.h"
#include "worker/coordinator_client.h"
#include "worker/early_stop.h"
#include "worker/gpus.h"
#include "worker/job_files.h"
#include "worker/job_launcher.h"
#include "worker/metrics_relay.h"
#include "worker/plan.h"
#include "worker/task_runner.h"

namespace tailsweep {

struct WorkerOptions {
  std::string worker_id;  // stable per daemon, e.g. host-pid
  // The executable that runs jobs: tailsweep-lab (or tailsweep, which
  // hands `lab` over to it).
  std::string lab_bin;
  std::string work_dir;  // one subdirectory per job
  std::string token;     // bearer token sent on every call; "": none
  std::vector<std::string> devices = {"cpu"};  // cpu or cuda:N
  // What the worker was given (allocation.h): cuda:N is its N-th GPU, and
  // leasing stops before the end (below).
  Allocation allocation;
  int slots_per_device = 1;
  int threads_per_slot = 1;
  // The calls' defaults are the client's (coordinator_client.h).
  int64_t lease_ms = CoordinatorClientOptions{}.lease_ms;
  // The job's child is told to stop (lease watchdog) this long before the
  // lease runs out on the worker's clock; the worker kills it at the end.
  // 0 < lease_margin_ms < lease_ms.
  int64_t lease_margin_ms = 5000;
  int64_t poll_ms = 200;
  int64_t rpc_timeout_ms = CoordinatorClientOptions{}.rpc_timeout_ms;
  // Reconnect backoff while the coordinator is unreachable.
  int64_t backoff_base_ms = CoordinatorClientOptions{}.backoff_base_ms;
  int64_t backoff_cap_ms = CoordinatorClientOptions{}.backoff_cap_ms;
  // Metric batches in memory per job, and points per batch.
  int max_unacked_batches = 16;
  int max_batch_points = 5000;
  // After SIGTERM or SIGUSR1: how long jobs may take to checkpoint and be
  // reported.
  int64_t shutdown_grace_ms = 30000;
  // With an allocation end: no job is leased once the end is nearer than
  // this, or than the longest a job here has run without a new checkpoint
  // (whichever is longer), and the worker exits when its last job is
  // reported.
  int64_t end_margin_ms = 600000;
  // Exit when no job runs here and the coordinator says no job is queued or
  // leased anywhere (tests, scripts, Slurm arrays).
  bool exit_when_idle = false;
  // The newest GPU sample and its number (GpuSampler::Latest, gpus.h);
  // empty: none taken. Each new sample becomes system/gpu_* points of the
  // running jobs on those GPUs, at the step of the seconds since the
  // attempt's child started.
  std::function<int64_t(std::vector<GpuSample>*)> gpu_samples;
};

class Worker {
 public:
  // Below this much free space in the work directory, the worker leases
  // nothing, and a job that failed there is given back uncounted (the
  // disk's fault, not the job's).
  static constexpr int64_t kLowDiskBytes = int64_t{16} << 20;

  // Every collaborator must outlive the worker.
  Worker(CoordinatorLink* link, Clock* clock, JobLauncher* launcher,
         JobFiles* files, TaskRunner* tasks, WorkerOptions options);

  // Runs until `stop_signal` holds a signal number: SIGTERM or SIGINT
  // (preemption) or SIGUSR1 (drain: Slurm's early warning). Then it leases
  // nothing more and sends SIGTERM to running jobs, which checkpoint and
  // exit; their checkpoints are uploaded and their leases given back
  // uncounted, for at most shutdown_grace_ms. Also returns when idle if
  // asked, and once the allocation's end is near and no job is held.
  void Run(const std::atomic<int>& stop_signal);

  int64_t jobs_completed() const { return completed_; }
  int64_t jobs_failed() const { return failed_; }

 private:
  // A checkpoint transfer in flight, run as a task: it writes `status` and
  // `stored_step`, read once the task is done.
  struct Transfer {
    bool download = false;
    bool outputs = false;  // the attempt's files (UploadJobFile), not a
                           // checkpoint
    // Upload: the metric at its step, when it is sent to be kept for it.
    std::optional<double> keep_metric;
    std::vector<std::string> notes;  // outputs: what was not sent, and why
    int64_t step = 0;  // upload: the checkpoint's; download: the local one
    TransferCancel cancel;
    absl::Status status;
    int64_t stored_step = 0;
    std::unique_ptr<BackgroundTask> task;
    // Cuts the call off and waits for the task.
    ~Transfer() {
      cancel.Cancel();
      task.reset();
    }
  };
  struct Job {
    int64_t id = 0;
    JobLease lease;
    std::string tag;                 // JobTag, for logs
    std::vector<std::string> slots;  // one per device it asked for
    std::string dir;
    std::unique_ptr<JobHandle> handle;  // null until started
    bool running = true;
    // Leased, its checkpoint being downloaded, its child not started yet.
    bool starting = false;
    FinishedJob finished;  // once !running
    std::unique_ptr<MetricsRelay> relay;
    std::optional<CheckpointFile> checkpoint;  // newest local one
    int64_t uploaded_step = 0;                 // newest the coordinator has
    int64_t next_heartbeat_ms = 0;
    int64_t lease_until_ms = 0;  // steady; see the class comment
    // Steady time of its start or newest checkpoint, and that step.
    int64_t checkpoint_seen_ms = 0;
    int64_t checkpoint_seen_step = 0;
    // Steady time its child started, and the GPU sample last relayed.
    int64_t launched_ms = 0;
    int64_t gpu_sample_seq = 0;
    bool lapsed = false;  // killed when its lease ran out here
    // Why it is given back uncounted, when not preempted or lapsed (its
    // work directory filled up).
    std::string give_back_reason;
    // Its metrics were refused for good: it was stopped, and is reported
    // failed without waiting for them.
    bool metrics_refused = false;
    bool fenced = false;  // the lease is gone: stop, report nothing
    bool stop_sent = false;
    // Command jobs: the step this attempt resumed from, and how long its
    // child may take after SIGTERM before its process group is killed
    // (-1: no limit but the shutdown's, train and tails).
    int64_t resumed_from = 0;
    int64_t stop_grace_ms = -1;
    bool group_killed = false;  // SIGKILL sent once the grace was over
    int64_t stop_sent_ms = 0;
    // Why the coordinator's stop rule stopped it (asha: ...); "" if not.
    // Stopped so, the job is done, ended early (as for `early`).
    std::string stopped_early_for;
    // Stopped for running past the sweep's timeout_s (lease.timeout_s):
    // the attempt fails, whatever its exit but done.
    bool timed_out = false;
    // Its early stop (stop_on rules), watched on its points; null: none.
    // Stopped for an outcome, the job is done, ended early.
    std::unique_ptr<EarlyStop> early;
    bool result_points_queued = false;
    // Its ended attempt's logs and artifacts wait to be sent (before its
    // report).
    bool outputs_pending = false;
    // What that upload left out, and why: the report carries them.
    std::vector<std::string> not_kept;
    // Its report was refused by the coordinator (Refused): the next one
    // carries only what is required (no stderr tail, no not_kept).
    bool bare_report = false;
    // `checkpoints: {keep: best | all}`: the metric's values by step since
    // the last checkpoint sent (and the one at or before it), and the
    // best value sent to be kept this attempt.
    std::map<int64_t, double> keep_values;
    std::optional<double> best_kept;
    // How much of stdout and stderr heartbeats have carried.
    int64_t live_sent[2] = {0, 0};
    bool done = false;                   // reported or dropped: forget it
    std::unique_ptr<Transfer> transfer;  // last: destroyed first
  };
  struct Pending {
    JobLease lease;
    // When the LeaseJobs call was first sent (steady): the lease began by
    // then, whatever answer was lost before this one.
    int64_t asked_ms = 0;
    std::vector<std::string> slots;
    bool started = false;
  };

  // Reads what changed: exits, newest checkpoints, new metric lines.
  void Refresh();
  // Refresh, then plan and act until the plan is empty.
  void Round();
  PlanInput View();
  // Whether the allocation's end is too near to lease another job.
  bool TooNearTheEnd();
  void Execute(const Action& action);
  void Lease(const std::vector<std::string>& slots);
  void Start(const Pending& pending);
  // Starts the child once its checkpoint download is over.
  void Launch(Job& job, int64_t local_step, const absl::Status& download,
              int64_t stored);
  // Stops `job`'s child early once one of `rules.stop_on` holds at a
  // logged point (`stop_after_steps` steps after it first did).
  void WatchForEarlyStop(Job& job, const ChildRules& rules);
  // Runs `transfer` for `job` as a task (inline runners finish it at once).
  void StartTransfer(Job& job, std::unique_ptr<Transfer> transfer);
  // Acts on a transfer's answer once its task is done.
  void TransferEnded(Job& job);
  void Uploaded(Job& job, const Transfer& transfer);
  void Exited(Job& job, int exit_code);
  void KillNow(Job& job);
  // SIGKILL to a child still running its stop_grace_ms after SIGTERM.
  void KillAfterGrace(Job& job);
  // SIGTERM to a running child its sweep's stop rule stopped (`why`).
  void StopEarly(Job& job, const std::string& why);
  // SIGTERM to a child running past its lease's timeout_s (its grace, or
  // kTimeoutGraceMs for a kind with none, then SIGKILL).
  void StopIfTimedOut(Job& job);
  // Writes the job's lease watchdog from its lease_until_ms.
  void TellChildTheLease(Job& job);
  void Heartbeat(Job& job);
  // What the job's stdout and stderr grew by, for its heartbeat.
  std::vector<WorkerApi::Output> LiveOutput(const Job& job) const;
  void UploadOutputs(Job& job);
  // The metric's value at checkpoint `step` when the sweep keeps
  // checkpoints for it and this one is a candidate (keep: all, or better
  // than the best sent); nullopt otherwise.
  std::optional<double> KeepMetric(const Job& job, int64_t step) const;
  // Records the keep metric's points (checkpoints: keep best | all).
  void WatchKeepMetric(Job& j);
  void SendMetrics(Job& job);
  // A new GPU sample's points for a running job on GPUs, as one batch.
  void RelayGpuSample(Job& job);
  void QueueResult(Job& job);
  void Upload(Job& job);
  void Report(Job& job, Action::Kind kind);
  // Fails the job for good with `error` (a retry would meet it again) and
  // reports that instead.
  void FailForGood(Job& job, std::string error);
  void Fence(Job& job, const char* what, const absl::Status& status);
  Job* Find(int64_t id);

  Clock* clock_;
  JobLauncher* launcher_;
  JobFiles* files_;
  TaskRunner* tasks_;
  const WorkerOptions options_;
  CoordinatorClient client_;
  std::vector<std::string> slots_;
  std::vector<std::unique_ptr<Job>> jobs_;  // in lease order
  std::vector<Pending> pending_;
  int64_t next_id_ = 0;
  int64_t next_lease_ms_ = 0;
  bool shutting_down_ = false;
  std::string stop_reason_;  // e.g. "preempted (SIGTERM)"
  // The allocation's end is too near for another job (WorkerOptions).
  bool leasing_closed_ = false;
  // The work directory has less than kLowDiskBytes free: nothing is
  // leased until it has room again (said once each way).
  bool disk_low_ = false;
  int64_t longest_checkpoint_gap_ms_ = 0;
  bool idle_ = false;
  std::vector<GpuSample> gpu_samples_;  // scratch for RelayGpuSample
  int64_t completed_ = 0;
  int64_t failed_ = 0;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_WORKER_H_
