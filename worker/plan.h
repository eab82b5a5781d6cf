#ifndef TAILSWEEP_WORKER_PLAN_H_
#define TAILSWEEP_WORKER_PLAN_H_

// The worker's plan: given its slots, the jobs it holds and the time, what
// to do next. Pure (no I/O, no clock); the worker carries the actions out
// in order, skipping those its earlier outcomes made moot (a job fenced by
// an answer, the coordinator backing off), and plans again until nothing
// is left to do this round. The rules:
//
// - A fenced job (its lease is gone: FAILED_PRECONDITION, PERMISSION_DENIED,
//   CANCELLED or NOT_FOUND) is killed at once (SIGKILL, no graceful
//   checkpoint) and forgotten; nothing more is sent for it, no report. One
//   whose child has a grace period (graceful_stop: command jobs,
//   stop_grace_s) gets SIGTERM instead, and is forgotten once its child has
//   exited (the worker kills the child's group when the grace is over). A
//   job cancelled after its child finished done is not fenced: its result
//   is still delivered (the coordinator keeps it; done wins).
// - A job leased again while an older local attempt of it is held: the old
//   attempt is killed and forgotten before the new one starts.
// - A checkpoint is uploaded only once every metric line logged before it
//   is acknowledged (the relay is idle); one transfer per job at a time,
//   and a job's report waits for its transfer in flight.
// - A finished job keeps heartbeating until its metrics, then its result
//   points (train jobs that are done), then its report are acknowledged.
// - An ended attempt's logs and artifacts are sent before its report
//   (whatever becomes of them: a failed upload is noted, not retried).
// - Done: its newest checkpoint, if newer than the coordinator's, is
//   uploaded (the model a user takes away), then CompleteJob; failed: FailJob;
//   stopped (after SIGTERM, any kind: core/schema/job_protocol.h says when):
//   its newest checkpoint, if newer than the coordinator's, is uploaded, then
//   the lease is given back (ReleaseJob, the attempt not counted).
// - A running job whose lease ran out on the worker's own clock (no renewal
//   succeeded within a lease period of the last one sent) is killed and
//   then counts as stopped: the coordinator may lease it elsewhere once the
//   lease and its grace are over, so it must not run on. (Its child stops
//   itself a margin earlier, checkpointing, through the lease watchdog.)
// - Every due heartbeat comes before any other call, of any job: a call
//   refused as unreachable (a coordinator that cannot write refuses
//   metrics) starts a backoff that skips the calls after it, and leases
//   must not starve behind another job's metrics.
// - While the coordinator is unreachable (backing off) only local actions
//   are planned. Shutting down: no leases, SIGTERM once to each running
//   job (which checkpoints and stops). Leasing closed (the allocation ends
//   soon): no leases, running jobs go on.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/schema/job_protocol.h"

namespace tailsweep {

// What the plan sees of one job the worker holds.
struct HeldJob {
  int64_t id = 0;  // the worker's own number for this attempt
  std::string job_id;
  int64_t epoch = 0;
  // Its kind adds points from a done result (job_kinds.h result_points).
  bool result_points = true;
  // Its child has a grace period between SIGTERM and SIGKILL.
  bool graceful_stop = false;
  // Its slots, e.g. {"cuda:0/1"}: one per device it asked for ("gpus").
  std::vector<std::string> slots;
  bool running = true;  // its child has not been seen exiting
  JobOutcome outcome = JobOutcome::kFailed;  // once exited
  bool fenced = false;
  bool stop_sent = false;  // SIGTERM sent (shutting down)
  int64_t next_heartbeat_ms = 0;
  // The lease as the worker knows it: until when it surely holds (steady).
  int64_t lease_until_ms = std::numeric_limits<int64_t>::max();
  // Metrics relay.
  bool metrics_unacked = false;  // a batch waits for its acknowledgement
  int64_t metrics_seq = 0;       // the oldest unacknowledged batch
  bool metrics_read_to_end = false;
  bool result_points_queued = false;
  // Checkpoints.
  int64_t checkpoint_step = 0;  // newest local checkpoint; 0: none
  int64_t uploaded_step = 0;    // newest the coordinator has
  // A checkpoint transfer is in flight (for a running job: its download
  // before it starts, or an upload).
  bool transferring = false;
  // Its ended attempt's logs and artifacts are not sent yet.
  bool outputs_pending = false;
};

// A lease granted and not started yet.
struct PendingLease {
  int64_t index = 0;  // in the worker's list of pending leases
  std::string job_id;
  int64_t epoch = 0;
  std::vector<std::string> slots;
};

struct PlanInput {
  int64_t now_ms = 0;
  std::vector<std::string> slots;  // every slot, e.g. "cpu/0", "cpu/1"
  std::vector<HeldJob> jobs;       // in the order they were leased
  std::vector<PendingLease> pending;
  bool coordinator_ready = true;  // not backing off
  bool shutting_down = false;
  // The allocation ends too soon for another job: no leases; running jobs
  // go on.
  bool leasing_closed = false;
  int64_t next_lease_ms = 0;  // when to ask for jobs again
};

struct Action {
  enum class Kind {
    kKill,           // SIGKILL the child, wait for it, forget the job
    kLapse,          // SIGKILL the child, wait; the job then counts as stopped
    kForget,         // drop the job (its child has exited)
    kSignalStop,     // SIGTERM the child
    kStart,          // start pending lease `pending`
    kLease,          // LeaseJobs for `slots`
    kHeartbeat,      // renew the lease
    kSendMetrics,    // ReportMetrics of the oldest batch, seq `arg`
    kQueueResult,    // add the result's points as the last batch
    kUpload,         // UploadCheckpoint of step `arg`
    kUploadOutputs,  // UploadJobFile of the ended attempt's logs, artifacts
    kComplete,       // CompleteJob
    kFail,           // FailJob
    kRelease,        // ReleaseJob (stopped: resume elsewhere)
  };
  Kind kind;
  int64_t job = 0;      // HeldJob::id
  int64_t pending = 0;  // PendingLease::index (kStart)
  int64_t arg = 0;
  std::vector<std::string> slots = {};  // kLease
  // E.g. "upload a1b2c3 epoch=2 step=20", for logs and tests.
  std::string ToString(const PlanInput& in) const;
};

std::vector<Action> Plan(const PlanInput& in);

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_PLAN_H_
