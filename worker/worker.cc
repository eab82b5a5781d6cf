#include "worker/worker.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/schema/device_placement.h"
#include "core/schema/job_kinds.h"
#include "core/schema/logging.h"
#include "worker/slots.h"

namespace tailsweep {
namespace {

// Plans per round at most (each action changes the state; this only
// guards against a bug looping).
constexpr int kMaxPlansPerRound = 1000;

CoordinatorClientOptions ClientOptions(const WorkerOptions& o) {
  CoordinatorClientOptions c;
  c.worker_id = o.worker_id;
  c.token = o.token;
  c.lease_ms = o.lease_ms;
  c.rpc_timeout_ms = o.rpc_timeout_ms;
  c.backoff_base_ms = o.backoff_base_ms;
  c.backoff_cap_ms = o.backoff_cap_ms;
  c.devices = o.devices;
  return c;
}

}  // namespace

Worker::Worker(CoordinatorLink* link, Clock* clock, JobLauncher* launcher,
               JobFiles* files, TaskRunner* tasks, WorkerOptions options)
    : clock_(clock),
      launcher_(launcher),
      files_(files),
      tasks_(tasks),
      options_(std::move(options)),
      client_(link, clock, ClientOptions(options_)),
      slots_(MakeSlots(options_.devices, options_.slots_per_device)) {}

void Worker::Run(const std::atomic<int>& stop_signal) {
  while (stop_signal == 0) {
    Round();
    const bool held = !jobs_.empty() || !pending_.empty();
    if (options_.exit_when_idle && idle_ && !held) return;
    if (leasing_closed_ && !held) {
      spdlog::info("the allocation ends soon and no job is held: exiting");
      return;
    }
    clock_->SleepMs(options_.poll_ms);
  }
  // Preemption or drain: jobs checkpoint on SIGTERM and exit; their
  // checkpoints are uploaded and their leases given back uncounted, so
  // another worker resumes them from there.
  const int signal = stop_signal;
  stop_reason_ = signal == SIGUSR1  ? "drained (SIGUSR1)"
                 : signal == SIGINT ? "preempted (SIGINT)"
                                    : "preempted (SIGTERM)";
  spdlog::info("{}: leasing nothing more; running jobs checkpoint and go back",
               stop_reason_);
  shutting_down_ = true;
  const int64_t deadline = clock_->SteadyMs() + options_.shutdown_grace_ms;
  while (true) {
    Round();
    if (jobs_.empty() && pending_.empty()) return;
    if (clock_->SteadyMs() > deadline) {
      spdlog::error(
          "grace period over; {} job(s) unreported (their leases "
          "will expire)",
          jobs_.size());
      for (auto& job : jobs_) KillNow(*job);
      jobs_.clear();  // cuts off their transfers
      return;
    }
    clock_->SleepMs(std::min<int64_t>(options_.poll_ms, 50));
  }
}

void Worker::Refresh() {
  for (auto& job : jobs_) {
    if (job->transfer && job->transfer->task->done()) TransferEnded(*job);
    if (job->starting) continue;
    if (job->fenced) {
      // Stopping in its grace period (Plan): only its end is watched.
      if (job->running && job->handle && job->handle->Poll()) {
        job->running = false;
        spdlog::info("{} stopped (its lease is gone)", job->tag);
      }
      KillAfterGrace(*job);
      continue;
    }
    if (job->running) {
      if (std::optional<int> code = job->handle->Poll()) Exited(*job, *code);
    }
    StopIfTimedOut(*job);
    KillAfterGrace(*job);
    // The checkpoint is looked at before the metrics are read: every line
    // logged before it is then in this read.
    absl::StatusOr<CheckpointFile> newest = files_->NewestCheckpoint(job->dir);
    job->checkpoint.reset();
    if (newest.ok()) job->checkpoint = *newest;
    if (job->running && newest.ok() &&
        newest->step > job->checkpoint_seen_step) {
      const int64_t now = clock_->SteadyMs();
      longest_checkpoint_gap_ms_ =
          std::max(longest_checkpoint_gap_ms_, now - job->checkpoint_seen_ms);
      job->checkpoint_seen_ms = now;
      job->checkpoint_seen_step = newest->step;
    }
    job->relay->Fill();
    if (job->running) RelayGpuSample(*job);
  }
}

void Worker::RelayGpuSample(Job& job) {
  if (!options_.gpu_samples || !job.handle) return;
  const int64_t seq = options_.gpu_samples(&gpu_samples_);
  if (seq <= job.gpu_sample_seq) return;
  job.gpu_sample_seq = seq;
  // Samples are not worth memory while the coordinator is away: past the
  // bound of unacknowledged batches they are dropped.
  if (static_cast<int>(job.relay->unacked_batches()) >=
      options_.max_unacked_batches) {
    return;
  }
  std::vector<std::string> devices;
  for (const std::string& slot : job.slots) devices.push_back(SlotDevice(slot));
  std::vector<MetricPoint> points =
      GpuPointsFor(options_.allocation, devices, gpu_samples_,
                   (clock_->SteadyMs() - job.launched_ms) / 1000);
  if (!points.empty()) job.relay->AddBatch(std::move(points));
}

void Worker::Round() {
  Refresh();
  for (int i = 0; i < kMaxPlansPerRound; ++i) {
    const PlanInput view = View();
    const std::vector<Action> actions = Plan(view);
    if (actions.empty()) break;
    for (const Action& action : actions) {
      spdlog::debug("action: {}", action.ToString(view));
      Execute(action);
    }
    jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(),
                               [](const auto& j) { return j->done; }),
                jobs_.end());
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                  [](const Pending& p) { return p.started; }),
                   pending_.end());
  }
}

bool Worker::TooNearTheEnd() {
  if (options_.allocation.end_wall_ms <= 0) return false;
  const int64_t margin =
      std::max(options_.end_margin_ms, longest_checkpoint_gap_ms_);
  const int64_t left = options_.allocation.end_wall_ms - clock_->WallMs();
  if (left > margin) return false;
  if (!leasing_closed_) {
    spdlog::info(
        "the allocation ends in {} s, within the {} s a job needs to reach "
        "a checkpoint: leasing nothing more",
        left / 1000, margin / 1000);
  }
  return true;
}

PlanInput Worker::View() {
  PlanInput in;
  in.now_ms = clock_->SteadyMs();
  leasing_closed_ = leasing_closed_ || TooNearTheEnd();
  in.leasing_closed = leasing_closed_;
  in.slots = slots_;
  in.coordinator_ready = client_.ready();
  in.shutting_down = shutting_down_;
  in.next_lease_ms = next_lease_ms_;
  for (const auto& job : jobs_) {
    if (job->done) continue;
    HeldJob h;
    h.id = job->id;
    h.job_id = job->lease.job_id;
    h.epoch = job->lease.epoch;
    h.result_points = KindDef(job->lease.kind).result_points != nullptr;
    h.graceful_stop = job->stop_grace_ms >= 0;
    h.slots = job->slots;
    h.running = job->running;
    h.outcome = job->finished.outcome;
    h.fenced = job->fenced;
    h.stop_sent = job->stop_sent;
    h.next_heartbeat_ms = job->next_heartbeat_ms;
    h.lease_until_ms = job->lease_until_ms;
    h.metrics_unacked = job->relay->has_unacked() && !job->metrics_refused;
    if (h.metrics_unacked) h.metrics_seq = job->relay->front().seq;
    h.metrics_read_to_end = job->relay->read_to_end() || job->metrics_refused;
    h.result_points_queued = job->result_points_queued;
    h.checkpoint_step = job->checkpoint ? job->checkpoint->step : 0;
    h.uploaded_step = job->uploaded_step;
    h.transferring = job->transfer != nullptr;
    h.outputs_pending = job->outputs_pending;
    in.jobs.push_back(std::move(h));
  }
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i].started) continue;
    in.pending.push_back({static_cast<int64_t>(i), pending_[i].lease.job_id,
                          pending_[i].lease.epoch, pending_[i].slots});
  }
  return in;
}

Worker::Job* Worker::Find(int64_t id) {
  for (auto& job : jobs_) {
    if (job->id == id && !job->done) return job.get();
  }
  return nullptr;
}

void Worker::Execute(const Action& action) {
  using Kind = Action::Kind;
  if (action.kind == Kind::kLease) {
    if (client_.ready()) Lease(action.slots);
    return;
  }
  if (action.kind == Kind::kStart) {
    Pending& p = pending_.at(static_cast<size_t>(action.pending));
    if (!p.started) Start(p);
    p.started = true;
    return;
  }
  Job* job = Find(action.job);
  if (job == nullptr) return;
  switch (action.kind) {
    case Kind::kKill:
      KillNow(*job);
      job->done = true;
      return;
    case Kind::kLapse:
      spdlog::warn(
          "{}: no lease renewal succeeded for {} ms; the job is stopped so "
          "that it cannot run twice, and given back when the coordinator "
          "answers",
          job->tag, options_.lease_ms);
      job->lapsed = true;
      KillNow(*job);
      if (job->starting) job->transfer->cancel.Cancel();
      job->running = false;
      job->finished = FinishedJob{JobOutcome::kStopped, "", ""};
      return;
    case Kind::kForget:
      job->done = true;
      return;
    case Kind::kSignalStop:
      job->stop_sent = true;
      if (job->starting) {
        // Nothing runs yet: it stops before it starts.
        job->transfer->cancel.Cancel();
        job->running = false;
        job->finished =
            FinishedJob{JobOutcome::kStopped, "", "stopped before it started"};
        return;
      }
      job->handle->Signal(SIGTERM);
      job->stop_sent_ms = clock_->SteadyMs();
      return;
    case Kind::kQueueResult:
      QueueResult(*job);
      return;
    default:
      break;
  }
  // The rest are calls: not for a job fenced by an earlier answer, not
  // while backing off.
  if (job->fenced || !client_.ready()) return;
  switch (action.kind) {
    case Kind::kHeartbeat:
      Heartbeat(*job);
      break;
    case Kind::kSendMetrics:
      if (job->relay->has_unacked() && job->relay->front().seq == action.arg) {
        SendMetrics(*job);
      }
      break;
    case Kind::kUpload:
      if (!job->transfer && job->checkpoint &&
          job->checkpoint->step == action.arg) {
        Upload(*job);
      }
      break;
    case Kind::kUploadOutputs:
      if (!job->transfer && job->outputs_pending) UploadOutputs(*job);
      break;
    default:
      Report(*job, action.kind);
      break;
  }
}

void Worker::Lease(const std::vector<std::string>& slots) {
  next_lease_ms_ = clock_->SteadyMs() + options_.poll_ms;
  // No job is taken onto a full disk.
  const absl::StatusOr<int64_t> free = files_->FreeBytes(options_.work_dir);
  const bool low = free.ok() && *free < kLowDiskBytes;
  if (low != disk_low_) {
    disk_low_ = low;
    if (low) {
      spdlog::warn(
          "the work directory {} is full ({} free): leasing nothing until it "
          "has {} free",
          options_.work_dir, Megabytes(*free), Megabytes(kLowDiskBytes));
    } else {
      spdlog::info("the work directory {} has room again ({} free)",
                   options_.work_dir, Megabytes(*free));
    }
  }
  if (low) return;
  std::vector<std::vector<std::string>> units = FreeSlotsPerUnit(slots_, slots);
  std::vector<int> free_slots;
  for (const auto& unit : units) {
    free_slots.push_back(static_cast<int>(unit.size()));
  }
  LeaseAnswer resp;
  int64_t asked = 0;
  std::vector<int> placed_on;
  const absl::Status status = client_.LeaseJobs(
      static_cast<int>(slots.size()), free_slots, &resp, &asked, &placed_on);
  if (!status.ok()) {
    if (!Unreachable(status)) {
      spdlog::error("lease: {}", std::string(status.message()));
    }
    return;
  }
  idle_ = resp.leases.empty() && !resp.unfinished_jobs;
  for (const JobLease& lease : resp.leases) {
    // The coordinator placed the leases on the free slots the request
    // carried (a repeated request's may be fewer than now: slots only free
    // up meanwhile); the same placement picks the slots here.
    const absl::StatusOr<int> gpus = JobGpus(lease.params);
    const std::optional<std::vector<int>> placed =
        PlaceJob(placed_on, gpus.ok() ? *gpus : 1);
    std::optional<std::vector<std::string>> taken;
    if (placed) taken = TakeSlots(units, *placed);
    if (!taken) {
      // Cannot happen (the coordinator places as PlaceJob does); said
      // loudly, the lease expires on the coordinator.
      spdlog::error("{}: leased beyond the {} free slot(s); not started",
                    JobTag(lease.job_id, lease.epoch), slots.size());
      continue;
    }
    spdlog::info("{} leased: sweep {}, {} attempt {}, slot {}",
                 JobTag(lease.job_id, lease.epoch), lease.sweep,
                 std::string(JobKindName(lease.kind)), lease.attempt,
                 absl::StrJoin(*taken, "+"));
    pending_.push_back({lease, asked, std::move(*taken)});
  }
}

}  // namespace tailsweep
