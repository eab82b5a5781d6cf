#include "process/child_process.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tailsweep {

absl::StatusOr<ChildProcess> ChildProcess::Start(
    const std::vector<std::string>& argv, const std::vector<std::string>& env,
    const std::string& stdout_path, const std::string& stderr_path,
    const ChildProcessOptions& options) {
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Said by the child when it cannot run: built here, before the fork (a
  // forked child of a threaded process only writes).
  const std::string cannot_run =
      absl::StrCat("tailsweep: cannot run '", argv.empty() ? "" : argv[0], "'");
  const std::string cannot_chdir = absl::StrCat(
      "tailsweep: cannot enter the working directory '", options.workdir, "'");
  // The stop signals are held across the fork: a child keeps its parent's
  // handlers until it execs, and one that ran the daemon's handler would
  // swallow a SIGTERM sent right after Start (a drain arriving as a job
  // starts: the job then ran to its end). The child takes the default
  // action for them first, then lets a pending one in.
  sigset_t stops, before;
  sigemptyset(&stops);
  for (int s : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&stops, s);
  pthread_sigmask(SIG_BLOCK, &stops, &before);
  const pid_t pid = fork();
  if (pid != 0) pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (pid < 0) return absl::InternalError("fork failed");
  // Both sides set the group, so that it exists before either goes on.
  if (pid > 0 && options.process_group) setpgid(pid, pid);
  if (pid == 0) {
    if (options.process_group) setpgid(0, 0);
    for (int s : {SIGTERM, SIGINT, SIGUSR1}) signal(s, SIG_DFL);
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    // The job dies with the daemon (even on kill -9), so a re-leased job
    // never has two writers.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    auto open_or_inherit = [](const std::string& path, int fd) {
      if (path.empty()) return fd;
      return open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    };
    const int out = open_or_inherit(stdout_path, 1);
    const int err = open_or_inherit(stderr_path, 2);
    const int in = open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || in < 0) _exit(127);
    dup2(in, 0);
    if (out != 1) dup2(out, 1);
    if (err != 2) dup2(err, 2);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    auto say = [](const std::string& what, int error) {
      const char* why = strerrordesc_np(error);
      for (const char* part : {what.c_str(), ": ", why ? why : "error", "\n"}) {
        if (write(2, part, strlen(part)) < 0) break;
      }
    };
    if (!options.workdir.empty() && chdir(options.workdir.c_str()) != 0) {
      say(cannot_chdir, errno);
      _exit(127);
    }
    if (options.search_path) {
      execvp(args[0], args.data());
    } else {
      execv(args[0], args.data());
    }
    say(cannot_run, errno);
    _exit(127);
  }
  return ChildProcess(pid, options.process_group);
}

std::optional<int> ChildProcess::Poll() {
  if (exit_code_) return exit_code_;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // Whatever the child left running in its group (a background process, a
  // launcher's workers) ends with it: it would be a second writer of the
  // job's files once the job runs again.
  if (group_) kill(-pid_, SIGKILL);
  return exit_code_;
}

void ChildProcess::Signal(int signal) {
  if (exit_code_) return;
  kill(group_ ? -pid_ : pid_, signal);
}

}  // namespace tailsweep
