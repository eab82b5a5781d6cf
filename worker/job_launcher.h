#ifndef TAILSWEEP_WORKER_JOB_LAUNCHER_H_
#define TAILSWEEP_WORKER_JOB_LAUNCHER_H_

// The runner role: starts one job's child process and hands back a handle
// to poll and signal it. ChildProcessLauncher is the real one: the command
// line of core/schema/job_protocol.h (ChildCommandFor) in a ChildProcess,
// stdout and stderr into the job directory. Tests use a fake that writes
// the protocol's files itself (tests/testing/fake_job_launcher.h).
// Not thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "core/schema/job_protocol.h"

namespace tailsweep {

// One started job.
class JobHandle {
 public:
  virtual ~JobHandle() = default;
  // The exit code once the child has exited (128 + S when killed by signal
  // S) and nothing it started is left; nullopt while it runs. Never blocks.
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

// Each job's processes are kept in an attempt group of their own
// (process/attempt_processes.h): a cgroup under `cgroup_root` when it is
// not "", else a marker in their environment. A job counts as running
// (Poll) until everything it started has ended: `end_grace_ms` after
// SIGTERM, SIGKILL.
class ChildProcessLauncher final : public JobLauncher {
 public:
  explicit ChildProcessLauncher(std::string cgroup_root = "",
                                int64_t end_grace_ms = 3000)
      : cgroup_root_(std::move(cgroup_root)), end_grace_ms_(end_grace_ms) {}
  absl::StatusOr<std::unique_ptr<JobHandle>> Start(
      const ChildJob& job) override;

 private:
  std::string cgroup_root_;
  int64_t end_grace_ms_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_JOB_LAUNCHER_H_
