#ifndef TAILSWEEP_WORKER_JOB_LAUNCHER_H_
#define TAILSWEEP_WORKER_JOB_LAUNCHER_H_

// The runner role: starts one job's child process and hands back a handle
// to poll and signal it. ChildProcessLauncher is the real one: the command
// line of core/schema/job_protocol.h (ChildCommandFor) in a ChildProcess,
// stdout and stderr into the job directory. Tests use a fake that writes
// the protocol's files itself (tests/testing/fake_job_launcher.h).
// Not thread-safe.

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "core/schema/job_protocol.h"

namespace tailsweep {

// One started job.
class JobHandle {
 public:
  virtual ~JobHandle() = default;
  // The exit code once the child has exited (128 + S when killed by signal
  // S); nullopt while it runs. Never blocks.
  virtual std::optional<int> Poll() = 0;
  // Sends `signal` (SIGTERM: checkpoint and stop; SIGKILL: die now); does
  // nothing once the child has exited.
  virtual void Signal(int signal) = 0;
};

class JobLauncher {
 public:
  virtual ~JobLauncher() = default;
  // Starts `job` in job.dir (which exists). InvalidArgument when the job's
  // command line cannot be made (an unknown key, a bad value: the job
  // would fail anywhere), Internal when the process cannot be started.
  virtual absl::StatusOr<std::unique_ptr<JobHandle>> Start(
      const ChildJob& job) = 0;
};

class ChildProcessLauncher final : public JobLauncher {
 public:
  absl::StatusOr<std::unique_ptr<JobHandle>> Start(
      const ChildJob& job) override;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_JOB_LAUNCHER_H_
