#ifndef TAILSWEEP_COORDINATOR_READ_LANE_H_
#define TAILSWEEP_COORDINATOR_READ_LANE_H_

// Where people's bulk reads run (ListSweepMetrics, GetMetrics, ListJobs,
// GetResults): threads of their own (one by default), so that however many
// notebooks pull whole histories and dashboards rebuild reports, their
// reads take at most that many cores and the workers' calls (leases,
// heartbeats, metrics) keep the rest. Optionally at a lower CPU priority;
// nice is machine-wide (other processes' nice-0 work comes first too), so
// the default lowers nothing. Measured with and without it:
// bench/coordinator_bench --readers 8 --read-lane-threads N
// (docs/performance.md, "Leases under a read storm").

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace tailsweep {

// Runs the calling thread `nice` (0..19; 0 changes nothing) above the
// process's nice value, for good (an unprivileged thread cannot be raised
// back); says so in the log when it cannot.
void LowerThisThread(int nice);

class ReadLane {
 public:
  // `threads` each `nice` (0..19) above the process's own nice value;
  // with 0 threads, work runs on the calling thread (no lane). Lowering is all
  // an unprivileged process may do: the lane's threads are never raised back,
  // so they serve nothing else.
  ReadLane(int threads, int nice);
  ~ReadLane();  // runs what is queued, then joins

  ReadLane(const ReadLane&) = delete;
  ReadLane& operator=(const ReadLane&) = delete;

  // Runs `work` on a lane thread, in the order called; returns once it has
  // run. The calling thread waits without using a core.
  void Run(absl::FunctionRef<void()> work);

 private:
  struct Task {
    absl::FunctionRef<void()> work;
    bool done = false;
  };
  void Serve(int nice);

  std::mutex mu_;
  std::condition_variable queued_, finished_;
  std::deque<Task*> queue_;  // guarded by mu_
  bool stopping_ = false;    // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_READ_LANE_H_
