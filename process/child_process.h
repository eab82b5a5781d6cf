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

struct ChildProcessOptions {
  // Look argv[0] up in PATH (the child's, `env` included) when it has no
  // '/'. Default: argv[0] is a path.
  bool search_path = false;
  // The child's working directory; "": this process's.
  std::string workdir;
  // The child leads a process group of its own: Signal reaches the whole
  // group (a shell's or a launcher's children too), and what is left of
  // the group is killed (SIGKILL) once the child has exited.
  bool process_group = false;
};

class ChildProcess {
 public:
  // Starts argv[0] with `env` added to this process's environment. An empty
  // stdout or stderr path: the child inherits this process's. A program
  // that cannot be run (not found, not executable, no such workdir) exits
  // with status 127 after saying why on its stderr ("tailsweep: cannot
  // run 'NAME': No such file or directory").
  static absl::StatusOr<ChildProcess> Start(
      const std::vector<std::string>& argv, const std::vector<std::string>& env,
      const std::string& stdout_path, const std::string& stderr_path,
      const ChildProcessOptions& options = {});

  // The exit code once the child has exited (128 + signal when killed);
  // nullopt while it runs.
  std::optional<int> Poll();
  void Signal(int signal);
  pid_t pid() const { return pid_; }

 private:
  ChildProcess(pid_t pid, bool group) : pid_(pid), group_(group) {}
  pid_t pid_;
  bool group_ = false;
  std::optional<int> exit_code_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_PROCESS_CHILD_PROCESS_H_
