#ifndef TAILSWEEP_WORKER_TASK_RUNNER_H_
#define TAILSWEEP_WORKER_TASK_RUNNER_H_

// Where the worker runs work that may take long and must not hold up its
// loop (checkpoint transfers: one slot's upload must not delay another
// slot's heartbeats). Injected, so tests can run tasks inline or hold them
// until a moment of their choosing (tests/testing/fake_task_runner.h).

#include <atomic>
#include <functional>
#include <memory>
#include <thread>

namespace tailsweep {

// One task started by a TaskRunner. Destroying it waits for the task to
// end (a task must not outlive what it refers to): cancel its work first.
class BackgroundTask {
 public:
  virtual ~BackgroundTask() = default;
  // The task's function has returned; what it wrote may be read.
  virtual bool done() const = 0;
};

class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  // Runs `fn` now or later, on this thread or another.
  virtual std::unique_ptr<BackgroundTask> Start(std::function<void()> fn) = 0;
};

// One thread per task.
class ThreadTaskRunner final : public TaskRunner {
 public:
  std::unique_ptr<BackgroundTask> Start(std::function<void()> fn) override;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_TASK_RUNNER_H_
