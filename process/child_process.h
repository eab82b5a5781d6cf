#ifndef TAILSWEEP_PROCESS_CHILD_PROCESS_H_
#define TAILSWEEP_PROCESS_CHILD_PROCESS_H_

// One job's child process: started with its own argv and extra environment,
// stdout and stderr to files, polled without blocking, stopped with a
// signal. A crash or OOM in the child kills the job, never the daemon.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tailsweep {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with `env` added to this process's environment.
  // An empty stdout or stderr path: the child inherits this process's.
  static absl::StatusOr<ChildProcess> Start(
      const std::vector<std::string>& argv, const std::vector<std::string>& env,
      const std::string& stdout_path, const std::string& stderr_path);

  // The exit code once the child has exited (128 + signal when killed);
  // nullopt while it runs.
  std::optional<int> Poll();
  void Signal(int signal);
  pid_t pid() const { return pid_; }

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  std::optional<int> exit_code_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_PROCESS_CHILD_PROCESS_H_
