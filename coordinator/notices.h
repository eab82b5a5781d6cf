#ifndef TAILSWEEP_COORDINATOR_NOTICES_H_
#define TAILSWEEP_COORDINATOR_NOTICES_H_

// What the coordinator tells people (a spec's `notify:`, --notify-url for
// every sweep): the events of its jobs and sweeps, turned into notices for
// the targets that asked for them and handed to the Notifier (which posts
// them off the caller's thread, retried, bounded). The events:
//   failed      a job failed for good (its attempts spent)
//   done        a job finished done
//   sweep_done  the last queued or running job of a sweep finished (once
//               until the sweep gets work again: a submit, a resume)
//   stalled     a running job logged no metric point for the sweep's
//               stall_after_s (once per attempt; Scan finds them)
// Preemptions (a job given back, a lease lost) never notify. Thread-safe.

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "coordinator/notifier.h"
#include "coordinator/store.h"
#include "core/schema/clock.h"

namespace tailsweep {

struct NoticesOptions {
  // Targets for every sweep (--notify-url), beside each spec's own.
  std::vector<NotifyTarget> everywhere;
  // The dashboard's address, for links to a sweep's report page
  // (http://host:port); empty: notices carry no link.
  std::string report_base;
  // --notify-url's sweeps wait this long without a point to be stalled.
  double stall_after_s = 1800;
};

class Notices {
 public:
  // `notifier` may be null: nothing is sent (and nothing is tracked).
  Notices(Store* store, Clock* clock, Notifier* notifier,
          NoticesOptions options);

  void JobDone(const std::string& job_id);
  // After FailJob: notifies when the job is failed for good.
  void JobFailed(const std::string& job_id, const std::string& error);
  // A sweep got work (submit, resume, added jobs): it may be done again.
  void SweepReopened(const std::string& sweep);
  // A job leased (its stall clock starts) or reporting points.
  void Progress(const std::string& job_id, int64_t epoch);
  // The job's attempt ended (it is no longer watched for stalls).
  void Ended(const std::string& job_id);
  // Notifies jobs that have stalled since the last scan.
  void Scan();

 private:
  struct Watch {
    int64_t epoch = 0;
    int64_t last_ms = 0;   // wall time of its lease or newest point
    int64_t check_ms = 0;  // not stalled before this (wall)
    bool told = false;
  };
  // Sends `n` to every target of `sweep` (its spec's and everywhere's)
  // that wants n.kind.
  void Tell(const std::string& sweep, const RunOutputs& outputs, Notice n);
  void MaybeSweepDone(const std::string& sweep, const RunOutputs& outputs);
  // Tells each sweep of the job that wants it that the job ended so.
  void JobEnded(const std::string& job_id, const std::string& kind,
                const std::string& reason);
  bool Enabled(const RunOutputs& outputs) const;

  Store* store_;
  Clock* clock_;
  Notifier* notifier_;
  const NoticesOptions options_;
  std::mutex mu_;
  std::set<std::string> done_told_;       // guarded by mu_
  std::map<std::string, Watch> running_;  // by job id; guarded by mu_
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_NOTICES_H_
