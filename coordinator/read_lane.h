#ifndef TAILSWEEP_COORDINATOR_READ_LANE_H_
#define TAILSWEEP_COORDINATOR_READ_LANE_H_

// Where people's bulk reads run (ListSweepMetrics, GetMetrics, ListJobs,
// GetResults): threads of their own (one by default), so that however many
// notebooks pull whole histories and dashboards rebuild reports, their
// reads take at most that many cores, and each piece of work waits (a
// while at most) for the workers' calls in flight (WorkerCall): leases and
// heartbeats come first whatever the machine's priorities. Two kinds of
// read share the lane and take turns while both wait (Kind): what a screen
// shows (a report's curves, a page of jobs, a results table) is not queued
// behind every notebook's raw export, and an export is not starved by a
// dashboard either. Optionally at a lower CPU priority too; nice reaches
// beyond the process (other processes' nice-0 work comes first as well),
// so the default lowers nothing. Measured with and without each:
// bench/coordinator_bench --readers 8 (docs/performance.md, "Leases under
// a read storm" and "The dashboard in the same storm").

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

  enum class Kind {
    kView,    // what a screen shows: bounded work, many small calls
    kExport,  // a page of raw points: a whole history, a series paged through
  };

  // Runs `work` on a lane thread; returns once it has run. The calling
  // thread waits without using a core. Each kind runs in the order called;
  // while both kinds wait, a lane thread takes the kind it did not take
  // last, so a view waits for at most one export per lane thread however
  // many are queued, and the other way round.
  void Run(Kind kind, absl::FunctionRef<void()> work);

  // Inside a long piece of work (an upload taken chunk by chunk), between
  // its pieces: waits while a worker's call is in flight, for up to
  // max_yield, as a lane thread does before it starts new work (with no
  // lane threads, not at all).
  void YieldToWorkers();

  // Calls waiting for a lane thread now (of both kinds).
  int64_t queued() const;

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
  // The rest hold mu_.
  bool Idle() const { return views_.empty() && exports_.empty(); }
  std::deque<Task*>& QueueOf(Kind kind) {
    return kind == Kind::kView ? views_ : exports_;
  }
  Task* Next();  // !Idle(): the next to run, taken off its queue

  const std::chrono::milliseconds max_yield_;
  mutable std::mutex mu_;
  std::condition_variable queued_, finished_, workers_idle_;
  std::deque<Task*> views_;    // guarded by mu_
  std::deque<Task*> exports_;  // guarded by mu_
  Kind last_ = Kind::kView;    // guarded by mu_: the kind taken last
  bool stopping_ = false;      // guarded by mu_
  int64_t worker_calls_ = 0;   // guarded by mu_: in flight now
  int64_t yields_ = 0;         // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_READ_LANE_H_
