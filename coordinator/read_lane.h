#ifndef TAILSWEEP_COORDINATOR_READ_LANE_H_
#define TAILSWEEP_COORDINATOR_READ_LANE_H_

// Where people's bulk reads run (ListSweepMetrics, GetMetrics, ListJobs,
// GetResults): threads of their own (one by default), so that however many
// notebooks pull whole histories and dashboards rebuild reports, their
// reads take at most that many cores, and each piece of work waits (a
// while at most) for the workers' calls in flight (WorkerCall): leases and
// heartbeats come first whatever the machine's priorities. Optionally at
// a lower CPU priority too; nice reaches beyond the process (other
// processes' nice-0 work comes first as well), so the default lowers
// nothing. Measured with and without each:
// bench/coordinator_bench --readers 8 (docs/performance.md, "Leases under
// a read storm").

#include <chrono>
#include <condition_variable>
#include <cstdint>
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
  // so they serve nothing else. While a worker's call is in flight (a
  // WorkerCall), a lane thread starts nothing new for up to `max_yield`:
  // the workers' calls come first whatever the threads' priority, and a
  // read is never held up longer than that per piece of work.
  ReadLane(int threads, int nice,
           std::chrono::milliseconds max_yield = std::chrono::milliseconds(20));
  ~ReadLane();  // runs what is queued, then joins

  ReadLane(const ReadLane&) = delete;
  ReadLane& operator=(const ReadLane&) = delete;

  // Runs `work` on a lane thread, in the order called; returns once it has
  // run. The calling thread waits without using a core.
  void Run(absl::FunctionRef<void()> work);

  // For as long as it lives, a worker's call (a lease, a heartbeat, a
  // result) is in flight.
  class WorkerCall {
   public:
    explicit WorkerCall(ReadLane& lane);
    ~WorkerCall();
    WorkerCall(const WorkerCall&) = delete;
    WorkerCall& operator=(const WorkerCall&) = delete;

   private:
    ReadLane& lane_;
  };
  // How often a lane thread has waited for workers' calls, in all.
  int64_t yields() const;

 private:
  struct Task {
    absl::FunctionRef<void()> work;
    bool done = false;
  };
  void Serve(int nice);

  const std::chrono::milliseconds max_yield_;
  mutable std::mutex mu_;
  std::condition_variable queued_, finished_, workers_idle_;
  std::deque<Task*> queue_;   // guarded by mu_
  bool stopping_ = false;     // guarded by mu_
  int64_t worker_calls_ = 0;  // guarded by mu_: in flight now
  int64_t yields_ = 0;        // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_READ_LANE_H_
