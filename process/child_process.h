#ifndef TAILSWEEP_PROCESS_CHILD_PROCESS_H_
#define TAILSWEEP_PROCESS_CHILD_PROCESS_H_

// One job's child process: started with its own argv and extra environment,
// stdout and stderr to files, polled without blocking, stopped with a
// signal. A crash or OOM in the child kills the job, never the daemon.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "process/attempt_processes.h"

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
  // Everything the child starts is kept apart in this group (its marker in
  // the child's environment, its cgroup entered before exec), and once the
  // child has exited whatever is left of the group gets SIGTERM, up to
  // `end_grace_ms` to exit, then SIGKILL: the child counts as running
  // (Poll) until none is left. The cgroup is removed then.
  std::optional<AttemptGroup> attempt;
  int64_t end_grace_ms = 2000;
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

  // The exit code once the child has exited (128 + signal when killed) and,
  // with an attempt group, once nothing of the group is left; nullopt while
  // it runs. Never blocks.
  std::optional<int> Poll();
  // Sends `signal` to the child (its process group with process_group);
  // SIGKILL reaches every process of its attempt group too.
  void Signal(int signal);
  pid_t pid() const { return pid_; }

  // Reaps this process's exited children that no ChildProcess waits for:
  // orphans handed to it as a subreaper (BecomeSubreaper).
  static void ReapStrays();

 private:
  ChildProcess(pid_t pid, const ChildProcessOptions& options)
      : pid_(pid),
        group_(options.process_group),
        attempt_(options.attempt),
        end_grace_ms_(options.end_grace_ms) {}
  // Once the child has exited: ends what is left of its attempt group; true
  // when nothing is.
  bool EndGroup();

  pid_t pid_;
  bool group_ = false;
  std::optional<AttemptGroup> attempt_;
  int64_t end_grace_ms_ = 0;
  std::optional<int> exit_code_;
  bool ended_ = false;         // exited, and nothing of its group is left
  int64_t term_sent_ms_ = -1;  // steady ms of the group's SIGTERM
  int64_t kill_sent_ms_ = -1;  // and of its SIGKILL
};

}  // namespace tailsweep

#endif  // TAILSWEEP_PROCESS_CHILD_PROCESS_H_
