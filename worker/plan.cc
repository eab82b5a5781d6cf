#include "worker/plan.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tailsweep {
namespace {

using Kind = Action::Kind;

Action JobAction(Kind kind, const HeldJob& job, int64_t arg = 0) {
  Action a{kind};
  a.job = job.id;
  a.arg = arg;
  return a;
}

// Whether the action is a call to the coordinator.
bool IsCall(Kind kind) {
  switch (kind) {
    case Kind::kLease:
    case Kind::kHeartbeat:
    case Kind::kSendMetrics:
    case Kind::kUpload:
    case Kind::kUploadOutputs:
    case Kind::kComplete:
    case Kind::kFail:
    case Kind::kRelease:
      return true;
    default:
      return false;
  }
}

// The actions for one held job, appended to `out`.
void PlanJob(const PlanInput& in, const HeldJob& job, bool re_leased,
             std::vector<Action>* out) {
  if (job.fenced && job.running && job.graceful_stop && !re_leased) {
    // A child with a grace period is asked to stop first (SIGTERM; the
    // worker kills its group once the grace is over) and forgotten once it
    // has exited.
    if (!job.stop_sent) out->push_back(JobAction(Kind::kSignalStop, job));
    return;
  }
  if (job.fenced || re_leased) {
    out->push_back(JobAction(job.running ? Kind::kKill : Kind::kForget, job));
    return;
  }
  const bool ready = in.coordinator_ready;
  const bool heartbeat_due = ready && in.now_ms >= job.next_heartbeat_ms;
  if (job.running) {
    if (in.now_ms >= job.lease_until_ms) {
      out->push_back(JobAction(Kind::kLapse, job));
      return;
    }
    if (in.shutting_down && !job.stop_sent) {
      out->push_back(JobAction(Kind::kSignalStop, job));
    }
    if (heartbeat_due) out->push_back(JobAction(Kind::kHeartbeat, job));
    if (!ready) return;
    if (job.metrics_unacked) {
      out->push_back(JobAction(Kind::kSendMetrics, job, job.metrics_seq));
    } else if (job.metrics_read_to_end && !job.transferring &&
               job.checkpoint_step > job.uploaded_step) {
      out->push_back(JobAction(Kind::kUpload, job, job.checkpoint_step));
    }
    return;
  }
  // The child has exited: deliver its metrics, then its outcome.
  if (heartbeat_due) out->push_back(JobAction(Kind::kHeartbeat, job));
  const bool metrics_done = !job.metrics_unacked && job.metrics_read_to_end;
  if (metrics_done && job.outcome == JobOutcome::kDone && job.result_points &&
      !job.result_points_queued) {
    out->push_back(JobAction(Kind::kQueueResult, job));
    return;
  }
  if (!ready) return;
  if (job.metrics_unacked) {
    out->push_back(JobAction(Kind::kSendMetrics, job, job.metrics_seq));
    return;
  }
  if (!metrics_done) return;     // the rest of the file is read next round
  if (job.transferring) return;  // the report waits for it
  if (job.outputs_pending) {
    out->push_back(JobAction(Kind::kUploadOutputs, job));
    return;
  }
  switch (job.outcome) {
    case JobOutcome::kDone:
      // Its final checkpoint too: the model a user takes away.
      out->push_back(job.checkpoint_step > job.uploaded_step
                         ? JobAction(Kind::kUpload, job, job.checkpoint_step)
                         : JobAction(Kind::kComplete, job));
      break;
    case JobOutcome::kFailed:
      out->push_back(JobAction(Kind::kFail, job));
      break;
    case JobOutcome::kStopped:
      out->push_back(job.checkpoint_step > job.uploaded_step
                         ? JobAction(Kind::kUpload, job, job.checkpoint_step)
                         : JobAction(Kind::kRelease, job));
      break;
  }
}

const char* Name(Kind kind) {
  switch (kind) {
    case Kind::kKill:
      return "kill";
    case Kind::kLapse:
      return "lapse";
    case Kind::kForget:
      return "forget";
    case Kind::kSignalStop:
      return "stop";
    case Kind::kStart:
      return "start";
    case Kind::kLease:
      return "lease";
    case Kind::kHeartbeat:
      return "heartbeat";
    case Kind::kSendMetrics:
      return "metrics";
    case Kind::kQueueResult:
      return "queue-result";
    case Kind::kUpload:
      return "upload";
    case Kind::kUploadOutputs:
      return "upload-outputs";
    case Kind::kComplete:
      return "complete";
    case Kind::kFail:
      return "fail";
    case Kind::kRelease:
      return "release";
  }
  return "?";
}

}  // namespace

std::vector<Action> Plan(const PlanInput& in) {
  std::vector<Action> out;
  std::set<std::string> leased_again;
  for (const PendingLease& p : in.pending) leased_again.insert(p.job_id);
  std::set<std::string> busy;
  for (const HeldJob& job : in.jobs) {
    const bool re_leased = leased_again.count(job.job_id) > 0;
    PlanJob(in, job, re_leased, &out);
    if (job.running && !job.fenced && !re_leased) {
      busy.insert(job.slots.begin(), job.slots.end());
    }
  }
  // Heartbeats before any other call (plan.h); local actions, and the
  // other calls among themselves, keep their order.
  const auto first_call = std::find_if(
      out.begin(), out.end(), [](const Action& a) { return IsCall(a.kind); });
  std::stable_partition(first_call, out.end(), [](const Action& a) {
    return a.kind == Kind::kHeartbeat;
  });
  for (const PendingLease& p : in.pending) {
    Action a{Kind::kStart};
    a.pending = p.index;
    out.push_back(a);
    busy.insert(p.slots.begin(), p.slots.end());
  }
  if (!in.shutting_down && !in.leasing_closed && in.coordinator_ready &&
      in.now_ms >= in.next_lease_ms) {
    Action a{Kind::kLease};
    for (const std::string& slot : in.slots) {
      if (busy.count(slot) == 0) a.slots.push_back(slot);
    }
    if (!a.slots.empty()) out.push_back(std::move(a));
  }
  return out;
}

std::string Action::ToString(const PlanInput& in) const {
  if (kind == Kind::kLease) {
    return absl::StrCat("lease ", absl::StrJoin(slots, ","));
  }
  std::string what = Name(kind);
  if (kind == Kind::kStart) {
    for (const PendingLease& p : in.pending) {
      if (p.index == pending) {
        absl::StrAppend(&what, " ", p.job_id, " epoch=", p.epoch, " ",
                        absl::StrJoin(p.slots, "+"));
      }
    }
    return what;
  }
  for (const HeldJob& j : in.jobs) {
    if (j.id == job) absl::StrAppend(&what, " ", j.job_id, " epoch=", j.epoch);
  }
  if (kind == Kind::kSendMetrics) absl::StrAppend(&what, " seq=", arg);
  if (kind == Kind::kUpload) absl::StrAppend(&what, " step=", arg);
  return what;
}

}  // namespace tailsweep
