#ifndef TAILSWEEP_PROCESS_ATTEMPT_PROCESSES_H_
#define TAILSWEEP_PROCESS_ATTEMPT_PROCESSES_H_

// Everything one child process starts, found again when it ends: so that
// nothing a job started outlives the job (a process that left the job's
// process group with setsid, a double-forked daemon, one that ignores
// SIGTERM). Two ways to find them, Linux only:
//
// - A cgroup v2 of the attempt's own, under a directory delegated to this
//   process (systemd's Delegate=yes gives a service its cgroup; root may use
//   any): the child enters it before it execs, so every descendant is in
//   it, whatever it does; the end kills the cgroup whole (cgroup.kill).
// - Otherwise a marker in the environment (kAttemptEnv=ID), which children
//   inherit: the end finds the processes that carry it (/proc/PID/environ,
//   readable for this user's processes). A process that clears its
//   environment escapes this; with this process a child subreaper
//   (BecomeSubreaper), orphans at least come back to it, not to init, and
//   are reaped (ChildProcess::ReapStrays).
//
// ChildProcess (child_process.h) ends a child's group once the child has
// exited: SIGTERM to what is left, up to a grace for it to exit, then
// SIGKILL; the child counts as running until then.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tailsweep {

inline constexpr char kAttemptEnv[] = "TAILSWEEP_ATTEMPT";

// Makes this process the reaper of its orphaned descendants
// (PR_SET_CHILD_SUBREAPER). Internal when the kernel refuses.
absl::Status BecomeSubreaper();

// Where an attempt's processes are kept apart.
struct AttemptGroup {
  std::string marker;  // kAttemptEnv's value: unique per attempt
  std::string cgroup;  // its cgroup directory; "": the marker only
};

// The cgroup v2 directory under which attempts may get cgroups of their
// own. `choice`: "off" (none: ""), "auto" (this process's own cgroup when
// this process may make and use cgroups under it and the kernel has
// cgroup.kill; "" otherwise), or a directory (which must be such a one:
// FailedPrecondition saying what is missing). `why` (may be null) gets, for
// "auto", why none was taken.
absl::StatusOr<std::string> AttemptCgroupRoot(const std::string& choice,
                                              std::string* why = nullptr);

// A new group for one attempt: a unique marker, and a cgroup made under
// `cgroup_root` when that is not "". Internal when the cgroup cannot be
// made.
absl::StatusOr<AttemptGroup> NewAttemptGroup(const std::string& cgroup_root);

// In a forked child before exec (async-signal-safe): moves the calling
// process into the cgroup whose "cgroup.procs" the parent opened as `fd`.
// False when it could not.
bool EnterCgroup(int fd);

// The processes of the group alive now (its cgroup's, or those carrying its
// marker; not zombies), never this process.
std::vector<pid_t> GroupProcesses(const AttemptGroup& group);

// Sends `signal` to every process of the group; SIGKILL to one with a
// cgroup kills the cgroup whole (cgroup.kill). Returns how many were found.
int SignalGroup(const AttemptGroup& group, int signal);

// Removes the group's cgroup once it is empty (nothing without one). False
// while processes are left in it.
bool RemoveGroup(const AttemptGroup& group);

// What attempts of a process that is gone left (a worker killed with -9):
// the processes carrying their markers, SIGKILLed, and, under
// `cgroup_root` when it is not "", their cgroups, killed whole and removed.
// How many processes and cgroups there were.
int EndStaleAttempts(const std::string& cgroup_root);

}  // namespace tailsweep

#endif  // TAILSWEEP_PROCESS_ATTEMPT_PROCESSES_H_
