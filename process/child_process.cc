#include "process/child_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace tailsweep {
namespace {

// The children a ChildProcess waits for (ReapStrays leaves them alone).
// Held across fork and registration, so no child is reaped unregistered.
std::mutex started_mu;
absl::flat_hash_set<pid_t>& Started() {
  static auto* pids = new absl::flat_hash_set<pid_t>();
  return *pids;
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// How long a group's processes get to go after SIGKILL before the child
// is said to have ended anyway (one stuck in the kernel).
constexpr int64_t kKillWaitMs = 5000;

}  // namespace

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
  std::vector<std::string> child_env = env;
  int cgroup_fd = -1;
  if (options.attempt) {
    child_env.push_back(
        absl::StrCat(kAttemptEnv, "=", options.attempt->marker));
    if (!options.attempt->cgroup.empty()) {
      const std::string procs = options.attempt->cgroup + "/cgroup.procs";
      cgroup_fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
      if (cgroup_fd < 0) {
        return absl::InternalError(
            absl::StrCat("cannot open ", procs, ": ", std::strerror(errno)));
      }
    }
  }
  const std::string cannot_enter = absl::StrCat(
      "tailsweep: cannot enter the cgroup ",
      options.attempt ? options.attempt->cgroup : "", " (going on without)");
  sigset_t stops, before;
  sigemptyset(&stops);
  for (int s : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&stops, s);
  std::unique_lock<std::mutex> started(started_mu);
  pthread_sigmask(SIG_BLOCK, &stops, &before);
  const pid_t pid = fork();
  if (pid != 0) {
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (pid > 0) Started().insert(pid);
    started.unlock();
    if (cgroup_fd >= 0) close(cgroup_fd);
  }
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
    if (cgroup_fd >= 0 && !EnterCgroup(cgroup_fd)) {
      if (write(2, cannot_enter.data(), cannot_enter.size()) < 0 ||
          write(2, "\n", 1) < 0) {
        _exit(127);
      }
    }
    for (const std::string& e : child_env) {
      putenv(const_cast<char*>(e.c_str()));
    }
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
  return ChildProcess(pid, options);
}

std::optional<int> ChildProcess::Poll() {
  if (ended_) return exit_code_;
  if (!exit_code_) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
    {
      std::lock_guard<std::mutex> lock(started_mu);
      Started().erase(pid_);
    }
    exit_code_ =
        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  if (!EndGroup()) return std::nullopt;
  ended_ = true;
  return exit_code_;
}

bool ChildProcess::EndGroup() {
  if (!attempt_) {
    // Whatever the child left running in its group (a background process,
    // a launcher's workers) ends with it: it would be a second writer of
    // the job's files once the job runs again.
    if (group_) kill(-pid_, SIGKILL);
    return true;
  }
  // Those left in the child's process group belong to the attempt too,
  // even with their environment cleared.
  const bool group_left = group_ && kill(-pid_, 0) == 0;
  const int left = static_cast<int>(GroupProcesses(*attempt_).size());
  ReapStrays();
  const int64_t now = SteadyMs();
  if (left == 0 && !group_left) {
    if (!RemoveGroup(*attempt_) && kill_sent_ms_ < 0) {
      SignalGroup(*attempt_, SIGKILL);  // e.g. zombies not yet gone
      kill_sent_ms_ = now;
      return false;
    }
    return true;
  }
  if (term_sent_ms_ < 0) {
    if (group_) kill(-pid_, SIGTERM);
    SignalGroup(*attempt_, SIGTERM);
    term_sent_ms_ = now;
    return false;
  }
  if (kill_sent_ms_ < 0 && now - term_sent_ms_ >= end_grace_ms_) {
    if (group_) kill(-pid_, SIGKILL);
    SignalGroup(*attempt_, SIGKILL);
    kill_sent_ms_ = now;
    return false;
  }
  // Something stuck in the kernel: the child has ended all the same.
  return kill_sent_ms_ >= 0 && now - kill_sent_ms_ >= kKillWaitMs;
}

void ChildProcess::Signal(int signal) {
  if (ended_) return;
  if (!exit_code_) kill(group_ ? -pid_ : pid_, signal);
  if (signal == SIGKILL && attempt_) {
    if (group_) kill(-pid_, SIGKILL);
    SignalGroup(*attempt_, SIGKILL);
    if (kill_sent_ms_ < 0) kill_sent_ms_ = SteadyMs();
  }
}

void ChildProcess::ReapStrays() {
  const pid_t self = getpid();
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return;
  std::vector<pid_t> zombies;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE* f = std::fopen(path, "r");
    if (f == nullptr) continue;
    char line[512] = {0};
    const size_t n = std::fread(line, 1, sizeof line - 1, f);
    std::fclose(f);
    // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses.
    const char* paren = std::strrchr(line, ')');
    if (n == 0 || paren == nullptr) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(paren + 1, " %c %ld", &state, &ppid) == 2 && state == 'Z' &&
        ppid == self) {
      zombies.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(dir);
  std::lock_guard<std::mutex> lock(started_mu);
  for (pid_t pid : zombies) {
    if (!Started().contains(pid)) waitpid(pid, nullptr, WNOHANG);
  }
}

}  // namespace tailsweep
